"""SieveError: a failed Sieve call as a Python exception (code + Sieve's message)."""

SUCCESS = 0
UNHANDLED_CUDA_ERROR = 1
SYSTEM_ERROR = 2
INTERNAL_ERROR = 3
INVALID_ARGUMENT = 4
INVALID_USAGE = 5
REMOTE_ERROR = 6
IN_PROGRESS = 7

_NAMES = {0: "sieveSuccess", 1: "sieveUnhandledCudaError", 2: "sieveSystemError",
          3: "sieveInternalError", 4: "sieveInvalidArgument", 5: "sieveInvalidUsage",
          6: "sieveRemoteError", 7: "sieveInProgress"}


class SieveError(RuntimeError):
    """Raised for every failed call. `code` is the sieveResult_t value, `message` what
    sieveGetLastError said (or what the Python layer found wrong before calling)."""

    def __init__(self, code, message):
        self.code = int(code)
        self.name = _NAMES.get(self.code, "sieveResult %d" % self.code)
        self.message = message
        super().__init__("%s: %s" % (self.name, message))


class SieveArgumentError(SieveError, ValueError):
    """An argument the Python layer refused before calling the library (sieveInvalidArgument);
    also a ValueError."""

    def __init__(self, message):
        super().__init__(INVALID_ARGUMENT, message)


class SieveRangeError(SieveArgumentError, OverflowError):
    """An integer that does not fit the C type it would be passed as (never truncated)."""


class SieveTypeError(SieveArgumentError, TypeError):
    """A non-integer where the C call takes an integer (never truncated to one)."""


def check(result, what, comm_handle=None):
    """Raises SieveError when `result` is not sieveSuccess, with the library's message."""
    if result == SUCCESS:
        return
    from . import _lib
    msg = _lib.lib.sieveGetLastError(comm_handle)
    if not msg and comm_handle is not None:
        msg = _lib.lib.sieveGetLastError(None)
    text = msg.decode(errors="replace") if msg else ""
    raise SieveError(result, text or "%s failed" % what)
