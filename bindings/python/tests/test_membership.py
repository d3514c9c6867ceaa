"""Elastic membership from Python on real processes: a rank killed (SIGKILL), the survivors
agree on it, shrink and sum exactly; revoke from another thread; a grow admits a new rank."""
import multiprocessing as mp
import os
import queue
import signal
import tempfile
import threading
import time
import traceback

import numpy as np

import sieve
from sieve.errors import SieveError, REMOTE_ERROR, INVALID_USAGE
from mp_util import run_ranks


def _child(fn, rank, n, args, q):
    os.environ.update({"SIEVE_TIMEOUT": "20"})
    try:
        q.put((rank, True, fn(rank, n, *args)))
    except BaseException:
        q.put((rank, False, traceback.format_exc()))


def run_with_victim(n, victim, fn, *args, timeout=120):
    """fn(rank, n, *args) on n spawned processes, rank `victim` expected to die by SIGKILL."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(fn, r, n, args, q)) for r in range(n)]
    for p in procs:
        p.start()
    results, errors = {}, []
    deadline = time.monotonic() + timeout
    try:
        while len(results) + len(errors) < n - 1:
            try:
                rank, ok, val = q.get(timeout=1)
            except queue.Empty:
                assert time.monotonic() < deadline, "survivors did not finish in time"
                continue
            (results.__setitem__(rank, val) if ok else errors.append("rank %d:\n%s" % (rank, val)))
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    assert not errors, "\n".join(errors)
    assert procs[victim].exitcode == -signal.SIGKILL, procs[victim].exitcode
    return results


def sum_check(comm, rank, count=1001):
    x = np.arange(count, dtype=np.int32) * (rank + 1)
    comm.all_reduce(x)
    n = comm.size
    assert np.array_equal(x, np.arange(count, dtype=np.int32) * (n * (n + 1) // 2))


def kill_rank(rank, n, uid):
    comm = sieve.Comm(n, uid, rank)
    sum_check(comm, rank)
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    try:
        sum_check(comm, rank, 100003)
        raise AssertionError("an all-reduce without rank 1 succeeded")
    except SieveError as e:
        assert e.code == REMOTE_ERROR, e
    assert comm.failed_ranks(agree=False) in ([], [1])  # local knowledge may lag
    failed = comm.failed_ranks()
    assert failed == [1], failed
    new = comm.shrink(failed)
    assert (new.size, new.rank) == (n - 1, rank if rank < 1 else rank - 1)
    sum_check(new, new.rank, 100003)
    new.destroy()
    comm.destroy()
    return failed


def test_shrink_after_kill():
    results = run_with_victim(3, 1, kill_rank, sieve.get_unique_id())
    assert results == {0: [1], 2: [1]}


def revoke_rank(rank, n, uid, flag):
    comm = sieve.Comm(n, uid, rank)
    if rank == 0:
        t = threading.Thread(target=lambda: (time.sleep(0.3), comm.revoke()))
        t.start()
        start = time.monotonic()
        try:
            comm.all_reduce(np.ones(100, dtype=np.float32))  # rank 1 is not there: blocks
            raise AssertionError("the blocked all-reduce succeeded")
        except SieveError as e:
            assert e.code == REMOTE_ERROR, e
        t.join()
        assert time.monotonic() - start < 3
        open(flag, "w").close()
    else:
        while not os.path.exists(flag):
            time.sleep(0.01)
        comm.revoke()
    try:
        comm.all_reduce(np.ones(10, dtype=np.float32))
        raise AssertionError("a revoked communicator ran a collective")
    except SieveError as e:
        assert e.code == INVALID_USAGE and "revoked" in e.message, e
    new = comm.shrink([], abort=False)
    sum_check(new, rank)
    new.destroy()
    comm.destroy()


def test_revoke_from_another_thread():
    with tempfile.TemporaryDirectory() as d:
        run_ranks(2, revoke_rank, sieve.get_unique_id(), os.path.join(d, "revoked"),
                  env={"SIEVE_TIMEOUT": "30"})


def grow_rank(rank, n, uid, idfile):
    if rank == 2:  # the new rank
        while not os.path.exists(idfile):
            time.sleep(0.01)
        comm = sieve.join_grow(3, open(idfile).read(), 2)
    else:
        old = sieve.Comm(2, uid, rank)
        gid = None
        if rank == 0:
            gid = old.grow_id()
            with open(idfile + ".tmp", "w") as f:
                f.write(gid)
            os.rename(idfile + ".tmp", idfile)
        comm = old.grow(3, gid)
        old.destroy()
    assert (comm.rank, comm.size) == (rank, 3)
    sum_check(comm, rank, 5003)
    comm.destroy()


def test_grow():
    with tempfile.TemporaryDirectory() as d:
        run_ranks(3, grow_rank, sieve.get_unique_id(), os.path.join(d, "gid"))
