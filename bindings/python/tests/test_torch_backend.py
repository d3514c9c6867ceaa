"""The "sieve" backend in this process (a 1-rank group over a HashStore): configuration from
Options and the environment, argument errors raised on the caller's thread, Work semantics
(queue order, wait with a timeout, Sieve's error raised by wait), the completion thread's
abort, and python3 -m sieve."""
import datetime
import os
import subprocess
import sys
import threading

import pytest
import torch
import torch.distributed as dist

import sieve
import sieve.torch
from sieve.torch import Options
from sieve.torch.work import SieveWork, PY_WORK_FOR_CPP


@pytest.fixture(scope="module")
def pg():
    dist.init_process_group("sieve", store=dist.HashStore(), rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=17))
    yield dist.group.WORLD
    dist.destroy_process_group()


def test_registered_with_torch():
    assert sieve.torch.is_registered()
    assert dist.Backend("sieve") == "sieve"


def test_options_from_arguments_environment_and_defaults(monkeypatch):
    monkeypatch.delenv("SIEVE_TORCH_ALLREDUCE", raising=False)
    monkeypatch.delenv("SIEVE_TERNARY_SEED", raising=False)
    o = Options().resolved()
    assert (o.allreduce, o.seed, o.block_size, o.ternary) == ("dense", 1, 0, False)
    monkeypatch.setenv("SIEVE_TORCH_ALLREDUCE", "Ternary-EF")
    monkeypatch.setenv("SIEVE_TERNARY_SEED", "42")
    o = Options().resolved()
    assert (o.allreduce, o.seed, o.ternary, o.error_feedback) == ("ternary-ef", 42, True, True)
    assert o.levels == 1
    o = Options(allreduce="q7-ef").resolved()
    assert (o.ternary, o.levels, o.error_feedback) == (True, 7, True)
    o = Options(allreduce="auto").resolved()
    assert (o.ternary, o.levels, o.error_feedback) == (True, "auto", False)
    o = Options(allreduce="auto-mask", seed=5).resolved()  # explicit beats the environment
    assert (o.allreduce, o.seed, o.comm_env) == ("auto-mask", 5, {"SIEVE_AUTO_MASK": "1"})
    monkeypatch.setenv("SIEVE_TORCH_ALLREDUCE", "sparse")
    with pytest.raises(ValueError, match="SIEVE_TORCH_ALLREDUCE='sparse'"):
        Options().resolved()
    with pytest.raises(ValueError, match="Options.seed"):
        Options(allreduce="dense", seed="x").resolved()


def test_group_timeout_is_the_communicators_sieve_timeout(pg, monkeypatch):
    assert pg.timeout_s == 17
    monkeypatch.setenv("SIEVE_TIMEOUT", "5")
    assert pg.timeout_env() == "17"  # PyTorch's explicit timeout wins over the environment


def test_collectives_of_one_rank_and_queue_order(pg):
    xs = [torch.full((1000,), float(i)) for i in range(5)]
    works = [dist.all_reduce(x, op=dist.ReduceOp.MAX, async_op=True) for x in xs]
    assert all(isinstance(w, SieveWork) for w in works)
    works[-1].wait()
    assert all(w.is_completed() for w in works)  # one queue: earlier work finished first
    assert all(torch.all(x == i) for i, x in enumerate(xs))
    dist.barrier()
    t = torch.arange(6, dtype=torch.int64)
    out = torch.empty(6, dtype=torch.int64)
    dist.all_gather_into_tensor(out, t)
    assert torch.equal(out, t)


def test_argument_errors_raise_on_the_callers_thread(pg):
    with pytest.raises(ValueError, match="contiguous"):
        dist.all_reduce(torch.ones(4, 4).t())
    with pytest.raises(ValueError, match="BAND"):
        dist.all_reduce(torch.ones(4, dtype=torch.int32), op=dist.ReduceOp.BAND)
    with pytest.raises(sieve.SieveError, match="no Sieve datatype"):
        dist.all_reduce(torch.ones(4, dtype=torch.bool))
    with pytest.raises(ValueError, match="tags are not supported"):
        pg.send([torch.ones(2)], 0, 3)
    with pytest.raises(ValueError, match="meta tensors are not supported"):
        dist.all_reduce(torch.empty(3, device="meta"))
    x = torch.ones(3)  # the group is still fine
    dist.all_reduce(x)
    assert torch.equal(x, torch.ones(3))


def test_wait_raises_sieves_message_and_honours_a_timeout(pg):
    comm = pg.sieve_comm
    gate = threading.Event()
    comm.submit(lambda run: gate.wait())  # holds the queue
    x = torch.ones(10)
    w = dist.all_reduce(x, async_op=True)
    assert not w.is_completed()
    with pytest.raises(RuntimeError, match="did not finish within"):
        w.wait(datetime.timedelta(milliseconds=200))
    gate.set()
    assert w.wait() and w.is_completed() and w.exception() is None
    # An error found by libsieve (ternary of integers) comes back through wait().
    ints = torch.ones(8, dtype=torch.int32)
    fut = comm.submit(lambda run: run(lambda: comm.comm.all_reduce_ternary(ints)))
    bad = SieveWork(fut, "ternary")
    with pytest.raises(sieve.SieveError, match="int32 is not supported by the ternary"):
        bad.wait()
    assert isinstance(bad.exception(), sieve.SieveError) and not bad.is_success()
    with pytest.raises(sieve.SieveError, match="int32"):  # what DDP's reducer reads
        fut.wait()


@pytest.mark.skipif(PY_WORK_FOR_CPP, reason="PyTorch 2.x serves C++ callers SieveWork too")
def test_cpp_callers_get_pytorchs_future_work_on_1_13(pg):
    w = pg.allreduce([torch.ones(3)], dist.AllreduceOptions())  # not from distributed_c10d
    assert not isinstance(w, SieveWork)
    w.wait()
    assert torch.equal(w.get_future().wait()[0], torch.full((3,), 1.0))


def test_abort_fails_queued_work_and_frees_the_communicator():
    from sieve.async_comm import AsyncComm
    ac = AsyncComm(1, sieve.get_unique_id(), 0)
    gate = threading.Event()
    running = ac.submit(lambda run: gate.wait(5) and run(lambda: None))
    queued = ac.submit(lambda run: run(lambda: None))
    ac.abort()
    gate.set()
    with pytest.raises(sieve.SieveError, match="aborted"):
        queued.wait()
    with pytest.raises(sieve.SieveError, match="aborted"):
        running.wait()
    with pytest.raises(sieve.SieveError, match="closed"):
        ac.submit(lambda run: None)


def test_python_m_sieve_reports_library_and_configuration():
    env = dict(os.environ, SIEVE_TORCH_ALLREDUCE="ternary")
    out = subprocess.run([sys.executable, "-m", "sieve"], env=env, capture_output=True,
                         text=True, timeout=120,
                         cwd=os.path.join(os.path.dirname(__file__), ".."))
    assert out.returncode == 0, out.stderr
    assert "library: %s" % sieve.library_path in out.stdout
    assert 'backend "sieve" registered' in out.stdout
    assert "all_reduce of float tensors: ternary" in out.stdout
