"""Does a bucket's exchange overlap the backward of the next? DDP with bucket_cap_mb=1 on an
MLP whose gradient falls into >= 8 buckets, on the "sieve" backend, four ways (rank 0 prints
the mean step time of each, after warm-up, and the bytes each rank sent per step):

  compute   DDP under no_sync(): forward + backward + optimizer, no communication
  comm      the same buckets exchanged back to back by the hook, no computation
  sync      the hook over a blocking sieve.Comm: each exchange inside the hook (no overlap)
  async     the hook over the backend's group: queued on the completion thread, overlapping

Goal (issue 21): async <= max(compute, comm) + 15%.

    bindings/python/examples/run_example.sh overlap [--testbed] -- --hook ternary
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
import sieve  # noqa: E402
import sieve.torch  # noqa: E402,F401
from sieve import hooks  # noqa: E402


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=512, help="512: 1 MB per layer (fp32)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=8, help="timed steps per variant")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--hook", choices=("dense", "ternary"), default="dense")
    ap.add_argument("--bucket-cap-mb", type=float, default=1.0)
    return ap.parse_args()


def mlp(args):
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers)


def state_for(args, comm):
    if args.hook == "ternary":
        return hooks.TernaryState(comm, seed=7, error_feedback=True), hooks.ternary_hook
    return hooks.MaskedState(comm, {}), hooks.masked_hook  # no masks: dense average


def timed(fn, args, comm=None, sent=None, name=None):
    """Mean seconds per step of fn; with `comm`, sent[name] = its bytes sent per step."""
    for _ in range(args.warmup):
        fn()
    dist.barrier()
    c0 = comm.counters()["bytes_sent"] if comm is not None else 0
    t0 = time.perf_counter()
    for _ in range(args.steps):
        fn()
    dist.barrier()
    if comm is not None:
        sent[name] = (comm.counters()["bytes_sent"] - c0) / args.steps
    return (time.perf_counter() - t0) / args.steps


def main():
    args = parse()
    torch.set_num_threads(1)
    dist.init_process_group("sieve")
    rank = dist.get_rank()
    pg = dist.group.WORLD
    blocking = sieve.Comm.from_process_group()
    model = mlp(args)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(args.batch, args.width, generator=g)
    y = torch.randn(args.batch, args.width, generator=g)
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)

    sizes = []  # bucket sizes, from one step with a recording hook

    def step():
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()

    def no_sync_step():
        with ddp.no_sync():
            step()
    results = {"compute": timed(no_sync_step, args)}

    def recording(state, bucket):
        sizes.append(bucket.buffer().numel())
        return hooks.masked_hook(state, bucket)
    ddp.register_comm_hook(hooks.MaskedState(blocking, {}), recording)
    for _ in range(2):  # the second step has the rebuilt buckets
        sizes.clear()
        step()
    buffers = [torch.randn(n, generator=g) / 100 for n in sizes]
    st, hook = state_for(args, pg)

    class Bucket:  # what the hooks read of DDP's GradBucket
        def __init__(self, i, buf):
            self.i, self.buf = i, buf

        def buffer(self):
            return self.buf

        def index(self):
            return self.i

        def parameters(self):
            return [self.buf]

    def comm_only():
        for fut in [hook(st, Bucket(i, b)) for i, b in enumerate(buffers)]:
            fut.wait()
    sent = {}  # bytes this rank sent per step (Sieve's counters; the barriers' included)
    pg_comm = pg.sieve_comm
    results["comm"] = timed(comm_only, args, pg_comm, sent, "comm")
    for name, comm in (("sync", blocking), ("async", pg)):
        model2 = mlp(args)
        opt = torch.optim.SGD(model2.parameters(), lr=1e-4)
        ddp = torch.nn.parallel.DistributedDataParallel(model2, bucket_cap_mb=args.bucket_cap_mb)
        ddp.register_comm_hook(*state_for(args, comm))
        results[name] = timed(step, args, blocking if comm is blocking else pg_comm, sent, name)
    if rank == 0:
        nparams = sum(p.numel() for p in model.parameters())
        bound = max(results["compute"], results["comm"])
        print("overlap: %d ranks, %d params (%.1f MB fp32) in %d buckets %s, hook %s, batch %d"
              % (dist.get_world_size(), nparams, 4e-6 * nparams, len(sizes), sizes, args.hook,
                 args.batch))
        for k in ("compute", "comm", "sync", "async"):
            print("  %-8s %7.3f s/step%s" % (
                k, results[k], "  %10.0f B sent/step" % sent[k] if k in sent else ""))
        print("  async / max(compute, comm) = %.2f (goal <= 1.15); sync / async = %.2f"
              % (results["async"] / bound, results["sync"] / results["async"]), flush=True)
    dist.barrier()
    blocking.destroy()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
