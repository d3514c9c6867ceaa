"""What the three example trainers share: the launch environment (torchrun-style RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT), the data (scikit-learn's digits, shipped offline,
sharded across ranks), the timed training loop with periodic evaluation (evaluation time
is not on the clock), byte accounting, the time-to-accuracy table (with each run's step
time, its compute-only time and the communication time that leaves, and bytes per step)
and the PNG plot."""
import argparse
import copy
import importlib
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
import sieve  # noqa: E402


def parse(description, **defaults):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--steps", type=int, default=defaults.get("steps", 150))
    ap.add_argument("--eval-every", type=int, default=defaults.get("eval_every", 5))
    ap.add_argument("--batch", type=int, default=defaults.get("batch", 32),
                    help="samples per rank per step")
    ap.add_argument("--lr", type=float, default=defaults.get("lr", 0.05))
    ap.add_argument("--out", default=os.environ.get("SIEVE_EXAMPLE_OUT", "example-out"))
    ap.add_argument("--runs", default="ddp,sieve", help="which runs, in order")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", default=os.environ.get("SIEVE_EXAMPLE_BACKEND", "gloo"),
                    help="torch.distributed backend: gloo, or sieve (plain DDP then runs on "
                         "Sieve's all-reduce, SIEVE_TORCH_ALLREDUCE says which, and the Sieve "
                         "hooks queue on the backend's completion thread)")
    ap.add_argument("--clip", type=float, default=defaults.get("clip", 0.0),
                    help="clip the (already averaged) gradient norm; 0 = off")
    ap.add_argument("--bucket-copies", action="store_true",
                    help="DDP copies gradients into its buckets and back (PyTorch's default); "
                         "without it gradients are views into the buckets (trainers that build "
                         "DDP with common.ddp: pactrain)")
    ap.add_argument("--warm-epochs", type=int, default=defaults.get("warm_epochs", 1),
                    help="epochs of the untimed dense warm start (the 'pretrained' model)")
    for name, (typ, val, helptext) in defaults.get("extra", {}).items():
        ap.add_argument("--" + name, type=typ, default=val, help=helptext)
    return ap.parse_args()


class Context:
    """One rank's view: process group (args.backend, for DDP), Sieve communicator (the sieve
    backend's own, asynchronous, or a blocking one beside Gloo), data shard."""

    def __init__(self, args):
        torch.set_num_threads(1)
        self.args = args
        self.rank, self.size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        if args.backend == "sieve":
            importlib.import_module("sieve.torch")  # registers the backend
        dist.init_process_group(args.backend)  # env:// (MASTER_ADDR/MASTER_PORT)
        sieve_pg = getattr(dist.group.WORLD, "sieve_comm", None)
        self.comm = sieve_pg or sieve.Comm.from_process_group()
        self.ifname = os.environ.get("SIEVE_SOCKET_IFNAME", "lo")
        from sklearn.datasets import load_digits
        d = load_digits()
        x = torch.tensor(d.data / 16.0, dtype=torch.float32)
        y = torch.tensor(d.target, dtype=torch.int64)
        perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(1234))
        ntest = len(y) // 5
        self.xtest, self.ytest = x[perm[:ntest]], y[perm[:ntest]]
        train = perm[ntest:]
        self.xtrain_all, self.ytrain_all = x[train], y[train]
        mine = train[self.rank::self.size]  # this rank's shard
        self.x, self.y = x[mine], y[mine]
        self.batches_per_epoch = (len(train) // self.size) // args.batch  # same on all ranks

    def batch_index(self, step, rank=None):
        """Micro-batch id of rank's step: the shard cut into fixed micro-batches, visited in
        a fresh order each epoch (so per-micro-batch scores stay valid)."""
        epoch, i = divmod(step, self.batches_per_epoch)
        seed = epoch * 97 + (self.rank if rank is None else rank)
        order = torch.randperm(self.batches_per_epoch, generator=torch.Generator().manual_seed(seed))
        return int(order[i])

    def batch(self, step):
        b = self.batch_index(step) * self.args.batch
        return self.x[b:b + self.args.batch], self.y[b:b + self.args.batch]

    def micro_batches(self):
        for i in range(self.batches_per_epoch):
            b = i * self.args.batch
            yield i, self.x[b:b + self.args.batch], self.y[b:b + self.args.batch]

    def tx_bytes(self):
        """Bytes this namespace's interface sent (exact per rank in the testbed only)."""
        try:
            with open("/sys/class/net/%s/statistics/tx_bytes" % self.ifname) as f:
                return int(f.read())
        except OSError:
            return 0


@torch.no_grad()
def accuracy(model, ctx):
    model.eval()
    acc = float((model(ctx.xtest).argmax(1) == ctx.ytest).float().mean())
    model.train()
    return acc


def warm_start(model, ctx, lr=0.05):
    """The 'pretrained' starting point: a short dense training on the first half of the
    training set, identical on every rank (no communication, not timed)."""
    torch.manual_seed(ctx.args.seed)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    half = len(ctx.ytrain_all) // 2
    for _ in range(ctx.args.warm_epochs):
        for b in range(0, half - 31, 32):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(ctx.xtrain_all[b:b + 32]),
                                              ctx.ytrain_all[b:b + 32]).backward()
            opt.step()
    return model


