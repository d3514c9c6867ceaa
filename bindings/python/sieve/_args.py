"""Range checks for every integer handed to libsieve. ctypes converts a Python int to a C
int, size_t or uint64_t by dropping the high bits, silently (root=2**32 would become root 0,
op=2**40 would become sum), so each argument is checked here first, by name."""
import ctypes
import operator

from .errors import SieveRangeError, SieveTypeError

_SIZE_BITS = 8 * ctypes.sizeof(ctypes.c_size_t)
_RANGES = {
    "int": (-2 ** 31, 2 ** 31 - 1),
    "size_t": (0, 2 ** _SIZE_BITS - 1),
    "uint64_t": (0, 2 ** 64 - 1),
}


def _checked(value, name, ctype, where):
    try:
        v = operator.index(value)  # ints, NumPy integers, bools; never floats (no truncation)
    except TypeError:
        raise SieveTypeError("%s: %s must be an integer, got %s %r"
                             % (where, name, type(value).__name__, value)) from None
    lo, hi = _RANGES[ctype]
    if not lo <= v <= hi:
        raise SieveRangeError("%s: %s=%d is outside the range of the C %s it is passed as "
                              "[%d, %d]" % (where, name, v, ctype, lo, hi))
    return v


def c_int(value, name, where):
    """value as a C int, or SieveRangeError / SieveTypeError naming `name` and `where`."""
    return _checked(value, name, "int", where)


def c_size(value, name, where):
    """value as a C size_t (no negatives)."""
    return _checked(value, name, "size_t", where)


def c_uint64(value, name, where):
    """value as a C uint64_t (no negatives)."""
    return _checked(value, name, "uint64_t", where)
