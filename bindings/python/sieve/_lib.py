"""Finds and loads libsieve.so and declares the C API's prototypes (ctypes).

ctypes rather than a compiled extension: the package needs no build step, works
with any Python 3 that has ctypes, and passes tensors and arrays by their data
pointers, so nothing is copied on the way to the library.

Where the library is looked for, first hit wins:
  1. $SIEVE_LIBRARY (a path to libsieve.so*),
  2. the build tree beside this source tree: <repo>/build/src/libsieve.so,
  3. the installed tree relative to an installed package: the path cmake --install wrote
     into sieve/_installed.py, else <prefix>/lib/libsieve.so,
  4. the dynamic loader's search path (LD_LIBRARY_PATH, ldconfig): libsieve.so.0.
"""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


COUNTER_NAMES = ("bytes_sent", "bytes_received", "collectives", "masked_collectives",
                 "dense_fallbacks", "mask_mismatches", "subnet_collectives")


class Counters(ctypes.Structure):
    # sieveCounters_t grows at its end; the spare room keeps a newer library from writing
    # past this struct (fields an older library lacks read 0).
    _fields_ = [(name, ctypes.c_uint64) for name in COUNTER_NAMES] + [
        ("_spare", ctypes.c_uint64 * 16)]


class TernaryParams(ctypes.Structure):
    _fields_ = [("seed", ctypes.c_uint64), ("step", ctypes.c_uint64),
                ("block_size", ctypes.c_size_t), ("mask", ctypes.c_void_p),
                ("error_feedback", ctypes.c_int)]


class Config(ctypes.Structure):
    """sieveConfig_t (versioned by size/magic/version; see Config.non_blocking)."""
    _fields_ = [("size", ctypes.c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("blocking", ctypes.c_int), ("commName", ctypes.c_char_p)]

    @classmethod
    def non_blocking(cls, version, name=None):
        return cls(ctypes.sizeof(cls), 0x53435647, int(version), 0,
                   name.encode() if name else None)


class Segment(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_size_t), ("length", ctypes.c_size_t),
                ("holders", ctypes.POINTER(ctypes.c_int)), ("nholders", ctypes.c_int)]


def _candidates():
    env = os.environ.get("SIEVE_LIBRARY")
    if env:
        return [env]  # explicit: no silent fallback to another copy
    repo = os.path.abspath(os.path.join(_HERE, "..", "..", ".."))
    prefix = os.path.abspath(os.path.join(_HERE, "..", "..", "..", ".."))
    try:
        from ._installed import LIBRARY_RELATIVE
        installed = [os.path.normpath(os.path.join(_HERE, LIBRARY_RELATIVE))]
    except ImportError:  # a source tree or a pip install
        installed = []
    return [os.path.join(repo, "build", "src", "libsieve.so")] + installed + [
            os.path.join(prefix, "lib", "libsieve.so"),
            "libsieve.so.0"]


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("sieve: cannot load libsieve.so; set SIEVE_LIBRARY to its path. Tried: "
                      + "; ".join(tried))


lib, path = _load()

