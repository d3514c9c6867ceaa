"""Work objects of the "sieve" backend: views of a Future the completion thread completes.

PyTorch 2.x binds torch.distributed.Work with a trampoline, so a Python subclass serves C++
callers too (DDP's reducer, _broadcast_coalesced) and its wait() raises Sieve's error there.
PyTorch 1.13 has no such trampoline: C++ would call the base class's wait(), which never
returns for a Python object. There the backend hands C++ callers PyTorch's own future-backed
Work (_create_work_from_future; its wait() does not raise, the future's value() does, which is
what DDP's reducer reads) and Python callers (torch.distributed's functions) a SieveWork.
"""
import datetime
import sys
import threading

import torch
from torch._C._distributed_c10d import Work, _create_work_from_future


def _major(version):
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return 0


PY_WORK_FOR_CPP = _major(torch.__version__) >= 2
_C10D_MODULE = "torch.distributed.distributed_c10d"


class SieveWork(Work):
    """wait() raises the collective's SieveError; wait(timeout) raises RuntimeError when it has
    not finished by then (the collective goes on: Sieve's own timeout ends it)."""

    def __init__(self, fut, what):
        super().__init__()
        self._fut, self._what = fut, what

    def is_completed(self):
        return self._fut.done()

    def is_success(self):
        return self._fut.done() and self.exception() is None

    def exception(self):
        if not self._fut.done():
            return None
        try:
            self._fut.value()
        except Exception as e:  # noqa: BLE001 - the collective's failure, returned
            return e
        return None

    def wait(self, timeout=None):
        seconds = _seconds(timeout)
        if seconds and not self._fut.done():
            done = threading.Event()
            self._fut.add_done_callback(lambda _: done.set())
            if not done.wait(seconds):
                raise RuntimeError("sieve: %s did not finish within %.3f s" % (self._what,
                                                                              seconds))
        self._fut.wait()  # raises its SieveError
        return True

    def get_future(self):
        return self._fut

    def result(self):
        value = self._fut.wait()
        return value if isinstance(value, list) else []

    def synchronize(self):
        pass

    def source_rank(self):
        raise RuntimeError("sieve: recv from any source is not supported")

    def _source_rank(self):
        return self.source_rank()

    def __repr__(self):
        return "SieveWork(%s, %s)" % (self._what, "done" if self._fut.done() else "pending")


def _seconds(timeout):
    if timeout is None:
        return 0.0
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout) / 1000.0  # milliseconds, as c10d's kNoTimeout = 0 ms


def make_work(fut, what, depth=2):
    """The Work to return for `fut`: a SieveWork, or on PyTorch 1.13 when the backend method
    was not called by torch.distributed's Python functions (depth = frames up to that
    caller), PyTorch's future-wrapping Work."""
    if PY_WORK_FOR_CPP:
        return SieveWork(fut, what)
    caller = sys._getframe(depth)
    if caller is not None and caller.f_globals.get("__name__") == _C10D_MODULE:
        return SieveWork(fut, what)
    return _create_work_from_future(fut)
