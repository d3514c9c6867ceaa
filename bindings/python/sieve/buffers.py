"""Turns torch tensors and NumPy arrays into (pointer, element count, sieveDataType_t)
without copying: only C-contiguous host memory is accepted, anything else is an error."""
import sys

import numpy as np

from .errors import SieveError, INVALID_ARGUMENT

INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16 = range(10)

_NUMPY = {np.dtype(np.int8): INT8, np.dtype(np.uint8): UINT8, np.dtype(np.int32): INT32,
          np.dtype(np.uint32): UINT32, np.dtype(np.int64): INT64, np.dtype(np.uint64): UINT64,
          np.dtype(np.float16): FLOAT16, np.dtype(np.float32): FLOAT32,
          np.dtype(np.float64): FLOAT64}


def _torch():
    """torch when the program has imported it, else None. Never imports it: a tensor can only
    exist once torch is imported, and importing it costs NumPy-only users seconds."""
    return sys.modules.get("torch")


def _torch_dtype(torch, dtype):
    table = {torch.int8: INT8, torch.uint8: UINT8, torch.int32: INT32, torch.int64: INT64,
             torch.float16: FLOAT16, torch.float32: FLOAT32, torch.float64: FLOAT64,
             torch.bfloat16: BFLOAT16}
    return table.get(dtype)


def _bad(what, why):
    raise SieveError(INVALID_ARGUMENT, "%s: %s" % (what, why))


def view(buf, what="buffer"):
    """(data pointer, number of elements, sieve datatype) of a tensor or ndarray."""
    torch = _torch()
    if torch is not None and isinstance(buf, torch.Tensor):
        if buf.device.type != "cpu":
            _bad(what, "a %s tensor; the Python bindings take CPU tensors" % buf.device.type)
        dtype = _torch_dtype(torch, buf.dtype)
        if dtype is None:
            _bad(what, "dtype %s has no Sieve datatype" % buf.dtype)
        if not buf.is_contiguous():
            _bad(what, "not contiguous (call .contiguous() first; Sieve never copies silently)")
        return buf.data_ptr(), buf.numel(), dtype
    if isinstance(buf, np.ndarray):
        if buf.dtype not in _NUMPY:
            _bad(what, "dtype %s has no Sieve datatype" % buf.dtype)
        if not buf.flags["C_CONTIGUOUS"]:
            _bad(what, "not C-contiguous (use np.ascontiguousarray first)")
        return buf.ctypes.data, buf.size, _NUMPY[buf.dtype]
    _bad(what, "expected a torch.Tensor or numpy.ndarray, got %s" % type(buf).__name__)


def writable(buf, what):
    if isinstance(buf, np.ndarray) and not buf.flags["WRITEABLE"]:
        _bad(what, "read-only array")
