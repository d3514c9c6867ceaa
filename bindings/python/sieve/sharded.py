"""Sharded training's compressed collectives (FSDP/ZeRO; docs/python.md): the quantized
reduce-scatter of gradients (sieveReduceScatterQuantized) and the block-scaled int8/int4
all-gather of parameters (sieveAllGatherQuantized), over NumPy arrays or CPU tensors,
zero-copy, as Comm's dense reduce_scatter and all_gather take them."""
import ctypes

from . import _lib
from ._args import c_int, c_size, c_uint64
from .comm import _op


def reduce_scatter_quantized(comm, send, recv, levels=7, op="avg", seed=1, step=0,
                             block_size=0, mask=None, error_feedback=False):
    """recv on rank r (len(send) / size elements) = chunk r of
    comm.all_reduce_quantized(send, levels=levels, ...) of the same inputs, bit for bit:
    codes at L levels (1..127; 1 is ternary), exact integer sums on the ring's reduce-scatter
    half. float32/float16/bfloat16, op "sum" or "avg"; every rank passes the same levels,
    seed, step and block_size. mask: a Mask registered for the whole send (len(send)
    elements). Returns recv."""
    where = "reduce_scatter_quantized"
    op, levels = _op(op, where), c_int(levels, "levels", where)
    seed, step = c_uint64(seed, "seed", where), c_uint64(step, "step", where)
    block_size = c_size(block_size, "block_size", where)
    sp, rp, n, t, recv = comm._pair(send, recv, where, send_factor=comm.size)
    p = _lib.TernaryParams(seed, step, block_size, mask._handle() if mask is not None else None,
                           1 if error_feedback else 0)
    comm._check(_lib.fn("sieveReduceScatterQuantized")(sp, rp, n, t, op, levels, ctypes.byref(p),
                                                       comm._handle(), None),
                "sieveReduceScatterQuantized")
    return recv


def all_gather_quantized(comm, send, recv, bits=8):
    """recv (size * len(send) elements) = every rank's send, in rank order, each shard sent
    block-scaled (blocks of 256: s = max|x| / (2^(bits-1) - 1), q = round-half-even(x / s)
    clamped, decoded q * s) at bits 8 or 4; every rank (the owner too) holds the same decoded
    values. float32/float16/bfloat16. Returns recv."""
    bits = c_int(bits, "bits", "all_gather_quantized")
    sp, rp, n, t, recv = comm._pair(send, recv, "all_gather_quantized", recv_factor=comm.size)
    comm._check(_lib.fn("sieveAllGatherQuantized")(sp, rp, n, t, bits, comm._handle(), None),
                "sieveAllGatherQuantized")
    return recv
