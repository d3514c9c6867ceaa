"""Asynchronous collectives: a non-blocking Sieve communicator and one completion thread.

    ac = AsyncComm(nranks, unique_id, rank, env={"SIEVE_TIMEOUT": "30"})
    fut = ac.submit(lambda run: run(lambda: ac.comm.all_reduce(t)) or t)  # a Future of t

The communicator is made with sieveConfig_t.blocking = 0: each call is queued on Sieve's own
background thread and returns sieveInProgress. Such a communicator takes one operation at a
time, so tasks wait in a queue here; the completion thread issues a task's calls and sleeps in
sieveCommWaitAsyncError (no polling, the GIL released) until each is done, then completes the
task's Future. The caller's thread never blocks: DDP's autograd thread keeps computing the next
bucket while this one's exchange runs. The DDP hooks (sieve.hooks) and the torch.distributed
backend (sieve.torch) both submit their work here.

`SyncRunner` offers the same submit() over a blocking sieve.Comm: the task runs at once and
the Future is already completed (the hooks' behaviour before this module).
"""
import atexit
import collections
import contextlib
import ctypes
import os
import threading
import weakref

from . import _lib
from .comm import Comm, unique_id_from_string, version
from .errors import SieveError, check, SUCCESS, IN_PROGRESS, INVALID_USAGE

_ENV_LOCK = threading.Lock()


@contextlib.contextmanager
def scoped_env(overrides):
    """os.environ with `overrides` (name -> str) while the block runs. Sieve reads its SIEVE_*
    parameters once per communicator, on the thread that calls sieveCommInit*/GetUniqueId:
    this is how one communicator gets its own SIEVE_TIMEOUT or SIEVE_AUTO_MASK."""
    with _ENV_LOCK:
        saved = {k: os.environ.get(k) for k in overrides}
        os.environ.update({k: str(v) for k, v in overrides.items()})
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def new_future():
    try:
        import torch
        return torch.futures.Future()
    except ImportError:  # NumPy-only use
        import concurrent.futures
        return concurrent.futures.Future()


def _done_future(value=None, error=None):
    fut = new_future()
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(value)
    return fut


class SyncRunner:
    """submit() over a blocking communicator: runs the task now (its failure raises here, as a
    blocking call's does) and returns an already completed Future."""

    def __init__(self, comm):
        self.comm = comm

    @staticmethod
    def run(call):
        call()

    def submit(self, task):
        return _done_future(task(self.run))


def runner_for(comm):
    """What submit() goes through for `comm`: an AsyncComm, or a torch group of the "sieve"
    backend (its AsyncComm): Futures completed by the completion thread; a blocking
    sieve.Comm: a SyncRunner (Futures completed before submit returns)."""
    ac = getattr(comm, "sieve_comm", comm)
    return ac if isinstance(ac, AsyncComm) else SyncRunner(comm)


_LIVE = weakref.WeakSet()  # closed at exit: no Sieve thread may outlive the interpreter


@atexit.register
def _close_all():
    for ac in list(_LIVE):
        ac.close()


