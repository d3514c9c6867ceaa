"""DDP communication hooks that exchange gradients with Sieve.

    state = sieve.hooks.MaskedState(comm, masks)       # masks from pactrain.magnitude_prune
    ddp_model.register_comm_hook(state, sieve.hooks.masked_hook)

`comm` is one of:
  * a group of the "sieve" backend (dist.init_process_group("sieve"); pass the group or
    sieve.async_comm.AsyncComm): each hook queues its bucket's exchange on the communicator's
    completion thread and returns at once with a Future that thread completes, so bucket k's
    exchange runs while backward computes bucket k+1 (the backend's own collectives share
    that queue);
  * a blocking sieve.Comm (e.g. sieve.Comm.from_process_group() beside Gloo): the exchange
    runs inside the hook and the Future is already completed.
Every rank calls the hooks for the same buckets in the same order (DDP guarantees it), so
per-bucket registrations (masks, layouts) are collective calls made once per bucket and
again only when DDP rebuilds its buckets; they run where the exchange runs.
"""
import numpy as np
import torch

from .async_comm import runner_for
from .comm import Layout, MASK_STRICT
from .sdp import holders as _block_holders


def bucket_params(bucket):
    """[(parameter, offset in the bucket buffer, numel)] in the buffer's order."""
    out, off = [], 0
    for p in bucket.parameters():
        out.append((p, off, p.numel()))
        off += p.numel()
    if off != bucket.buffer().numel():
        raise RuntimeError("bucket %d: parameters hold %d elements, the buffer %d"
                           % (bucket.index(), off, bucket.buffer().numel()))
    return out


class _PerBucket:
    """Caches one registered object per bucket; re-registers when DDP rebuilds buckets."""

    def __init__(self):
        self._cache = {}

    def get(self, bucket, make, free):
        key = tuple((p.data_ptr(), n) for p, _, n in bucket_params(bucket))
        hit = self._cache.get(bucket.index())
        if hit is not None and hit[0] == key:
            return hit[1]
        if hit is not None and hit[1] is not None:
            free(hit[1])
        obj = make(bucket)
        self._cache[bucket.index()] = (key, obj)
        return obj

    def values(self):
        return [v for _, v in self._cache.values()]


def _bucket_mask(bucket, masks):
    """The bucket-level keep mask (uint8 per element), or None when nothing is pruned."""
    by_ptr = {p.data_ptr(): m for p, m in (masks or {}).items()}
    parts, any_pruned = [], False
    for p, _, n in bucket_params(bucket):
        m = by_ptr.get(p.data_ptr())
        if m is None:
            parts.append(torch.ones(n, dtype=torch.uint8))
        else:
            parts.append(m.reshape(-1).to(torch.uint8))
            any_pruned = any_pruned or not bool(m.all())
    return torch.cat(parts) if any_pruned else None


class MaskedState:
    """PacTrain: masks = {parameter: bool tensor (True = kept)}; the bucket's mask is
    registered once (collective, policy strict by default: ranks must agree)."""

    def __init__(self, comm, masks, policy=MASK_STRICT):
        self.runner = runner_for(comm)
        self.comm, self.masks, self.policy = self.runner.comm, masks, policy
        self._masks = _PerBucket()

    def mask_for(self, bucket):
        def make(b):
            m = _bucket_mask(b, self.masks)
            return None if m is None else self.comm.register_mask(m, self.policy)
        return self._masks.get(bucket, make, lambda m: m.deregister())


def masked_hook(state, bucket):
    """Averages the bucket with the masked all-reduce: only kept gradients travel, pruned
    positions come back exactly 0 (gradient sparsity enforcement)."""
    buf = bucket.buffer()

    def task(run):
        # Without masks there is nothing to register: no extra round through run (and the
        # bucket's parameter list is not walked) on the way to the exchange.
        mask = _registered(run, lambda: state.mask_for(bucket)) if state.masks else None
        if mask is None:
            run(lambda: state.comm.all_reduce(buf, op="avg"))
        else:
            run(lambda: state.comm.all_reduce_masked(buf, mask, op="avg"))
        return buf
    return state.runner.submit(task)


