"""Every collective from Python on real processes, against a reference computed on each
rank from every rank's (deterministic, random) input; dtypes, ops, NumPy and torch."""
import numpy as np
import pytest
import torch

import sieve
from mp_util import free_port, run_ranks

TORCH_TYPES = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16,
               torch.bfloat16, torch.float32, torch.float64]
NUMPY_TYPES = [np.uint32, np.uint64, np.int8, np.float16, np.float32, np.float64]
TOL = {torch.float16: 4e-3, torch.bfloat16: 3e-2, torch.float32: 1e-5, torch.float64: 1e-12}


def make(rank, count, dtype, op, salt):
    """Rank `rank`'s input: small integers (exact even for prod) or floats near 1 for prod."""
    g = torch.Generator().manual_seed(1000 * salt + 17 * rank + 3)
    if dtype.is_floating_point:
        x = torch.rand(count, generator=g, dtype=torch.float64)
        x = 0.5 + x if op == "prod" else 4 * x - 2
    else:
        lo, hi = (1, 3) if op == "prod" else (0, 9)
        x = torch.randint(lo, hi, (count,), generator=g, dtype=torch.int64)
    return x.to(dtype)


def reference(inputs, op):
    stack = torch.stack([x.to(torch.float64) for x in inputs])
    if op == "sum":
        return stack.sum(0)
    if op == "prod":
        return stack.prod(0)
    if op == "max":
        return stack.max(0).values
    if op == "min":
        return stack.min(0).values
    return stack.mean(0)


def close(got, want, dtype, what):
    got = got.to(torch.float64)
    if dtype.is_floating_point:
        tol = TOL[dtype]
        ok = torch.allclose(got, want, rtol=tol, atol=tol)
    else:
        ok = torch.equal(got, want)
    assert ok, "%s: max error %g" % (what, (got - want).abs().max().item())


def collectives_rank(rank, n, uid):
    comm = sieve.Comm(n, uid, rank)
    assert (comm.rank, comm.size) == (rank, n)
    count = 1001  # odd
    for salt, dtype in enumerate(TORCH_TYPES):
        ops = ["sum", "prod", "max", "min"] + (["avg"] if dtype.is_floating_point else [])
        for op in ops:
            inputs = [make(r, count, dtype, op, salt) for r in range(n)]
            want = reference(inputs, op)
            x = inputs[rank].clone()
            out = comm.all_reduce(x, op=op)  # in place
            assert out is x
            close(x, want, dtype, "all_reduce %s %s" % (dtype, op))
            send = inputs[rank].clone()
            recv = torch.empty_like(send)
            comm.all_reduce(send, recv, op=op)  # out of place: send untouched
            assert torch.equal(send, inputs[rank])
            close(recv, want, dtype, "all_reduce oop %s %s" % (dtype, op))
            root = (salt + len(op)) % n
            r = torch.zeros_like(send)
            comm.reduce(send, r, op=op, root=root)
            if rank == root:
                close(r, want, dtype, "reduce %s %s" % (dtype, op))
        inputs = [make(r, count, dtype, "sum", salt + 50) for r in range(n)]
        root = salt % n
        b = inputs[rank].clone() if rank == root else torch.zeros(count, dtype=dtype)
        comm.broadcast(b, root=root)
        assert torch.equal(b, inputs[root]), "broadcast %s" % dtype
        g = torch.empty(n * count, dtype=dtype)
        comm.all_gather(inputs[rank], g)
        assert torch.equal(g, torch.cat(inputs)), "all_gather %s" % dtype
        big = [make(r, n * 37, dtype, "sum", salt + 90) for r in range(n)]
        rs = torch.empty(37, dtype=dtype)
        comm.reduce_scatter(big[rank], rs, op="sum")
        close(rs, reference(big, "sum")[rank * 37:(rank + 1) * 37], dtype, "reduce_scatter")
    for salt, nt in enumerate(NUMPY_TYPES):
        rng = [np.random.default_rng(7 * r + salt) for r in range(n)]
        arrays = [rg.integers(0, 50, 777).astype(nt) for rg in rng]
        a = arrays[rank].copy()
        comm.all_reduce(a, op="max")
        assert np.array_equal(a, np.maximum.reduce(arrays)), "numpy all_reduce %s" % nt
    # point to point: a ring shift inside a group
    x = make(rank, 513, torch.float32, "sum", 99)
    y = torch.empty_like(x)
    with comm.group():
        comm.send(x, (rank + 1) % n)
        comm.recv(y, (rank - 1) % n)
    assert torch.equal(y, make((rank - 1) % n, 513, torch.float32, "sum", 99))
    c = comm.counters()
    assert c["bytes_sent"] > 0 and c["collectives"] > 0
    comm.destroy()
    return "ok"