class AsyncComm:
    """A non-blocking communicator (sieveCommInitRankConfig, blocking = 0) and its completion
    thread. `comm` is the sieve.Comm over the same handle: tasks call its methods (they return
    sieveInProgress, which `run` turns into a sleep until done). env: SIEVE_* values for this
    communicator only (read by the init). Raises SieveError when the init fails."""

    SLICE_MS = 100  # a waiting completion thread looks for an abort request this often

    def __init__(self, nranks, unique_id, rank, env=None, name=None):
        uid = unique_id_from_string(unique_id) if isinstance(unique_id, str) else unique_id
        cfg = _lib.Config.non_blocking(version(), name)
        h = ctypes.c_void_p()
        with scoped_env(env or {}):
            r = _lib.fn("sieveCommInitRankConfig")(ctypes.byref(h), int(nranks), uid, int(rank),
                                                    ctypes.byref(cfg))
        if r != IN_PROGRESS:
            check(r, "sieveCommInitRankConfig")
        self.comm = Comm(_handle=h)  # rank and size are known while the init runs
        self.rank, self.size = self.comm.rank, self.comm.size
        self._lock = threading.Lock()  # guards _aborting and _issuing
        self._aborting = False
        self._issuing = False          # the completion thread is inside a Sieve call
        self._cv = threading.Condition()
        self._tasks = collections.deque()
        self._busy = False             # a task is running on the completion thread
        self._held = False             # a caller's thread has the communicator (exclusive)
        self._closing = False
        try:
            self._wait_done("the communicator's creation")
        except SieveError:
            self.comm.abort()
            raise
        self._thread = threading.Thread(target=self._loop, name="sieve-completion", daemon=True)
        self._thread.start()
        _LIVE.add(self)

    # -- the completion thread --------------------------------------------------------
    def _wait_done(self, what):
        """Sleeps until the communicator's pending work is done; raises its error."""
        code = ctypes.c_int(IN_PROGRESS)
        wait = _lib.fn("sieveCommWaitAsyncError")
        while code.value == IN_PROGRESS:
            with self._lock:
                if self._aborting:
                    self.comm.abort()  # here, on the thread that uses the handle
                    raise SieveError(INVALID_USAGE, "communicator aborted")
            check(wait(self.comm._handle(), self.SLICE_MS, ctypes.byref(code)),
                  "sieveCommWaitAsyncError")
        if code.value != SUCCESS:
            msg = _lib.lib.sieveGetLastError(self.comm._handle())
            raise SieveError(code.value, (msg.decode(errors="replace") if msg else "") or
                             "%s failed" % what)

    def run(self, call):
        """On the completion thread: issues `call` (sieve.Comm calls) and sleeps until the
        communicator has finished what it queued. Raises the failure with Sieve's message."""
        with self._lock:
            if self._aborting:
                raise SieveError(INVALID_USAGE, "communicator aborted")
            self._issuing = True
        try:
            call()
        except SieveError as e:
            if e.code != IN_PROGRESS:
                raise
        finally:
            with self._lock:
                self._issuing = False
        self._wait_done("the operation")

    def _loop(self):
        while True:
            with self._cv:
                while (not self._tasks or self._held) and not self._closing:
                    self._cv.wait()
                if not self._tasks:
                    return
                while self._held:  # closing, and a caller still has the communicator
                    self._cv.wait()
                fut, task = self._tasks.popleft()
                self._busy = True
            try:
                value, error = task(self.run), None
            except BaseException as e:  # handed to whoever waits on the future
                value, error = None, e
            with self._cv:
                self._busy = False
                self._cv.notify_all()
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(value)

    # -- callers ---------------------------------------------------------------------------
    def submit(self, task):
        """Queues task(run) behind earlier tasks; returns a Future of its return value (or its
        exception). The task runs on the completion thread and reaches the communicator only
        through run(call)."""
        fut = new_future()
        with self._cv:
            if self._closing:
                raise SieveError(INVALID_USAGE, "communicator is closed")
            self._tasks.append((fut, task))
            self._cv.notify_all()
        return fut

    def call(self, task):
        """submit() and wait: the result, or the task's exception raised here."""
        fut = self.submit(task)
        return fut.wait() if hasattr(fut, "wait") else fut.result()

    def drain(self):
        """Waits until every submitted task has run (the communicator is idle)."""
        with self._cv:
            while self._tasks or self._busy:
                self._cv.wait()

    @contextlib.contextmanager
    def exclusive(self):
        """The communicator for the calling thread alone, once every queued task has run;
        tasks submitted meanwhile start when the block ends. For calls that must be issued
        on the caller's thread (device buffers are enqueued on the caller's stream)."""
        with self._cv:
            while self._tasks or self._busy or self._held:
                self._cv.wait()
            self._held = True
        try:
            yield self.comm
        finally:
            with self._cv:
                self._held = False
                self._cv.notify_all()

    def counters(self):
        return self.call(lambda run: self.comm.counters())

    def destroy(self):
        """Runs what is queued, stops the thread, frees the communicator."""
        with self._cv:
            if self._closing:
                return
            self._closing = True
            self._cv.notify_all()
        if self._thread is threading.current_thread():  # a task let go of the last reference
            return  # the loop ends after this task; the handle stays for the exit hook
        self._thread.join()
        _LIVE.discard(self)
        if not self._aborting:
            self.comm.destroy()

    def abort(self):
        """From any thread: fails what is queued and frees the communicator without waiting
        for peers (Sieve's abort returns within 5 s); a task in progress ends with an error."""
        with self._lock:
            self._aborting = True
            issuing = self._issuing
        with self._cv:
            self._closing = True
            dropped, self._tasks = list(self._tasks), collections.deque()
            self._cv.notify_all()
        for fut, _ in dropped:
            fut.set_exception(SieveError(INVALID_USAGE, "communicator aborted"))
        if issuing:
            # A blocking call (a registration) in progress: sieveCommAbort from another thread
            # is what ends it; the thread's next use of the handle then fails cleanly.
            self.comm.abort()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=10)  # a waiting thread aborts within SLICE_MS + 5 s
        _LIVE.discard(self)
        self.comm.abort()  # idle thread: nobody used the handle; no-op when already done

    def close(self):
        """destroy() when nothing is queued or running, else abort()."""
        with self._cv:
            idle = not self._tasks and not self._busy
        if idle:
            self.destroy()
        else:
            self.abort()
