"""Elastic data-parallel training with Sieve (docs/membership.md): 4 ranks train an MLP on
scikit-learn's digits; mid-run one rank is killed (SIGKILL); the survivors agree on who
failed, shrink, take a 1/3 shard each and scale the learning rate by 3/4 (linear scaling:
each rank keeps its batch, so the global batch shrinks), and redo the step that failed; at a
later step boundary a new rank joins with a grow, receives the model and the optimizer state
from rank 0 by broadcast, and training goes on with 4 ranks and the full learning rate. A
failure-free run of the same length is the baseline: the elastic run must reach the
baseline's final accuracy (minus 1 point) within 1.3x its time.

Run: /usr/bin/python3 elastic_example.py [--steps N] [--testbed [--rate 100mbit]]
It launches every process itself (no torch.distributed: a Gloo group would not survive the
death). --testbed (root): one rank per namespace of the shaped testbed (sieve-testbed, prefix
el-), the new rank in the dead rank's namespace (a replacement machine)."""
import argparse
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
import sieve  # noqa: E402
from sieve.errors import SieveError  # noqa: E402

RANKS, VICTIM = 4, 3


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--kill-step", type=int, default=150)
    ap.add_argument("--grow-step", type=int, default=200)
    ap.add_argument("--batch", type=int, default=16, help="samples per rank per step")
    ap.add_argument("--lr", type=float, default=0.05, help="with 4 ranks")
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--out", default=os.environ.get("SIEVE_EXAMPLE_OUT", "example-out"))
    ap.add_argument("--testbed", action="store_true", help="shaped namespaces (root)")
    ap.add_argument("--rate", default="100mbit", help="testbed link rate")
    ap.add_argument("--worker", choices=["member", "joiner"], help=argparse.SUPPRESS)
    ap.add_argument("--mode", choices=["baseline", "elastic"], help=argparse.SUPPRESS)
    return ap.parse_args()


@functools.lru_cache(maxsize=None)
def data():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.data / 16.0, dtype=torch.float32)
    y = torch.tensor(d.target, dtype=torch.int64)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(1234))
    ntest = len(y) // 5
    return x[perm[ntest:]], y[perm[ntest:]], x[perm[:ntest]], y[perm[:ntest]]


def model():
    torch.manual_seed(0)  # the same initial weights on every rank
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))


def flat(tensors):
    return torch.cat([t.reshape(-1) for t in tensors])


def unflat(vec, tensors):
    i = 0
    for t in tensors:
        t.copy_(vec[i:i + t.numel()].view_as(t))
        i += t.numel()


class Trainer:
    """One rank: its communicator, its shard (rank r of n takes every n-th sample), SGD with
    momentum on gradients averaged by Sieve."""

    def __init__(self, args, comm, step=0):
        self.args, self.comm, self.step = args, comm, step
        self.xtrain, self.ytrain, self.xtest, self.ytest = data()
        self.net = model()
        self.opt = torch.optim.SGD(self.net.parameters(), lr=args.lr, momentum=0.9)
        for p in self.net.parameters():  # momentum buffers exist from the start (broadcastable)
            self.opt.state[p]["momentum_buffer"] = torch.zeros_like(p)
        self.rescale()

    def rescale(self):
        """Shard and learning rate for the current membership."""
        r, n = self.comm.rank, self.comm.size
        self.x, self.y = self.xtrain[r::n], self.ytrain[r::n]
        for g in self.opt.param_groups:
            g["lr"] = self.args.lr * n / RANKS

    def batch(self):
        per_epoch = len(self.y) // self.args.batch
        epoch, i = divmod(self.step, per_epoch)
        order = torch.randperm(per_epoch, generator=torch.Generator().manual_seed(epoch))
        b = int(order[i]) * self.args.batch
        return self.x[b:b + self.args.batch], self.y[b:b + self.args.batch]

    def state(self):
        params = list(self.net.parameters())
        return [p.data for p in params] + [self.opt.state[p]["momentum_buffer"] for p in params]

    def share_state(self):
        """Rank 0's model, momentum and step to every rank (after a grow)."""
        vec = torch.cat([flat(self.state()), torch.tensor([float(self.step)])])
        self.comm.broadcast(vec, root=0)
        unflat(vec[:-1], self.state())
        self.step = int(vec[-1])

    def train_step(self):
        """One step; False when the all-reduce failed (the step is then not applied)."""
        x, y = self.batch()
        self.opt.zero_grad()
        torch.nn.functional.cross_entropy(self.net(x), y).backward()
        params = list(self.net.parameters())
        g = flat([p.grad for p in params])
        try:
            self.comm.all_reduce(g, op="avg")
        except SieveError as e:
            print("rank %d: step %d failed: %s" % (self.comm.rank, self.step, e.message[:160]),
                  flush=True)
            return False
        unflat(g, [p.grad for p in params])
        self.opt.step()
        self.step += 1
        return True

    @torch.no_grad()
    def accuracy(self):
        return float((self.net(self.xtest).argmax(1) == self.ytest).float().mean())

    def recover(self):
        t0 = time.perf_counter()
        failed = self.comm.failed_ranks()
        new = self.comm.shrink(failed)
        self.comm.destroy()
        self.comm = new
        self.rescale()
        print("rank %d: ranks %s failed; shrunk to %d ranks in %.3f s" % (
            new.rank, failed, new.size, time.perf_counter() - t0), flush=True)

    def grow(self, workdir):
        t0 = time.perf_counter()
        gid = None
        if self.comm.rank == 0:
            gid = self.comm.grow_id()
            with open(os.path.join(workdir, "gid.tmp"), "w") as f:
                f.write(gid)
            os.rename(os.path.join(workdir, "gid.tmp"), os.path.join(workdir, "gid"))
        new = self.comm.grow(RANKS, gid)
        self.comm.destroy()
        self.comm = new
        self.share_state()
        self.rescale()
        took = time.perf_counter() - t0
        if new.rank == 0:
            print("grew to %d ranks at step %d in %.3f s" % (new.size, self.step, took), flush=True)
        return took


