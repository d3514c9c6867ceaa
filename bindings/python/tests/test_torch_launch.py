"""A torchrun-style launch of an ordinary DDP script on the "sieve" backend: each process gets
RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, init_process_group("sieve") takes
env:// (the unique id goes through PyTorch's store on MASTER_PORT), and
SIEVE_TORCH_ALLREDUCE=ternary selects the ternary all-reduce without a code change.
torchrun itself is used where it works (Debian's PyTorch 1.13 torchrun fails on Python 3.11
before starting any worker: Std.from_str returns None)."""
import os
import subprocess
import sys

import pytest
import torch

from mp_util import free_port

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "torchrun_script.py")
N = 2


def _env(**extra):
    return dict(os.environ, SIEVE_TORCH_ALLREDUCE="ternary", SIEVE_TORCH_BLOCK="64",
                OMP_NUM_THREADS="1",
                PYTHONPATH=os.path.join(HERE, ".."), **extra)


def test_env_launch_with_ternary_by_environment():
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, SCRIPT], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              env=_env(RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(N),
                                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port))
             for r in range(N)]
    try:
        outs = [p.communicate(timeout=240)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for r, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0 and "OK rank %d mode ternary" % r in out, out


@pytest.mark.skipif(int(torch.__version__.split(".")[0]) < 2,
                    reason="PyTorch 1.13's torchrun fails on Python 3.11 (Std.from_str)")
def test_torchrun():
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1",
           "--nproc_per_node=%d" % N, "--master_addr=127.0.0.1",
           "--master_port=%d" % free_port(), SCRIPT]
    out = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("mode ternary") == N, out.stdout
