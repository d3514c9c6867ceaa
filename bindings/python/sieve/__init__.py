"""sieve: Python bindings of the Sieve collective-communication library (ctypes over
libsieve.so), DDP communication hooks, and the trainer-side pieces of PacTrain, SDP
and D2FT. See docs/python.md in the repository."""
from ._lib import path as library_path
from .errors import SieveError
from .comm import (Comm, Mask, Layout, version, get_unique_id, unique_id_to_string,
                   unique_id_from_string, pack_bits, SUM, PROD, MAX, MIN, AVG,
                   MASK_STRICT, MASK_UNION)
from .membership import join_grow
from .sharded import reduce_scatter_quantized, all_gather_quantized

__all__ = ["Comm", "Mask", "Layout", "SieveError", "version", "get_unique_id",
           "unique_id_to_string", "unique_id_from_string", "pack_bits", "library_path",
           "SUM", "PROD", "MAX", "MIN", "AVG", "MASK_STRICT", "MASK_UNION", "join_grow",
           "reduce_scatter_quantized", "all_gather_quantized"]