def wait_for(path, timeout_s=600):
    """Waits for a file another process writes (bounded: a crashed writer must not hang us)."""
    deadline = time.time() + timeout_s
    while not os.path.exists(path):
        if time.time() > deadline:
            raise SystemExit("%s did not appear within %d s" % (path, timeout_s))
        time.sleep(0.005)


def run_worker(args):
    workdir = os.environ["ELASTIC_DIR"]
    if args.worker == "joiner":
        path = os.path.join(workdir, "gid")
        data()  # ready before joining: the members wait for us in the model's broadcast
        wait_for(path)
        comm = sieve.join_grow(RANKS, open(path).read(), RANKS - 1)
        t = Trainer(args, comm)
        t.share_state()
        t.rescale()
    else:
        rank = int(os.environ["RANK"])
        with open(os.path.join(workdir, "pid.%d" % rank), "w") as f:
            f.write(str(os.getpid()))  # the launcher kills the victim by its pid
        uid_path = os.path.join(workdir, "uid")
        if rank == 0:  # rank 0 hosts the bootstrap root (in its namespace, on the testbed)
            with open(uid_path + ".tmp", "w") as f:
                f.write(sieve.get_unique_id())
            os.rename(uid_path + ".tmp", uid_path)
        wait_for(uid_path)
        t = Trainer(args, sieve.Comm(RANKS, open(uid_path).read(), rank))
        t.comm.all_reduce(torch.zeros(1))  # everyone is up: the clock starts
    elastic = args.mode == "elastic"
    start = time.time()  # only rank 0's clock is reported, and rank 0 is a member
    curve, evaluated = [], 0.0
    # Rank 0's wall clock at its first step on the shrunk communicator (the launcher knows when
    # it killed), and the grow's duration.
    events, recovering = {}, False
    while t.step < args.steps:
        if elastic and t.step == args.grow_step and t.comm.size < RANKS and args.worker != "joiner":
            events["grow_s"] = t.grow(workdir)
        if elastic and t.step == args.kill_step and t.comm.rank == 0 and t.comm.size == RANKS:
            open(os.path.join(workdir, "kill"), "w").close()  # the launcher kills the victim
        if not t.train_step():
            t.recover()
            recovering = True
            continue
        if recovering:
            events["resumed_at"], recovering = time.time(), False
        if t.comm.rank == 0 and t.step % args.eval_every == 0:
            e0 = time.perf_counter()
            acc = t.accuracy()
            evaluated += time.perf_counter() - e0
            curve.append((time.time() - start - evaluated, t.step, acc, t.comm.size))
    if t.comm.rank == 0:
        with open(os.path.join(workdir, "curve.json"), "w") as f:
            json.dump(dict(events, curve=curve), f)
    t.comm.destroy()


TESTBED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench",
                       "testbed", "sieve-testbed")


