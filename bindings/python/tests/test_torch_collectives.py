"""The "sieve" torch.distributed backend on 3 real processes, against Gloo: one launch runs
every collective PyTorch calls for every dtype and op (Gloo's result where Gloo implements
the pair, else a reference from every rank's deterministic input), asynchronous Work and
futures, a sieve subgroup, the ternary and q7 modes chosen by pg_options, and DDP: over a 2-rank
sieve group its gradients equal Gloo's bit for bit; the DDP hooks over the sieve group return
futures the completion thread completes, with the blocking hooks' result."""
import datetime

import numpy as np
import torch
import torch.distributed as dist

import sieve
import sieve.torch  # noqa: F401 - registers "sieve" (in each spawned rank too)
from mp_util import free_port, run_ranks
from philox_ref import ternary_avg

N = 3
INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
OPS = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "max": dist.ReduceOp.MAX,
       "min": dist.ReduceOp.MIN}
TOL = {torch.float16: 4e-3, torch.bfloat16: 3e-2, torch.float32: 1e-5, torch.float64: 1e-12}


def make(rank, count, dtype, op, salt):
    g = torch.Generator().manual_seed(1000 * salt + 17 * rank + 3)
    if dtype == torch.bool:
        return torch.rand(count, generator=g) > 0.5
    if dtype.is_complex:
        return torch.randn(count, generator=g, dtype=dtype)
    if dtype.is_floating_point:
        x = torch.rand(count, generator=g, dtype=torch.float64)
        return (0.5 + x if op == "prod" else 4 * x - 2).to(dtype)
    lo, hi = (1, 3) if op == "prod" else (0, 9)
    return torch.randint(lo, hi, (count,), generator=g, dtype=torch.int64).to(dtype)


def reference(inputs, op):
    s = torch.stack([x.to(torch.float64) for x in inputs])
    return {"sum": lambda: s.sum(0), "prod": lambda: s.prod(0), "max": lambda: s.max(0).values,
            "min": lambda: s.min(0).values, "avg": lambda: s.mean(0)}[op]()


def close(got, want, dtype, what):
    got, want = got.to(torch.float64), want.to(torch.float64)
    ok = (torch.allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype])
          if dtype.is_floating_point else torch.equal(got, want))
    assert ok, "%s: max error %g" % (what, (got - want).abs().max().item())


def gloo_or_none(fn):
    """Gloo's result, or None where Gloo does not implement the dtype/op."""
    try:
        return fn()
    except RuntimeError:
        return None


def check_all_reduce(rank, gloo, against):
    for salt, dtype in enumerate(INTS + FLOATS):
        ops = list(OPS) + (["avg"] if dtype.is_floating_point else [])
        for op in ops:
            count = 1001 if salt % 2 else 70001  # small (tree) and pipelined sizes
            inputs = [make(r, count, dtype, op, salt) for r in range(N)]
            x = inputs[rank].clone()
            dist.all_reduce(x, op=dist.ReduceOp.AVG if op == "avg" else OPS[op])
            want = None
            if op != "avg":  # Gloo has no AVG
                y = inputs[rank].clone()
                want = gloo_or_none(lambda: (dist.all_reduce(y, op=OPS[op], group=gloo), y)[1])
            if want is not None:
                against.add(("all_reduce", str(dtype), op))
                if dtype.is_floating_point and op in ("sum", "prod"):  # order, fp32 accumulation
                    close(x, want, dtype, "all_reduce %s %s vs Gloo" % (dtype, op))
                else:
                    assert torch.equal(x, want), "all_reduce %s %s differs from Gloo" % (dtype, op)
            close(x, reference(inputs, op), dtype, "all_reduce %s %s" % (dtype, op))


