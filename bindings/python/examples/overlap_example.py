"""Does a bucket's exchange overlap the backward of the next? DDP with bucket_cap_mb=1 on an
MLP whose gradient falls into >= 8 buckets, on the "sieve" backend. Rank 0 prints, per way of
stepping, the median over --rounds of the mean step time (the rounds interleave the ways, so
a change in the machine's load hits all of them alike), the CPU seconds per step (mean over
ranks, every thread of the process) and the bytes each rank sent per step:

  compute   DDP under no_sync(): forward + backward + optimizer, no communication and no
            bucket work (the goal's baseline)
  noop      the same DDP with a hook that returns its bucket at once: DDP's bucket handling
            (copies into and out of the buckets unless gradients are bucket views), no exchange
  comm      the same buckets exchanged back to back by the hook, no computation
  sync      the hook over a blocking sieve.Comm: each exchange inside the hook (no overlap)
  async     the hook over the backend's group: queued on the completion thread, overlapping

Gradients are views into DDP's buckets (gradient_as_bucket_view) unless --bucket-copies.
Goal (issue 21): async <= max(compute, comm) + 15%. DDP cannot overlap the forward pass and
the optimizer step with the exchange (the next forward needs every bucket averaged), so the
example also prints async against fwd+opt (forward and optimizer step of the compute way)
+ comm: the least an overlapping step can take when communication outlasts backward.
SIEVE_WORKER_REALTIME=1 runs the backend's background thread under SCHED_RR (docs/bench/
overlap-ddp.md: with ranks sharing cores its exchanges otherwise wait for computing threads).

    bindings/python/examples/run_example.sh overlap [--testbed] -- --hook ternary
"""
import argparse
import os
import statistics
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
    ap.add_argument("--steps", type=int, default=4, help="timed steps per way and round")
    ap.add_argument("--rounds", type=int, default=6, help="interleaved rounds (median taken)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--hook", choices=("dense", "ternary"), default="dense")
    ap.add_argument("--bucket-cap-mb", type=float, default=1.0)
    ap.add_argument("--bucket-copies", action="store_true",
                    help="gradient_as_bucket_view=False: DDP copies gradients into its buckets "
                         "and back (PyTorch's default)")
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


class Bucket:  # what the hooks read of DDP's GradBucket
    def __init__(self, i, buf):
        self.i, self.buf = i, buf

    def buffer(self):
        return self.buf

    def index(self):
        return self.i

    def parameters(self):
        return [self.buf]


def noop_hook(_, bucket):
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def main():
    args = parse()
    torch.set_num_threads(1)
    dist.init_process_group("sieve")
    rank = dist.get_rank()
    pg = dist.group.WORLD
    pg_comm = pg.sieve_comm
    blocking = sieve.Comm.from_process_group()
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(args.batch, args.width, generator=g)
    y = torch.randn(args.batch, args.width, generator=g)
    sizes = []  # bucket sizes, from one step with a recording hook

    fwd_opt = []  # seconds of forward + optimizer step, per compute-way step

    def stepper(hook=None, state=None, no_sync=False):
        """A step of a fresh DDP model (optionally with a comm hook)."""
        model = mlp(args)
        opt = torch.optim.SGD(model.parameters(), lr=1e-4)
        ddp = torch.nn.parallel.DistributedDataParallel(
            model, bucket_cap_mb=args.bucket_cap_mb,
            gradient_as_bucket_view=not args.bucket_copies)
        if hook is not None:
            ddp.register_comm_hook(state, hook)

        def step():
            opt.zero_grad()
            torch.nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()
        if not no_sync:
            return step

        def no_sync_step():  # also times its forward and optimizer step
            with ddp.no_sync():
                t0 = time.perf_counter()
                opt.zero_grad()
                out = ddp(x)
                t1 = time.perf_counter()
                torch.nn.functional.mse_loss(out, y).backward()
                t2 = time.perf_counter()
                opt.step()
                fwd_opt.append(t1 - t0 + time.perf_counter() - t2)
        return no_sync_step

    def recording(state, bucket):
        sizes.append(bucket.buffer().numel())
        return hooks.masked_hook(state, bucket)
    record = stepper(recording, hooks.MaskedState(blocking, {}))
    for _ in range(2):  # the second step has the rebuilt buckets
        sizes.clear()
        record()
    buffers = [torch.randn(n, generator=g) / 100 for n in sizes]
    st, hook = state_for(args, pg)

    def comm_only():
        for fut in [hook(st, Bucket(i, b)) for i, b in enumerate(buffers)]:
            fut.wait()
    ways = {"compute": (stepper(no_sync=True), None),
            "noop": (stepper(noop_hook), None),
            "comm": (comm_only, pg_comm),
            "sync": (stepper(*reversed(state_for(args, blocking))), blocking),
            "async": (stepper(*reversed(state_for(args, pg))), pg_comm)}
    wall = {k: [] for k in ways}
    cpu = {k: 0.0 for k in ways}
    sent = {}  # bytes this rank sent per step (Sieve's counters; the barriers' included)
    for fn, _ in ways.values():
        for _ in range(args.warmup):
            fn()
    for _ in range(args.rounds):
        for name, (fn, comm) in ways.items():
            dist.barrier()
            c0 = comm.counters()["bytes_sent"] if comm is not None else 0
            t0, p0 = time.perf_counter(), time.process_time()
            for _ in range(args.steps):
                fn()
            dist.barrier()  # the slowest rank's time
            wall[name].append((time.perf_counter() - t0) / args.steps)
            cpu[name] += time.process_time() - p0
            if comm is not None:
                sent[name] = sent.get(name, 0) + comm.counters()["bytes_sent"] - c0
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, (cpu, statistics.median(fwd_opt)))
    if rank == 0:
        n = args.rounds * args.steps
        results = {k: statistics.median(v) for k, v in wall.items()}
        nparams = sum(p.numel() for p in mlp(args).parameters())
        bound = max(results["compute"], results["comm"])
        print("overlap: %d ranks, %d params (%.1f MB fp32) in %d buckets %s, hook %s, batch %d, "
              "%s; median of %d rounds x %d steps; load %s"
              % (dist.get_world_size(), nparams, 4e-6 * nparams, len(sizes), sizes, args.hook,
                 args.batch, "bucket copies" if args.bucket_copies else "gradients as bucket views",
                 args.rounds, args.steps, " ".join(open("/proc/loadavg").read().split()[:3])))
        floor = max(f for _, f in everyone) + results["comm"]  # the slowest rank's
        for k in ways:
            print("  %-8s %7.3f s/step  cpu %6.3f s/step/rank%s" % (
                k, results[k], sum(c[k] for c, _ in everyone) / len(everyone) / n,
                "  %10.0f B sent/step" % (sent[k] / n) if k in sent else ""))
        print("  async / max(compute, comm) = %.2f (goal <= 1.15); sync / async = %.2f; "
              "async / (fwd+opt %.3f + comm) = %.2f"
              % (results["async"] / bound, results["sync"] / results["async"],
                 floor - results["comm"], results["async"] / floor), flush=True)
    dist.barrier()
    blocking.destroy()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
