"""ProcessGroupSieve: torch.distributed's collectives over one non-blocking Sieve communicator.

Every call checks its tensors on the caller's thread (a bad argument raises there), then
queues one task on the AsyncComm; the completion thread issues it and completes the Work's
future (a failure becomes the future's SieveError, with Sieve's message). Tensors go to Sieve
by their data pointers: contiguous CPU tensors, no copies, except where PyTorch's list form
differs from Sieve's flat buffers (all_gather / reduce_scatter into or from lists).
"""
import datetime
import os

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroup

from ..async_comm import AsyncComm, scoped_env
from ..buffers import view
from ..comm import get_unique_id
from .options import Options
from .work import make_work
from . import device

UID_KEY = "sieve_unique_id"
_OPS = {"SUM": "sum", "PRODUCT": "prod", "MIN": "min", "MAX": "max", "AVG": "avg"}
TERNARY_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _op_name(reduce_op):
    op = getattr(reduce_op, "op", reduce_op)  # ReduceOp (2.x: wraps a RedOpType)
    name = getattr(op, "name", None) or str(op).split(".")[-1]
    if name not in _OPS:
        raise ValueError("sieve: reduce op %s is not supported (SUM, PRODUCT, MIN, MAX, AVG)"
                         % name)
    return _OPS[name]


def _one(tensors, what):
    if len(tensors) != 1:
        raise ValueError("sieve: %s takes one tensor per process, got %d" % (what, len(tensors)))
    return tensors[0]


def _bytes(t):
    """The tensor's elements as a flat uint8 view (data movement needs no dtype)."""
    return t.reshape(-1).view(torch.uint8)