def check_data_movement(rank, gloo, against):
    """broadcast, all_gather (list and tensor), gather, scatter, all_to_all, send/recv: any
    dtype (they move bytes), bool and complex included."""
    for salt, dtype in enumerate(INTS + FLOATS + [torch.bool, torch.complex64]):
        inputs = [make(r, 777, dtype, "sum", salt) for r in range(N)]
        x = inputs[rank].clone()
        dist.broadcast(x, src=1)
        assert torch.equal(x, inputs[1]), "broadcast %s" % dtype
        outs = [torch.empty_like(x) for _ in range(N)]
        dist.all_gather(outs, inputs[rank])
        assert all(torch.equal(o, i) for o, i in zip(outs, inputs)), "all_gather %s" % dtype
        flat = torch.empty(N * 777, dtype=dtype)
        dist.all_gather_into_tensor(flat, inputs[rank])
        assert torch.equal(flat, torch.cat(inputs)), "all_gather_into_tensor %s" % dtype
        want = [torch.empty_like(x) for _ in range(N)]
        if gloo_or_none(lambda: dist.all_gather(want, inputs[rank], group=gloo) or True):
            against.add(("all_gather", str(dtype)))
            assert all(torch.equal(o, w) for o, w in zip(outs, want))
    # gather / scatter to and from rank 2
    x = make(rank, 55, torch.float32, "sum", 7)
    got = [torch.empty(55) for _ in range(N)] if rank == 2 else None
    dist.gather(x, got, dst=2)
    if rank == 2:
        assert all(torch.equal(g, make(r, 55, torch.float32, "sum", 7)) for r, g in enumerate(got))
    parts = [make(r, 33, torch.int64, "sum", 8) for r in range(N)]
    y = torch.empty(33, dtype=torch.int64)
    dist.scatter(y, parts if rank == 0 else None, src=0)
    assert torch.equal(y, parts[rank]), "scatter"
    # all_to_all with unequal sizes: rank r sends r + p + 1 rows of int32 to rank p
    ins = [torch.full((rank + p + 1, 2), 10 * rank + p, dtype=torch.int32) for p in range(N)]
    outs = [torch.empty((p + rank + 1, 2), dtype=torch.int32) for p in range(N)]
    dist.all_to_all(outs, ins)
    for p in range(N):
        assert torch.all(outs[p] == 10 * p + rank), "all_to_all from %d" % p
    sizes = [p + 1 for p in range(N)]  # all_to_all_single: rank r sends p + 1 rows to rank p
    src = torch.cat([torch.full((p + 1,), 100 * rank + p, dtype=torch.float64) for p in range(N)])
    dst = torch.empty((rank + 1) * N, dtype=torch.float64)
    dist.all_to_all_single(dst, src, [rank + 1] * N, sizes)
    want = torch.cat([torch.full((rank + 1,), 100.0 * p + rank) for p in range(N)])
    assert torch.equal(dst, want), "all_to_all_single"
    y = torch.empty(5, dtype=torch.int64)  # send/recv along a chain 0 -> 1 -> 2
    if rank > 0:
        dist.recv(y, src=rank - 1)
        assert torch.equal(y, torch.arange(5) * rank), "recv"
    if rank < N - 1:
        dist.send(torch.arange(5) * (rank + 1), dst=rank + 1)


def check_reduce_and_scatter(rank, gloo, against):
    for salt, dtype in enumerate([torch.int64, torch.float32, torch.bfloat16]):
        for op in ("sum", "max"):
            inputs = [make(r, 301, dtype, op, 40 + salt) for r in range(N)]
            x = inputs[rank].clone()
            dist.reduce(x, dst=1, op=OPS[op])
            if rank == 1:
                close(x, reference(inputs, op), dtype, "reduce %s %s" % (dtype, op))
            big = [make(r, 3 * 97, dtype, op, 50 + salt) for r in range(N)]
            want = reference(big, op)[rank * 97:(rank + 1) * 97]
            out = torch.empty(97, dtype=dtype)
            dist.reduce_scatter(out, list(big[rank].split(97)), op=OPS[op])
            close(out, want, dtype, "reduce_scatter %s %s" % (dtype, op))
            out2 = torch.empty(97, dtype=dtype)
            dist.reduce_scatter_tensor(out2, big[rank], op=OPS[op])
            assert torch.equal(out, out2), "reduce_scatter_tensor %s %s" % (dtype, op)
    dist.barrier()


def check_async(rank):
    """Work objects: queued in order, completed by the completion thread; futures chain."""
    xs = [torch.full((20000,), float(rank + i)) for i in range(6)]
    works = [dist.all_reduce(x, async_op=True) for x in xs]
    chained = works[-1].get_future().then(lambda f: f.value()[0].sum().item())
    for w in reversed(works):
        assert w.wait() is True
        assert w.is_completed()
    for i, x in enumerate(xs):
        assert torch.all(x == sum(r + i for r in range(N))), "async all_reduce %d" % i
    assert chained.wait() == 20000 * sum(r + 5 for r in range(N))
    b = dist.barrier(async_op=True)
    b.wait()