def ddp(model, args, **kwargs):
    """DistributedDataParallel over model; gradients are views into DDP's buckets unless
    --bucket-copies (no copy into the buckets before the exchange and back after it)."""
    return torch.nn.parallel.DistributedDataParallel(
        model, gradient_as_bucket_view=not args.bucket_copies, **kwargs)


def compute_only_seconds(ctx, module, opt, forward=None, steps=5):
    """Mean time of one step without communication: forward, backward and optimizer step on
    a copy of the model and its optimizer, on this rank's batches (not on the clock; the model
    itself is untouched). Measured before the run, so a step's communication time is the
    run's step time minus this."""
    model, optimizer = copy.deepcopy((module, opt))
    forward = forward or (lambda m, x, step: m(x))
    total = 0.0
    for step in range(steps + 1):  # the first step warms up (allocations)
        x, y = ctx.batch(step)
        t0 = time.perf_counter()
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(forward(model, x, step), y).backward()
        optimizer.step()
        if step > 0:
            total += time.perf_counter() - t0
    return total / steps


def train(ctx, name, ddp, opt, forward=None, before_step=None, eval_model=None,
          setup_seconds=0.0, compute_forward=None):
    """Runs ctx.args.steps steps; returns the record of this run (rank's view).
    forward(x, step) defaults to ddp(x); before_step(step) runs inside the clock;
    eval_model() gives the model to evaluate (it may communicate: not timed, not counted);
    setup_seconds: time spent before training that belongs on the clock (e.g. a scoring
    pre-pass); compute_forward(model, x, step): forward's computation on a plain copy of
    the model, for the compute-only time (default model(x))."""
    args = ctx.args
    forward = forward or (lambda x, step: ddp(x))
    eval_model = eval_model or (lambda: ddp.module)
    compute_s = compute_only_seconds(ctx, ddp.module, opt, compute_forward)
    dist.barrier()
    c0, tx0 = ctx.comm.counters(), ctx.tx_bytes()
    excluded_sieve, excluded_tx = 0, 0
    clock = setup_seconds
    cpu = 0.0  # this process's CPU seconds (every thread) over the timed steps
    curve = [(clock, 0, accuracy(eval_model(), ctx))]
    for step in range(args.steps):
        t0, p0 = time.perf_counter(), time.process_time()
        if before_step:
            before_step(step)
        x, y = ctx.batch(step)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(forward(x, step), y).backward()
        if args.clip > 0:
            torch.nn.utils.clip_grad_norm_(ddp.parameters(), args.clip)
        opt.step()
        clock += time.perf_counter() - t0
        cpu += time.process_time() - p0
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            e0, et0 = ctx.comm.counters()["bytes_sent"], ctx.tx_bytes()
            curve.append((clock, step + 1, accuracy(eval_model(), ctx)))
            if ctx.rank == 0 and os.environ.get("SIEVE_EXAMPLE_PROGRESS", "1") != "0":
                print("[%s] step %d  %.1f s  acc %.3f" % (name, step + 1, clock, curve[-1][2]),
                      flush=True)
            excluded_sieve += ctx.comm.counters()["bytes_sent"] - e0
            excluded_tx += ctx.tx_bytes() - et0
    c1, tx1 = ctx.comm.counters(), ctx.tx_bytes()
    step_s = (clock - setup_seconds) / max(1, args.steps)
    return {"name": name, "curve": curve, "steps": args.steps, "step_s": step_s,
            "compute_s": compute_s, "cpu_s": cpu / max(1, args.steps),
            "sieve_bytes": c1["bytes_sent"] - c0["bytes_sent"] - excluded_sieve,
            "tx_bytes": tx1 - tx0 - excluded_tx, "rank": ctx.rank}