_P = ctypes.c_void_p
_S = ctypes.c_size_t
_I = ctypes.c_int
_R = ctypes.c_int  # sieveResult_t
_PROTOS = {
    "sieveGetVersion": [ctypes.POINTER(_I)],
    "sieveGetErrorString": [_I],
    "sieveGetLastError": [_P],
    "sieveCommGetAsyncError": [_P, ctypes.POINTER(_I)],
    "sieveGetUniqueId": [ctypes.POINTER(UniqueId)],
    "sieveCommInitRank": [ctypes.POINTER(_P), _I, UniqueId, _I],
    "sieveCommInitFromEnv": [ctypes.POINTER(_P)],
    "sieveCommInitRankConfig": [ctypes.POINTER(_P), _I, UniqueId, _I, ctypes.POINTER(Config)],
    "sieveCommWaitAsyncError": [_P, _I, ctypes.POINTER(_I)],
    "sieveUniqueIdToString": [ctypes.POINTER(UniqueId), ctypes.c_char_p, _S],
    "sieveUniqueIdFromString": [ctypes.c_char_p, ctypes.POINTER(UniqueId)],
    "sieveCommSplit": [_P, _I, _I, ctypes.POINTER(_P)],
    "sieveCommGetCounters": [_P, ctypes.POINTER(Counters)],
    "sieveCommDestroy": [_P],
    "sieveCommAbort": [_P],
    "sieveCommCount": [_P, ctypes.POINTER(_I)],
    "sieveCommUserRank": [_P, ctypes.POINTER(_I)],
    "sieveAllReduce": [_P, _P, _S, _I, _I, _P, _P],
    "sieveBroadcast": [_P, _P, _S, _I, _I, _P, _P],
    "sieveReduce": [_P, _P, _S, _I, _I, _I, _P, _P],
    "sieveAllGather": [_P, _P, _S, _I, _P, _P],
    "sieveReduceScatter": [_P, _P, _S, _I, _I, _P, _P],
    "sieveSend": [_P, _S, _I, _I, _P, _P],
    "sieveRecv": [_P, _S, _I, _I, _P, _P],
    "sieveGroupStart": [],
    "sieveGroupEnd": [],
    "sieveMaskRegister": [_P, _P, _I, _S, _I, ctypes.POINTER(_P)],
    "sieveMaskDeregister": [_P],
    "sieveMaskNnz": [_P, ctypes.POINTER(_S)],
    "sieveAllReduceMasked": [_P, _P, _S, _I, _I, _P, _P, _P],
    "sieveAllReduceTernary": [_P, _P, _S, _I, _I, ctypes.POINTER(TernaryParams), _P, _P],
    "sieveAllReduceQuantized": [_P, _P, _S, _I, _I, _I, ctypes.POINTER(TernaryParams), _P, _P],
    "sieveCommGetAutoLevels": [_P, ctypes.POINTER(_I)],
    "sieveReduceScatterQuantized": [_P, _P, _S, _I, _I, _I, ctypes.POINTER(TernaryParams), _P,
                                    _P],
    "sieveAllGatherQuantized": [_P, _P, _S, _I, _I, _P, _P],
    "sieveLayoutRegister": [_P, _S, ctypes.POINTER(Segment), _I, ctypes.POINTER(_P)],
    "sieveLayoutFromMaskMatrix": [_P, _P, _S, _S, _S, ctypes.POINTER(_P)],
    "sieveLayoutEqualSubnets": [_P, _S, _I, ctypes.POINTER(_P)],
    "sieveLayoutNumSegments": [_P, ctypes.POINTER(_I)],
    "sieveLayoutDeregister": [_P],
    "sieveAllReduceSubnet": [_P, _P, _S, _I, _P, _P, _P],
    "sieveAllReduceD2ft": [_P, _P, _S, _I, _P, _P, _P, _P, _P],
    "sieveAllReduceSubnetQuantized": [_P, _P, _S, _I, _P, _I, ctypes.POINTER(TernaryParams), _P,
                                      _P],
    "sieveAllReduceD2ftQuantized": [_P, _P, _S, _I, _P, _P, _P, _I,
                                    ctypes.POINTER(TernaryParams), _P, _P],
    # Elastic membership (membership.py).
    "sieveCommRevoke": [_P, _I],
    "sieveCommShrink": [_P, ctypes.POINTER(_I), _I, ctypes.POINTER(_P), _P, _I],
    "sieveCommGetFailedRanks": [_P, ctypes.POINTER(_I), _I, ctypes.POINTER(_I)],
    "sieveCommAgreeFailedRanks": [_P, ctypes.POINTER(_I), _I, ctypes.POINTER(_I)],
    "sieveCommGetUniqueId": [_P, ctypes.POINTER(UniqueId)],
    "sieveCommGrow": [_P, _I, ctypes.POINTER(UniqueId), _I, ctypes.POINTER(_P), _P],
}

missing = []  # functions declared in sieve.h that this libsieve does not export
for _name, _args in _PROTOS.items():
    _fn = getattr(lib, _name, None)
    if _fn is None:
        missing.append(_name)
        continue
    _fn.argtypes = _args
    _fn.restype = ctypes.c_char_p if _name in ("sieveGetErrorString", "sieveGetLastError") else _R


def fn(name):
    """The C function `name`, or SieveError(sieveInvalidUsage) when this libsieve lacks it."""
    f = getattr(lib, name, None) if name not in missing else None
    if f is None:
        from .errors import SieveError, INVALID_USAGE
        raise SieveError(INVALID_USAGE, "%s is not exported by %s (a libsieve built before it "
                         "was implemented)" % (name, path))
    return f
