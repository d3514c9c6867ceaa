"""Failures of the "sieve" backend on 3 real processes: a rank that stays silent (every other
rank's collective raises Sieve's error within the group's timeout, naming the silent rank),
and a rank that exits in the middle of a large all-reduce (the others raise within the
timeout, well before it in fact); afterwards the failed communicators refuse more work."""
import datetime
import os
import time

import torch
import torch.distributed as dist

import sieve
import sieve.torch  # noqa: F401 - registers "sieve" (in each spawned rank too)
from mp_util import free_port, run_ranks

SILENT_TIMEOUT_S = 3
WORLD_TIMEOUT_S = 30


def failures_rank(rank, n, port):
    dist.init_process_group("sieve", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=n, timeout=datetime.timedelta(seconds=WORLD_TIMEOUT_S))
    gloo = dist.new_group(backend="gloo")  # coordination that does not depend on Sieve
    quick = dist.new_group(backend="sieve", timeout=datetime.timedelta(seconds=SILENT_TIMEOUT_S))
    out = {}
    # 1. Rank 2 never joins an all-reduce on `quick`: ranks 0 and 1 raise within its timeout.
    if rank < 2:
        x = torch.ones(1000)
        start = time.monotonic()
        try:
            dist.all_reduce(x, group=quick)
            out["silent"] = "no error"
        except sieve.SieveError as e:
            out["silent"] = (time.monotonic() - start, e.code, e.message)
        try:  # the failed communicator refuses more work, with a message
            dist.all_reduce(x, group=quick)
            out["after"] = "no error"
        except sieve.SieveError as e:
            out["after"] = e.message
    dist.barrier(group=gloo)
    # 2. Rank 2 exits in the middle of a large all-reduce on the world group.
    big = torch.ones(4 << 20)
    work = dist.all_reduce(big, async_op=True)
    if rank == 2:
        time.sleep(0.05)
        os._exit(0)
    start = time.monotonic()
    try:
        work.wait()
        out["exit"] = "no error"
    except sieve.SieveError as e:
        out["exit"] = (time.monotonic() - start, e.code, e.message)
    return out


def test_silent_and_exiting_ranks_make_the_others_raise():
    r0, r1, r2 = run_ranks(3, failures_rank, free_port(), may_exit=(2,), timeout=300)
    assert r2 is None
    for r in (r0, r1):
        waited, code, message = r["silent"]
        assert code != 0 and "2" in message, r["silent"]  # names the silent rank
        assert waited < SILENT_TIMEOUT_S + 8, "raised after %.1f s" % waited
        assert "unusable" in r["after"], r["after"]
        waited, code, message = r["exit"]
        assert code != 0 and message, r["exit"]
        assert waited < WORLD_TIMEOUT_S, "raised after %.1f s" % waited