def _registered(run, make):
    """make() (a collective registration, or a cache hit) as one call through run."""
    box = []
    run(lambda: box.append(make()))
    return box[0]


class TernaryState(MaskedState):
    """Ternary all-reduce state: the Philox seed, and the step, a count of hook calls
    (identical on every rank because every rank runs the same buckets in the same order;
    each call gets fresh rounding noise). masks: optional PacTrain masks (masked+ternary).
    levels: 1 (ternary), an L in 1..127 (all_reduce_quantized), or "auto": per bucket and
    call, dense or an L as Sieve chooses from the link and this machine (docs/modes.md)."""

    def __init__(self, comm, seed=1, masks=None, block_size=0, error_feedback=False,
                 policy=MASK_STRICT, levels=1):
        super().__init__(comm, masks, policy)
        self.seed, self.block_size, self.error_feedback = seed, block_size, error_feedback
        self.levels = levels
        self.step = 0


def ternary_hook(state, bucket):
    """Averages the bucket with the unbiased stochastic ternary all-reduce, or at
    state.levels (over the PacTrain mask when the state has masks)."""
    buf = bucket.buffer()
    step, state.step = state.step, state.step + 1

    def task(run):
        mask = _registered(run, lambda: state.mask_for(bucket)) if state.masks else None
        kw = dict(op="avg", seed=state.seed, step=step, block_size=state.block_size, mask=mask,
                  error_feedback=state.error_feedback)
        if state.levels == 1:
            run(lambda: state.comm.all_reduce_ternary(buf, **kw))
        else:
            run(lambda: state.comm.all_reduce_quantized(buf, levels=state.levels, **kw))
        return buf
    return state.runner.submit(task)


def _pieces(bucket, assign):
    """[(offset in bucket, length, id)] from assign = {param: id | [(start, length, id)]};
    parameters not in assign get id None."""
    by_ptr = {p.data_ptr(): a for p, a in assign.items()}
    out = []
    for p, off, n in bucket_params(bucket):
        a = by_ptr.get(p.data_ptr())
        if a is None or isinstance(a, (int, np.integer)):
            out.append((off, n, None if a is None else int(a)))
            continue
        covered = 0
        for start, length, ident in sorted(a):
            if start > covered:
                out.append((off + covered, start - covered, None))
            out.append((off + start, length, int(ident)))
            covered = start + length
        if covered < n:
            out.append((off + covered, n - covered, None))
    return out


class _SubnetQuantization:
    """The subnet hooks' optional quantization: levels None (dense), or each group's ring at
    L levels (1 is ternary) with Philox seed, the step a count of hook calls (the same on
    every rank), block_size and error feedback (sieveAllReduceSubnetQuantized)."""

    def _quantize(self, levels, seed, block_size, error_feedback):
        self.levels, self.seed = levels, seed
        self.block_size, self.error_feedback = block_size, error_feedback
        self.step = 0

    def _quantized_kwargs(self):
        """Keyword arguments of this call's all_reduce_subnet / all_reduce_d2ft."""
        if self.levels is None:
            return {}
        step, self.step = self.step, self.step + 1
        return dict(levels=self.levels, seed=self.seed, step=step, block_size=self.block_size,
                    error_feedback=self.error_feedback)


class SdpState(_SubnetQuantization):
    """SDP: matrix = nranks x nblocks mask (sdp.balanced_mask); blocks = {parameter: block
    id | [(start, length, block id), ...] pieces of the flattened parameter}. Parameters or
    pieces of no block are held by every rank. levels=L quantizes each group's ring
    (seed, block_size, error_feedback as TernaryState's)."""

    def __init__(self, comm, matrix, blocks, zero_unheld=True, levels=None, seed=1,
                 block_size=0, error_feedback=False):
        self.runner = runner_for(comm)
        self.comm, self.matrix, self.blocks = self.runner.comm, np.asarray(matrix), blocks
        self.zero_unheld = zero_unheld
        self._quantize(levels, seed, block_size, error_feedback)
        self._layouts = _PerBucket()
        self._holders = _block_holders(self.matrix)

    def segments(self, bucket):
        everyone = tuple(range(self.comm.size))
        segs = []
        for off, n, b in _pieces(bucket, self.blocks):
            h = everyone if b is None else self._holders[b]
            if segs and segs[-1][2] == h:
                segs[-1] = (segs[-1][0], segs[-1][1] + n, h)
            else:
                segs.append((off, n, h))
        return segs

    def layout_for(self, bucket):
        def make(b):
            segs = self.segments(b)
            return (Layout.from_segments(self.comm, b.buffer().numel(), segs), segs)
        return self._layouts.get(bucket, make, lambda ls: ls[0].deregister())