@pytest.mark.parametrize("n", [2, 3])
def test_collectives(n):
    assert run_ranks(n, collectives_rank, sieve.get_unique_id()) == ["ok"] * n


def errors_rank(rank, n, uid):
    comm = sieve.Comm(n, uid, rank)
    codes = {}

    def code(f):
        try:
            f()
        except sieve.SieveError as e:
            assert e.message, "an error without a message"
            return e.code
        raise AssertionError("no error")

    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    codes["noncontig"] = code(lambda: comm.all_reduce(t.t()))
    codes["bool"] = code(lambda: comm.all_reduce(torch.zeros(4, dtype=torch.bool)))
    codes["dtype_mismatch"] = code(lambda: comm.all_reduce(torch.zeros(4), torch.zeros(4).double()))
    codes["size_mismatch"] = code(lambda: comm.all_reduce(torch.zeros(4), torch.zeros(5)))
    codes["op"] = code(lambda: comm.all_reduce(torch.zeros(4), op="median"))
    codes["bad_op_value"] = code(lambda: comm.all_reduce(torch.zeros(4), op=17))  # library checks
    codes["bad_root"] = code(lambda: comm.broadcast(torch.zeros(4), root=n + 3))
    codes["bad_peer"] = code(lambda: comm.send(torch.zeros(4), -1))
    codes["ternary_int"] = code(lambda: comm.all_reduce_ternary(torch.zeros(4, dtype=torch.int32)))
    ro = np.zeros(4, dtype=np.float32)
    ro.flags.writeable = False
    codes["readonly"] = code(lambda: comm.all_reduce(ro))
    codes["uid"] = code(lambda: sieve.unique_id_from_string("not hex"))
    # a mask that differs across ranks under the strict policy names the ranks
    m = np.ones(100, dtype=bool)
    m[rank] = False
    try:
        comm.register_mask(m)
        raise AssertionError("differing masks registered")
    except sieve.SieveError as e:
        codes["mask"] = e.code
        assert "rank" in e.message, e.message
    # the communicator is still usable after argument errors
    x = torch.full((5,), float(rank + 1))
    comm.all_reduce(x)
    assert torch.equal(x, torch.full((5,), float(n * (n + 1) // 2)))
    comm.destroy()
    codes["destroyed"] = code(lambda: comm.all_reduce(x))
    return codes


def test_errors():
    codes = run_ranks(2, errors_rank, sieve.get_unique_id())[0]
    for k in ("noncontig", "bool", "dtype_mismatch", "size_mismatch", "op", "bad_op_value",
              "bad_root", "bad_peer", "ternary_int", "readonly", "uid"):
        assert codes[k] == 4, (k, codes[k])  # sieveInvalidArgument
    assert codes["mask"] in (4, 5), codes["mask"]
    assert codes["destroyed"] == 5  # sieveInvalidUsage


def init_alone(rank, n, uid):
    try:
        sieve.Comm(2, uid, 0)  # rank 1 never joins
    except sieve.SieveError as e:
        return e.code, e.message
    return None


def test_missing_rank_times_out_with_message():
    code, message = run_ranks(1, init_alone, sieve.get_unique_id(),
                              env={"SIEVE_TIMEOUT": "2"})[0]
    # within SIEVE_TIMEOUT, not a hang: sieveRemoteError saying what was missing
    assert code == 6 and "2.0 s" in message, (code, message)


def from_env_rank(rank, n):
    comm = sieve.Comm.from_env()
    x = torch.full((3,), float(rank))
    comm.all_reduce(x)
    comm.destroy()
    return (comm.rank, comm.size, x.tolist())


def test_from_torchrun_env():
    port = free_port()
    env = lambda r: {"RANK": str(r), "WORLD_SIZE": "3", "MASTER_ADDR": "127.0.0.1",
                     "MASTER_PORT": str(port)}
    got = run_ranks(3, from_env_rank, env=env)
    assert got == [(r, 3, [3.0, 3.0, 3.0]) for r in range(3)]


def test_from_env_without_launcher_fails():
    with pytest.raises(sieve.SieveError) as e:
        run_env_less()
    assert e.value.code == 5 and "RANK" in e.value.message


def run_env_less():
    import os
    saved = {k: os.environ.pop(k) for k in ("SIEVE_RANK", "RANK", "OMPI_COMM_WORLD_RANK")
             if k in os.environ}
    try:
        sieve.Comm.from_env()
    finally:
        os.environ.update(saved)