def launch(args, mode, workdir):
    """Runs one training (4 member processes; elastic: the victim killed, a joiner added)."""
    ifname = "sv0" if args.testbed else "lo"
    env = dict(os.environ, ELASTIC_DIR=workdir, SIEVE_SOCKET_IFNAME=ifname, UCX_NET_DEVICES=ifname,
               SIEVE_TIMEOUT=os.environ.get("SIEVE_TIMEOUT", "30"), OMP_NUM_THREADS="1")
    me = [sys.executable, os.path.abspath(__file__), "--mode", mode] + sys.argv[1:]

    def start(host, role, **extra):
        ns = [os.environ.get("SIEVE_TESTBED", TESTBED), "exec", str(host), "--prefix", "el-", "--"]
        return subprocess.Popen((ns if args.testbed else []) + me + ["--worker", role],
                                env=dict(env, **extra))

    procs = [start(r, "member", RANK=str(r)) for r in range(RANKS)]
    joiner = None
    if mode == "elastic":
        # The replacement starts now (a standby machine booting, in the namespace of the rank
        # that will die) and waits for the grow's id.
        joiner = start(VICTIM, "joiner")
        kill_file = os.path.join(workdir, "kill")
        while not os.path.exists(kill_file) and procs[0].poll() is None:
            time.sleep(0.001)
        killed_at = time.time()
        os.kill(int(open(os.path.join(workdir, "pid.%d" % VICTIM)).read()), signal.SIGKILL)
        print("launcher: killed rank %d (SIGKILL)" % VICTIM, flush=True)
    rcs = [p.wait() for p in procs] + ([joiner.wait()] if joiner else [])
    killed = (-signal.SIGKILL, 128 + signal.SIGKILL)  # directly, or through the testbed's shell
    bad = [(r, rc) for r, rc in enumerate(rcs)
           if not (rc == 0 or (mode == "elastic" and r == VICTIM and rc in killed))]
    if bad or (mode == "elastic" and rcs[VICTIM] not in killed):
        raise SystemExit("%s run: exit codes %s (rank %d is killed, the rest exit 0)" % (
            mode, rcs, VICTIM))
    with open(os.path.join(workdir, "curve.json")) as f:
        run = json.load(f)
    if mode == "elastic" and "resumed_at" in run:
        run["resumed_s"] = run["resumed_at"] - killed_at  # one machine: one wall clock
    return run


def final(curve):
    return sum(acc for _, _, acc, _ in curve[-3:]) / 3


def time_to(curve, target):
    """(seconds, step) when the mean of 3 consecutive evaluations first reaches target (one
    evaluation swings by a point or two); (None, None) if never."""
    for i in range(2, len(curve)):
        if sum(acc for _, _, acc, _ in curve[i - 2:i + 1]) / 3 >= target:
            return curve[i][0], curve[i][1]
    return None, None


def main():
    args = parse()
    if args.worker:
        return run_worker(args)
    os.makedirs(args.out, exist_ok=True)
    testbed = os.environ.get("SIEVE_TESTBED", TESTBED)
    if args.testbed:
        subprocess.run([testbed, "down", "--prefix", "el-"], stderr=subprocess.DEVNULL,
                       check=False)
        subprocess.run([testbed, "up", "--hosts", str(RANKS), "--rate", args.rate, "--prefix",
                        "el-"], check=True)
    load_before = os.getloadavg()[0]
    try:
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            base = launch(args, "baseline", a)
            elastic = launch(args, "elastic", b)
    finally:
        if args.testbed:
            subprocess.run([testbed, "down", "--prefix", "el-"], check=False)
    bc, ec = base["curve"], elastic["curve"]
    target = final(bc) - 0.01
    (tb, sb), (te, se) = time_to(bc, target), time_to(ec, target)
    lines = [
        "elastic_example: %d ranks (%s), %d steps x %d samples/rank; rank %d killed at step %d, "
        "a new rank joins at step %d; target = baseline final accuracy (mean of the last 3 "
        "evaluations) - 1 point = %.3f" % (
            RANKS, "testbed, %s links" % args.rate if args.testbed else "loopback", args.steps,
            args.batch, VICTIM, args.kill_step, args.grow_step, target),
        "| run | final acc (last 3) | time to target (s) | ratio | steps to target | train time (s) |",
        "|---|---|---|---|---|---|",
        "| failure-free | %.3f | %s | 1.00 | %s | %.2f |" % (
            final(bc), "%.2f" % tb if tb else "-", sb or "-", bc[-1][0]),
        "| elastic | %.3f | %s | %s | %s | %.2f |" % (
            final(ec), "%.2f" % te if te else "-", "%.2f" % (te / tb) if te and tb else "-",
            se or "-", ec[-1][0]),
        "elastic run: rank 0's first step on the shrunk communicator %s s after the kill; "
        "the grow (with the model's broadcast) took %s s" % (
            "%.3f" % elastic["resumed_s"] if "resumed_s" in elastic else "-",
            "%.3f" % elastic["grow_s"] if "grow_s" in elastic else "-"),
        "(load average %.1f before, %.1f after, on %d cores: times are wall clock)" % (
            load_before, os.getloadavg()[0], os.cpu_count()),
    ]
    text = "\n".join(lines)
    print(text, flush=True)
    with open(os.path.join(args.out, "elastic_example.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(args.out, "elastic_example.json"), "w") as f:
        json.dump({"target": target, "baseline": base, "elastic": elastic}, f, indent=1)
    ok = te is not None and tb is not None and final(ec) >= final(bc) - 0.01 and te <= 1.3 * tb
    print("goal (within 1 point, time to target <= 1.3x): %s" % ("met" if ok else "NOT met"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