def _check(t, what, any_dtype=False):
    """Argument errors raise on the caller's thread, before anything is queued."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("sieve: %s expects tensors, got %s" % (what, type(t).__name__))
    if not t.is_contiguous():
        raise ValueError("sieve: %s: tensor is not contiguous (Sieve never copies silently)"
                         % what)
    if t.device.type != "cpu":
        device.check_tensor(t, what)
    elif not any_dtype:
        view(t, what)  # raises SieveError for a dtype Sieve has no type for


def _timeout_s(timeout):
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout) if timeout else 0.0


class ProcessGroupSieve(ProcessGroup):
    """The "sieve" backend of one group. `sieve_comm` is its AsyncComm (the DDP hooks in
    sieve.hooks accept the group itself: its gradients then go through the same queue)."""

    def __init__(self, store, rank, size, timeout, options=None, name=None):
        super().__init__(rank, size)
        self.options = (options or Options()).resolved()
        self.timeout_s = _timeout_s(timeout)
        env = dict(self.options.comm_env)
        env["SIEVE_TIMEOUT"] = self.timeout_env()
        # The rendezvous goes through PyTorch's store: rank 0 makes the id (its bootstrap root
        # lives as long as SIEVE_TIMEOUT says), the others read it.
        if rank == 0:
            with scoped_env(env):
                uid = get_unique_id()
            store.set(UID_KEY, uid)
        else:
            uid = store.get(UID_KEY).decode()
        self.sieve_comm = AsyncComm(size, uid, rank, env=env,
                                    name="torch group %s" % name if name else "torch")
        self._ternary_step = 0
        self._barrier_buf = torch.zeros(1, dtype=torch.uint8)

    def timeout_env(self):
        """SIEVE_TIMEOUT for this communicator: PyTorch's timeout, unless PyTorch passed its
        default and the environment sets SIEVE_TIMEOUT (an explicit choice beats a default)."""
        default = getattr(dist, "default_pg_timeout", None)
        default_s = _timeout_s(default) if default is not None else None
        if os.environ.get("SIEVE_TIMEOUT") and (not self.timeout_s or
                                                self.timeout_s == default_s):
            return os.environ["SIEVE_TIMEOUT"]
        if self.timeout_s <= 0:
            return os.environ.get("SIEVE_TIMEOUT", "60")
        return ("%.3f" % self.timeout_s).rstrip("0").rstrip(".")  # Sieve reads plain decimals

    def getBackendName(self):
        return "sieve"

    def _get_backend_name(self):
        return "sieve"

    def name(self):
        return "sieve"

    # -- the one place work is queued -----------------------------------------------------
    def _submit(self, what, task, result):
        """Queues task(run, comm) and returns the Work; its future's value is `result`."""
        comm = self.sieve_comm.comm

        def body(run):
            task(run, comm)
            return result
        fut = self.sieve_comm.submit(body)
        return make_work(fut, what, depth=3)

    # -- reductions -----------------------------------------------------------------------
    def _all_reduce_call(self, t, op):
        """The one call all_reduce makes for tensor t: dense, or quantized by configuration."""
        comm = self.sieve_comm.comm
        o = self.options
        if o.ternary and t.dtype in TERNARY_DTYPES and op in ("sum", "avg") and t.numel() > 0:
            step, self._ternary_step = self._ternary_step, self._ternary_step + 1
            if o.levels == 1:
                return lambda: comm.all_reduce_ternary(t, op=op, seed=o.seed, step=step,
                                                       block_size=o.block_size,
                                                       error_feedback=o.error_feedback)
            return lambda: comm.all_reduce_quantized(t, levels=o.levels, op=op, seed=o.seed,
                                                     step=step, block_size=o.block_size,
                                                     error_feedback=o.error_feedback)
        return lambda: comm.all_reduce(t, op=op)

    def allreduce(self, tensors, opts=None):
        t = _one(tensors, "all_reduce")
        _check(t, "all_reduce")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        if t.device.type == "cuda":
            return device.all_reduce(self, t, op, make_work)
        call = self._all_reduce_call(t, op)
        return self._submit("all_reduce", lambda run, comm: run(call), list(tensors))

    def allreduce_coalesced(self, tensors, opts=None):
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        calls = []
        for t in tensors:
            _check(t, "all_reduce_coalesced")
            calls.append(self._all_reduce_call(t, op))
        return self._submit("all_reduce_coalesced",
                            lambda run, comm: [run(c) for c in calls], list(tensors))

    def reduce(self, tensors, opts):
        t = _one(tensors, "reduce")
        _check(t, "reduce")
        op, root = _op_name(opts.reduceOp), opts.rootRank
        if t.device.type == "cuda":
            return device.reduce(self, t, op, root, make_work)
        return self._submit("reduce", lambda run, comm: run(
            lambda: comm.reduce(t, op=op, root=root)), list(tensors))

    def broadcast(self, tensors, opts):
        t = _one(tensors, "broadcast")
        _check(t, "broadcast", any_dtype=True)
        root = opts.rootRank
        if t.device.type == "cuda":
            return device.broadcast(self, t, root, make_work)
        return self._submit("broadcast", lambda run, comm: run(
            lambda: comm.broadcast(_bytes(t), root=root)), list(tensors))

    def barrier(self, opts=None):
        b = self._barrier_buf
        return self._submit("barrier", lambda run, comm: run(lambda: comm.all_reduce(b)), [])

    # -- gathers and scatters -------------------------------------------------------------------
    def _allgather_base(self, output, input, opts=None):
        _check(input, "all_gather_into_tensor", any_dtype=True)
        _check(output, "all_gather_into_tensor", any_dtype=True)
        if output.numel() != input.numel() * self.size() or output.dtype != input.dtype:
            raise ValueError("sieve: all_gather_into_tensor: output must hold world_size x "
                             "input elements of the input's dtype")
        if input.device.type == "cuda":
            return device.all_gather(self, output, input, make_work)
        return self._submit("all_gather_into_tensor", lambda run, comm: run(
            lambda: comm.all_gather(_bytes(input), _bytes(output))), [output])

    all_gather_single = _allgather_base  # PyTorch 2.x's name

    def allgather(self, outputs, inputs, opts=None):
        t = _one(inputs, "all_gather")
        outs = _one(outputs, "all_gather")
        _check(t, "all_gather", any_dtype=True)
        if len(outs) != self.size() or any(o.numel() != t.numel() or o.dtype != t.dtype
                                           for o in outs):
            raise ValueError("sieve: all_gather: output list must hold world_size tensors "
                             "shaped like the input")
        for o in outs:
            _check(o, "all_gather", any_dtype=True)
        flat = torch.empty(self.size() * t.numel(), dtype=t.dtype, device=t.device)
        if t.device.type == "cuda":  # copies after the collective, in stream order
            work = device.all_gather(self, flat, t, make_work, "all_gather", list(outputs))
            for o, piece in zip(outs, flat.split(t.numel())):
                o.copy_(piece.view_as(o))
            return work

        def task(run, comm):
            run(lambda: comm.all_gather(_bytes(t), _bytes(flat)))
            for o, piece in zip(outs, flat.split(t.numel())):
                o.copy_(piece.view_as(o))
        return self._submit("all_gather", task, list(outputs))

    def _reduce_scatter_base(self, output, input, opts=None):
        _check(output, "reduce_scatter_tensor")
        _check(input, "reduce_scatter_tensor")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        if output.device.type == "cuda":
            return device.reduce_scatter(self, output, input, op, make_work)
        return self._submit("reduce_scatter_tensor", lambda run, comm: run(
            lambda: comm.reduce_scatter(input, output, op=op)), [output])

    reduce_scatter_single = _reduce_scatter_base

    def reduce_scatter(self, outputs, inputs, opts=None):
        out = _one(outputs, "reduce_scatter")
        ins = _one(inputs, "reduce_scatter")
        _check(out, "reduce_scatter")
        if len(ins) != self.size() or any(i.numel() != out.numel() or i.dtype != out.dtype
                                          for i in ins):
            raise ValueError("sieve: reduce_scatter: input list must hold world_size tensors "
                             "shaped like the output")
        op = _op_name(opts.reduceOp)
        flat = torch.cat([i.reshape(-1) for i in ins])
        return self._submit("reduce_scatter", lambda run, comm: run(
            lambda: comm.reduce_scatter(flat, out.view(-1), op=op)), list(outputs))

    # -- point to point and everything built on it ---------------------------------------------
    def _p2p(self, what, sends, recvs):
        """One Sieve group of sends [(tensor, peer)] and receives [(tensor, peer)]; a rank's
        exchange with itself is a copy."""
        me = self.rank()
        local = [(s, r) for s, ps in sends if ps == me for r, pr in recvs if pr == me]
        sends = [(s, p) for s, p in sends if p != me and s.numel() > 0]
        recvs = [(r, p) for r, p in recvs if p != me and r.numel() > 0]

        def task(run, comm):
            for s, r in local:
                r.copy_(s)
            if sends or recvs:
                def issue():
                    with comm.group():
                        for s, p in sends:
                            comm.send(_bytes(s), p)
                        for r, p in recvs:
                            comm.recv(_bytes(r), p)
                run(issue)
        return task

    def send(self, tensors, dst, tag=0):
        t = _one(tensors, "send")
        _check(t, "send", any_dtype=True)
        _no_tag(tag)
        return self._submit("send", self._p2p("send", [(t, dst)], []), list(tensors))

    def recv(self, tensors, src, tag=0):
        t = _one(tensors, "recv")
        _check(t, "recv", any_dtype=True)
        _no_tag(tag)
        return self._submit("recv", self._p2p("recv", [], [(t, src)]), list(tensors))

    def recv_anysource(self, tensors, tag=0):
        raise RuntimeError("sieve: recv from any source is not supported; name the source rank")

    def alltoall(self, outputs, inputs, opts=None):
        if len(outputs) != self.size() or len(inputs) != self.size():
            raise ValueError("sieve: all_to_all takes world_size input and output tensors")
        for t in list(outputs) + list(inputs):
            _check(t, "all_to_all", any_dtype=True)
        peers = range(self.size())
        return self._submit("all_to_all", self._p2p("all_to_all", list(zip(inputs, peers)),
                                                    list(zip(outputs, peers))), list(outputs))

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        _check(output, "all_to_all_single", any_dtype=True)
        _check(input, "all_to_all_single", any_dtype=True)
        n = self.size()
        outs = _split(output, output_split_sizes, n, "output")
        ins = _split(input, input_split_sizes, n, "input")
        peers = range(n)
        return self._submit("all_to_all_single", self._p2p("all_to_all_single",
                                                           list(zip(ins, peers)),
                                                           list(zip(outs, peers))), [output])

    all_to_all_single = alltoall_base

    def gather(self, outputs, inputs, opts):
        t = _one(inputs, "gather")
        _check(t, "gather", any_dtype=True)
        root, me = opts.rootRank, self.rank()
        if me == root:
            outs = _one(outputs, "gather")
            if len(outs) != self.size():
                raise ValueError("sieve: gather: the root's list must hold world_size tensors")
            task = self._p2p("gather", [(t, root)], list(zip(outs, range(self.size()))))
        else:
            task = self._p2p("gather", [(t, root)], [])
        return self._submit("gather", task, list(outputs))

    def scatter(self, outputs, inputs, opts):
        t = _one(outputs, "scatter")
        _check(t, "scatter", any_dtype=True)
        root, me = opts.rootRank, self.rank()
        if me == root:
            ins = _one(inputs, "scatter")
            if len(ins) != self.size():
                raise ValueError("sieve: scatter: the root's list must hold world_size tensors")
            task = self._p2p("scatter", list(zip(ins, range(self.size()))), [(t, root)])
        else:
            task = self._p2p("scatter", [], [(t, root)])
        return self._submit("scatter", task, list(outputs))

    # -- lifetime -------------------------------------------------------------------------------
    def shutdown(self):
        self.sieve_comm.destroy()

    def __del__(self):  # destroy_process_group drops the group: its communicator goes too
        ac = getattr(self, "sieve_comm", None)
        if ac is not None:
            ac.close()

    def abort(self):
        self.sieve_comm.abort()


def _no_tag(tag):
    if tag:
        raise ValueError("sieve: point-to-point tags are not supported (tag %d); messages "
                         "between two ranks match in call order" % tag)


def _split(t, sizes, n, what):
    flat = t.reshape(t.shape[0], -1) if t.dim() > 0 else t.reshape(1, -1)
    if not sizes:
        if flat.shape[0] % n:
            raise ValueError("sieve: all_to_all_single: %s's first dimension %d is not a "
                             "multiple of world_size %d" % (what, flat.shape[0], n))
        sizes = [flat.shape[0] // n] * n
    if len(sizes) != n or sum(sizes) != flat.shape[0]:
        raise ValueError("sieve: all_to_all_single: %s split sizes %s do not cut its first "
                         "dimension %d into world_size parts" % (what, list(sizes),
                                                                  flat.shape[0]))
    return list(flat.split(list(sizes)))
