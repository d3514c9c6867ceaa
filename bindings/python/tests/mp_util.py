"""Runs a function on n real processes (spawned, so no state leaks from pytest) and
returns each rank's result; any rank's exception fails the run with its traceback."""
import multiprocessing as mp
import os
import queue
import time
import socket
import traceback


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(fn, rank, n, env, args, q):
    os.environ.update(env)
    try:
        q.put((rank, True, fn(rank, n, *args)))
    except BaseException:  # report everything, including SystemExit from a failed assert
        q.put((rank, False, traceback.format_exc()))


def run_ranks(n, fn, *args, env=None, timeout=240, may_exit=()):
    """fn(rank, n, *args) on n processes; env: dict or callable(rank) -> dict. Ranks in
    may_exit may end without a result (a test's victim): theirs is then None."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = []
    for r in range(n):
        e = env(r) if callable(env) else dict(env or {})
        p = ctx.Process(target=_child, args=(fn, r, n, e, args, q))
        p.start()
        procs.append(p)
    results, errors = {}, []
    deadline = time.monotonic() + timeout
    try:
        while len(results) + len(errors) < n:
            try:
                rank, ok, val = q.get(timeout=1)
            except queue.Empty:
                for r in may_exit:
                    if procs[r].exitcode is not None and r not in results and q.empty():
                        results[r] = None
                dead = [r for r, p in enumerate(procs)
                        if p.exitcode not in (None, 0) and r not in may_exit]
                if dead and q.empty():
                    time.sleep(1)  # a result may still be in flight
                    if q.empty():
                        raise AssertionError("ranks %s died (exit codes %s)" % (
                            dead, [procs[r].exitcode for r in dead]))
                if time.monotonic() > deadline:
                    raise AssertionError("ranks did not finish within %d s" % timeout)
                continue
            if ok:
                results[rank] = val
            else:
                errors.append("rank %d:\n%s" % (rank, val))
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    assert not errors, "\n".join(errors)
    return [results[r] for r in range(n)]