def sdp_hook(state, bucket):
    """Coverage-weighted averaging: each segment averaged over the ranks holding it; only
    holders exchange it. Segments this rank does not hold get a zero gradient (no update
    to a block this rank does not train) unless zero_unheld=False."""
    buf = bucket.buffer()
    kw = state._quantized_kwargs()  # on DDP's thread: the step in bucket order

    def task(run):
        layout, segs = _registered(run, lambda: state.layout_for(bucket))
        run(lambda: state.comm.all_reduce_subnet(buf, layout, **kw))
        if state.zero_unheld:
            for off, n, h in segs:
                if state.comm.rank not in h:
                    buf[off:off + n].zero_()
        return buf
    return state.runner.submit(task)


class D2ftState(_SubnetQuantization):
    """D2FT: subnets = {parameter: subnet id | [(start, length, subnet id), ...]};
    parameters of no subnet are always exchanged (every rank contributes). Before each
    backward the trainer sets state.table = that step's nranks x nsubnets bool table
    (d2ft.bitmaps(ops)[step]: True = the rank ran the full operation on the subnet).
    levels=L quantizes each group's ring, as SdpState's."""

    def __init__(self, comm, subnets, nsubnets, levels=None, seed=1, block_size=0,
                 error_feedback=False):
        self.runner = runner_for(comm)
        self.comm, self.subnets, self.nsubnets = self.runner.comm, subnets, nsubnets
        self.table = None
        self._quantize(levels, seed, block_size, error_feedback)
        self._layouts = _PerBucket()

    def layout_for(self, bucket):
        def make(b):
            pieces = []  # adjacent pieces of one subnet merge into one segment
            for off, n, s in _pieces(b, self.subnets):
                if pieces and pieces[-1][2] == s:
                    pieces[-1] = (pieces[-1][0], pieces[-1][1] + n, s)
                else:
                    pieces.append((off, n, s))
            everyone = list(range(self.comm.size))
            layout = Layout.from_segments(self.comm, b.buffer().numel(),
                                          [(o, n, everyone) for o, n, _ in pieces])
            return layout, pieces
        return self._layouts.get(bucket, make, lambda lp: lp[0].deregister())


def d2ft_hook(state, bucket):
    """Per step subnet skipping: each segment averaged over the ranks that ran it in
    full (the global table is passed, so no bitmaps are exchanged); segments no rank ran
    in full move no bytes and get a zero gradient."""
    if state.table is None:
        raise RuntimeError("d2ft_hook: set state.table for this step before backward")
    table = np.asarray(state.table, dtype=bool)
    if table.shape != (state.comm.size, state.nsubnets):
        raise ValueError("d2ft table must be %d x %d" % (state.comm.size, state.nsubnets))
    buf = bucket.buffer()
    kw = state._quantized_kwargs()

    def task(run):
        layout, pieces = _registered(run, lambda: state.layout_for(bucket))
        sched = np.stack([[True if s is None else table[r, s] for _, _, s in pieces]
                          for r in range(state.comm.size)])
        run(lambda: state.comm.all_reduce_d2ft(buf, layout, sched[state.comm.rank],
                                               schedule=sched, **kw))
        for (off, n, _), anyone in zip(pieces, sched.any(0)):
            if not anyone:
                buf[off:off + n].zero_()
        return buf
    return state.runner.submit(task)