def final_accuracy(curve):
    """Mean of the last three evaluations (one evaluation swings by a point or two)."""
    tail = [acc for _, _, acc in curve[-3:]]
    return sum(tail) / len(tail)


def time_to(curve, target):
    for t, step, acc in curve:
        if acc >= target:
            return t, step
    return None, None


def report(ctx, records, nparams, note=""):
    """Gathers every rank's records; rank 0 prints the table, writes JSON and the plot."""
    everyone = [None] * ctx.size
    dist.all_gather_object(everyone, records)
    if ctx.rank != 0:
        return
    args = ctx.args
    os.makedirs(args.out, exist_ok=True)
    base = everyone[0][0]
    target = final_accuracy(base["curve"]) - 0.02  # the first run's final accuracy - 2 points
    dense_step_bytes = 2 * (ctx.size - 1) / ctx.size * 4 * nparams  # ring all-reduce
    stem = os.path.join(args.out, os.path.splitext(os.path.basename(sys.argv[0]))[0])
    with open(stem + ".json", "w") as f:
        json.dump({"target": target, "ranks": ctx.size, "ifname": ctx.ifname,
                   "records": everyone}, f, indent=1)
    lines = ["%s: %d ranks, %d params (%.2f MB fp32), %d steps x %d samples/rank; target = "
             "%s final accuracy (mean of the last 3 evaluations) - 2 points = %.3f%s" % (
                 os.path.basename(sys.argv[0]), ctx.size, nparams, 4 * nparams / 1e6,
                 args.steps, args.batch, base["name"], target, note),
             "| run | final acc (last 3) | time to target (s) | steps to target | train time (s) | "
             "speedup | step (ms) | compute-only (ms) | communication (ms) | CPU/rank (ms/step) | "
             "payload B/rank/step | iface tx B/rank/step |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    tta0 = time_to(base["curve"], target)[0]
    for i, rec in enumerate(everyone[0]):
        runs = [everyone[r][i] for r in range(ctx.size)]
        t, s = time_to(rec["curve"], target)
        if rec["name"].startswith("ddp"):
            payload = "%.0f (ring est.)" % dense_step_bytes
        else:
            payload = "%.0f" % (max(r["sieve_bytes"] for r in runs) / rec["steps"])
        tx = max(r["tx_bytes"] for r in runs) / rec["steps"]
        # The slowest rank's step (every rank waits for it); compute-only: the ranks' mean.
        step_ms = 1e3 * max(r["step_s"] for r in runs)
        compute_ms = 1e3 * sum(r["compute_s"] for r in runs) / len(runs)
        cpu_ms = 1e3 * sum(r.get("cpu_s", 0.0) for r in runs) / len(runs)
        lines.append("| %s | %.3f | %s | %s | %.1f | %s | %.1f | %.1f | %.1f | %.1f | %s | %s |" % (
            rec["name"], final_accuracy(rec["curve"]), "-" if t is None else "%.1f" % t,
            "-" if s is None else s, rec["curve"][-1][0],
            "-" if not (t and tta0) else "%.1fx" % (tta0 / t),
            step_ms, compute_ms, max(0.0, step_ms - compute_ms), cpu_ms,
            payload, "%.0f" % tx if ctx.ifname != "lo" else "n/a (lo shared)"))
    text = "\n".join(lines)
    print(text, flush=True)
    with open(stem + ".md", "w") as f:
        f.write(text + "\n")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for rec in everyone[0]:
        ax.plot([c[0] for c in rec["curve"]], [c[2] for c in rec["curve"]], marker=".",
                label=rec["name"])
    ax.axhline(target, color="gray", ls="--", lw=0.8, label="target %.3f" % target)
    ax.set_xlabel("wall-clock training time (s)")
    ax.set_ylabel("test accuracy")
    ax.set_title("%s, %d ranks, link %s" % (os.path.basename(stem), ctx.size,
                                           os.environ.get("SIEVE_EXAMPLE_LINK", ctx.ifname)))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(stem + ".png", dpi=110)
    print("wrote %s.{md,json,png}" % stem, flush=True)


def finish(ctx):
    dist.barrier()
    if getattr(dist.group.WORLD, "sieve_comm", None) is not ctx.comm:
        ctx.comm.destroy()  # a blocking one of our own; the backend's goes with its group
    dist.destroy_process_group()