def check_subgroup_and_ternary(rank):
    """new_group(backend="sieve") of ranks 0 and 2; a ternary group by pg_options gives the
    Philox reference (not the dense sum), and counts its bytes."""
    sub = dist.new_group([0, 2], backend="sieve")
    tern = dist.new_group(backend="sieve",
                          pg_options=sieve.torch.Options(allreduce="ternary", seed=9,
                                                         block_size=64))
    if rank in (0, 2):
        x = torch.full((10,), float(rank + 1))
        dist.all_reduce(x, group=sub)
        assert torch.all(x == 4.0), "sieve subgroup"
    inputs = [make(r, 4099, torch.float32, "avg", 60) for r in range(N)]
    for step in range(2):
        x = inputs[rank].clone()
        dist.all_reduce(x, op=dist.ReduceOp.AVG, group=tern)
        want = ternary_avg([i.numpy() for i in inputs], seed=9, step=step, block=64)
        assert np.array_equal(x.numpy(), want), "ternary step %d" % step
    assert not torch.equal(x, reference(inputs, "avg").float())
    y = torch.arange(10, dtype=torch.float64)  # float64 stays dense in ternary mode
    dist.all_reduce(y, group=tern)
    assert torch.equal(y, torch.arange(10, dtype=torch.float64) * N)
    assert tern.sieve_comm.counters()["collectives"] >= 3
    # 7 levels by configuration: sieveAllReduceQuantized, its own step count from 0.
    q7 = dist.new_group(backend="sieve", pg_options=sieve.torch.Options(allreduce="q7", seed=9,
                                                                        block_size=64))
    x = inputs[rank].clone()
    dist.all_reduce(x, op=dist.ReduceOp.AVG, group=q7)
    want = ternary_avg([i.numpy() for i in inputs], seed=9, step=0, block=64, levels=7)
    assert np.array_equal(x.numpy(), want), "q7"


W = 200


class Deep(torch.nn.Module):
    """Twelve 200x200 layers (1.9 MB): DDP's first bucket takes 1 MB, then one bucket per
    layer (bucket_cap_mb=0.15), so each step has several buckets."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(W, W) for _ in range(12))

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x


def grads_after_step(model, group, rank, hook=None, state=None, before=None):
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group,
                                                    bucket_cap_mb=0.15)
    if hook is not None:
        ddp.register_comm_hook(state, hook)
    g = torch.Generator().manual_seed(500 + rank)
    x, y = torch.randn(7, W, generator=g), torch.randn(7, W, generator=g)
    if before is not None:
        before()
    for _ in range(2):  # the second step runs on DDP's rebuilt buckets
        model.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
    return [p.grad.clone() for p in model.parameters()]


def check_ddp(rank):
    """2-rank DDP: sieve group vs Gloo group, bit for bit; then the ternary hook over the
    sieve group (asynchronous) vs over a blocking communicator: the same bits."""
    s01 = dist.new_group([0, 1], backend="sieve")
    g01 = dist.new_group([0, 1], backend="gloo")
    if rank > 1:
        return
    torch.manual_seed(1)
    start = Deep()
    a, b = Deep(), Deep()
    a.load_state_dict(start.state_dict())
    b.load_state_dict(start.state_dict())
    ga, gb = grads_after_step(a, s01, rank), grads_after_step(b, g01, rank)
    assert all(torch.equal(x, y) for x, y in zip(ga, gb)), "DDP gradients differ from Gloo's"

    from sieve import hooks
    blocking = sieve.Comm.from_process_group(g01)
    asy_state = hooks.TernaryState(s01, seed=3, block_size=64)
    syn_state = hooks.TernaryState(blocking, seed=3, block_size=64)
    returned_done = []
    gate = __import__("threading").Event()

    def watching(state, bucket):
        fut = hooks.ternary_hook(state, bucket)
        returned_done.append(fut.done())
        gate.set()
        return fut
    c, d = Deep(), Deep()
    c.load_state_dict(start.state_dict())
    d.load_state_dict(start.state_dict())
    # A task holding the queue until the first hook has returned: its future cannot be done.
    gc = grads_after_step(c, s01, rank, watching, asy_state,
                          before=lambda: s01.sieve_comm.submit(lambda run: gate.wait()))
    gd = grads_after_step(d, g01, rank, hooks.ternary_hook, syn_state)
    assert all(torch.equal(x, y) for x, y in zip(gc, gd)), "async hook differs from blocking"
    assert returned_done[0] is False and len(returned_done) >= 6, returned_done
    assert asy_state.step == syn_state.step == len(returned_done)
    blocking.destroy()


def collectives_rank(rank, n, port):
    dist.init_process_group("sieve", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=n, timeout=datetime.timedelta(seconds=60))
    gloo = dist.new_group(backend="gloo")
    against = set()
    check_all_reduce(rank, gloo, against)
    check_data_movement(rank, gloo, against)
    check_reduce_and_scatter(rank, gloo, against)
    check_async(rank)
    check_subgroup_and_ternary(rank)
    check_ddp(rank)
    dist.barrier()
    dist.destroy_process_group()
    return sorted(against)


def test_every_collective_against_gloo():
    results = run_ranks(N, collectives_rank, free_port(), timeout=400)
    against = results[0]
    # Gloo implemented most pairs: the comparison is not vacuous.
    assert sum(1 for a in against if a[0] == "all_reduce") >= 20, against
