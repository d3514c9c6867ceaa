"""Communicator and collectives over host tensors / arrays (zero-copy)."""
import contextlib
import ctypes

import numpy as np

from . import _lib
from ._args import c_int, c_size, c_uint64
from .buffers import _torch, view, writable
from .errors import SieveArgumentError, SieveError, check, INVALID_ARGUMENT, INVALID_USAGE

SUM, PROD, MAX, MIN, AVG = range(5)
_OPS = {"sum": SUM, "prod": PROD, "max": MAX, "min": MIN, "avg": AVG}

MASK_STRICT, MASK_UNION = 0, 1
LEVELS_AUTO = -1  # SIEVE_LEVELS_AUTO: all_reduce_quantized(levels="auto")


def _op(op, where):
    """An op name or sieveRedOp_t value; a value outside the five ops but within a C int is
    left for the library to refuse (it names the value)."""
    if isinstance(op, str):
        if op.lower() not in _OPS:
            raise SieveArgumentError("%s: unknown op %r (sum, prod, max, min, avg)" % (where, op))
        return _OPS[op.lower()]
    return c_int(op, "op", where)


def version():
    v = ctypes.c_int()
    check(_lib.lib.sieveGetVersion(ctypes.byref(v)), "sieveGetVersion")
    return v.value


def get_unique_id():
    """A new id as its 256-hex-digit string. Starts the bootstrap listener in this
    process (it lives until every rank joined or SIEVE_TIMEOUT passed)."""
    uid = _lib.UniqueId()
    check(_lib.lib.sieveGetUniqueId(ctypes.byref(uid)), "sieveGetUniqueId")
    return unique_id_to_string(uid)


def unique_id_to_string(uid):
    out = ctypes.create_string_buffer(2 * 128 + 1)
    check(_lib.lib.sieveUniqueIdToString(ctypes.byref(uid), out, len(out)),
          "sieveUniqueIdToString")
    return out.value.decode()


def unique_id_from_string(text):
    uid = _lib.UniqueId()
    check(_lib.lib.sieveUniqueIdFromString(text.encode(), ctypes.byref(uid)),
          "sieveUniqueIdFromString")
    return uid


class Comm:
    """A Sieve communicator. Create with Comm(nranks, unique_id, rank), Comm.from_env()
    or Comm.from_process_group(); free with destroy() (or a `with` block)."""

    def __init__(self, nranks=None, unique_id=None, rank=None, _handle=None):
        if _handle is None:
            if nranks is None or unique_id is None or rank is None:
                raise SieveError(INVALID_ARGUMENT, "Comm(nranks, unique_id, rank) needs all three")
            nranks = c_int(nranks, "nranks", "Comm")
            rank = c_int(rank, "rank", "Comm")
            uid = unique_id_from_string(unique_id) if isinstance(unique_id, str) else unique_id
            h = ctypes.c_void_p()
            check(_lib.lib.sieveCommInitRank(ctypes.byref(h), nranks, uid, rank),
                  "sieveCommInitRank")
            _handle = h
        self._h = _handle
        self.rank = self._query("sieveCommUserRank")
        self.size = self._query("sieveCommCount")

    @classmethod
    def from_env(cls):
        """sieveCommInitFromEnv: sieve-run's SIEVE_RANK/SIEVE_NRANKS/SIEVE_UNIQUE_ID, or
        torchrun-style RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (rank 0 listens on
        MASTER_PORT, so not while torch.distributed's store holds that port: then use
        from_process_group)."""
        h = ctypes.c_void_p()
        check(_lib.lib.sieveCommInitFromEnv(ctypes.byref(h)), "sieveCommInitFromEnv")
        return cls(_handle=h)

    @classmethod
    def from_process_group(cls, group=None):
        """A communicator over the ranks of an initialized torch.distributed group: rank 0
        of the group makes the id and hands it to the others through the group."""
        import torch.distributed as dist
        if not dist.is_initialized():
            raise SieveError(INVALID_USAGE, "torch.distributed is not initialized")
        box = [get_unique_id() if dist.get_rank(group) == 0 else None]
        dist.broadcast_object_list(box, src=dist.get_global_rank(group, 0)
                                   if group is not None else 0, group=group)
        return cls(dist.get_world_size(group), box[0], dist.get_rank(group))

    def _query(self, name):
        v = ctypes.c_int()
        check(getattr(_lib.lib, name)(self._handle(), ctypes.byref(v)), name)
        return v.value

    def _handle(self):
        if self._h is None:
            raise SieveError(INVALID_USAGE, "communicator already destroyed")
        return self._h

    def _check(self, result, what):
        check(result, what, self._h)

    # -- lifetime ---------------------------------------------------------------
    def destroy(self):
        if self._h is not None:
            h, self._h = self._h, None
            check(_lib.lib.sieveCommDestroy(h), "sieveCommDestroy")

    def abort(self):
        if self._h is not None:
            h, self._h = self._h, None
            _lib.lib.sieveCommAbort(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.destroy()
        else:
            self.abort()

    def async_error(self):
        v = ctypes.c_int()
        self._check(_lib.lib.sieveCommGetAsyncError(self._handle(), ctypes.byref(v)),
                    "sieveCommGetAsyncError")
        return v.value

    def split(self, color, key=0):
        color, key = c_int(color, "color", "split"), c_int(key, "key", "split")
        h = ctypes.c_void_p()
        self._check(_lib.lib.sieveCommSplit(self._handle(), color, key, ctypes.byref(h)),
                    "sieveCommSplit")
        return Comm(_handle=h) if h.value else None

    # -- elastic membership (membership.py; docs/membership.md) ------------------
    def revoke(self):
        from . import membership
        membership.revoke(self)

    def failed_ranks(self, agree=True):
        from . import membership
        return membership.failed_ranks(self, agree)

    def shrink(self, exclude, abort=True):
        from . import membership
        return membership.shrink(self, exclude, abort)

    def grow_id(self):
        from . import membership
        return membership.grow_id(self)

    def grow(self, nranks, unique_id=None):
        from . import membership
        return membership.grow(self, nranks, unique_id)

    def auto_levels(self):
        """The choice of this rank's latest levels="auto" call: an L, 0 for dense, -1
        before any (sieveCommGetAutoLevels)."""
        v = ctypes.c_int(0)
        self._check(_lib.lib.sieveCommGetAutoLevels(self._handle(), ctypes.byref(v)),
                    "sieveCommGetAutoLevels")
        return v.value

    def counters(self):
        """dict of sieveCounters_t: bytes_sent, bytes_received, collectives, ..."""
        c = _lib.Counters()
        self._check(_lib.lib.sieveCommGetCounters(self._handle(), ctypes.byref(c)),
                    "sieveCommGetCounters")
        return {name: getattr(c, name) for name in _lib.COUNTER_NAMES}

    # -- argument plumbing ----------------------------------------------------------
    def _pair(self, send, recv, what, recv_factor=1, send_factor=1):
        """Pointers, per-rank count and dtype of (send, recv); recv None = in place."""
        sp, sn, st = view(send, what + " send")
        if recv is None:
            recv = send
        writable(recv, what + " recv")
        rp, rn, rt = view(recv, what + " recv")
        if st != rt:
            raise SieveError(INVALID_ARGUMENT, "%s: send and recv dtypes differ" % what)
        if sn % send_factor:
            raise SieveError(INVALID_ARGUMENT, "%s: send has %d elements, not a multiple of %d "
                             "ranks" % (what, sn, send_factor))
        count = sn // send_factor
        if rn != count * recv_factor:
            raise SieveError(INVALID_ARGUMENT, "%s: recv has %d elements, %d expected"
                             % (what, rn, count * recv_factor))
        return sp, rp, count, st, recv

    # -- dense collectives (NCCL semantics) -------------------------------------------
    def all_reduce(self, send, recv=None, op="sum"):
        """recv = op over ranks of send (recv None: in place). Returns recv."""
        op = _op(op, "all_reduce")
        sp, rp, n, t, recv = self._pair(send, recv, "all_reduce")
        self._check(_lib.lib.sieveAllReduce(sp, rp, n, t, op, self._handle(), None),
                    "sieveAllReduce")
        return recv

    def broadcast(self, send, recv=None, root=0):
        root = c_int(root, "root", "broadcast")
        sp, rp, n, t, recv = self._pair(send, recv, "broadcast")
        self._check(_lib.lib.sieveBroadcast(sp, rp, n, t, root, self._handle(), None),
                    "sieveBroadcast")
        return recv

    def reduce(self, send, recv=None, op="sum", root=0):
        op, root = _op(op, "reduce"), c_int(root, "root", "reduce")
        sp, rp, n, t, recv = self._pair(send, recv, "reduce")
        self._check(_lib.lib.sieveReduce(sp, rp, n, t, op, root, self._handle(), None),
                    "sieveReduce")
        return recv

    def all_gather(self, send, recv):
        """recv (size * send elements) = every rank's send, in rank order."""
        sp, rp, n, t, recv = self._pair(send, recv, "all_gather", recv_factor=self.size)
        self._check(_lib.lib.sieveAllGather(sp, rp, n, t, self._handle(), None), "sieveAllGather")
        return recv

    def reduce_scatter(self, send, recv, op="sum"):
        """recv on rank r = op over ranks of send's r-th slice of len(recv) elements."""
        op = _op(op, "reduce_scatter")
        sp, rp, n, t, recv = self._pair(send, recv, "reduce_scatter", send_factor=self.size)
        self._check(_lib.lib.sieveReduceScatter(sp, rp, n, t, op, self._handle(), None),
                    "sieveReduceScatter")
        return recv

    def send(self, buf, peer):
        peer = c_int(peer, "peer", "send")
        p, n, t = view(buf, "send")
        self._check(_lib.lib.sieveSend(p, n, t, peer, self._handle(), None), "sieveSend")

    def recv(self, buf, peer):
        peer = c_int(peer, "peer", "recv")
        writable(buf, "recv")
        p, n, t = view(buf, "recv")
        self._check(_lib.lib.sieveRecv(p, n, t, peer, self._handle(), None), "sieveRecv")
        return buf

    # -- masked, ternary --------------------------------------------------------------
    def register_mask(self, mask, policy=MASK_STRICT):
        """Collective: a Mask from one value per element (bool/uint8 tensor or array;
        non-zero = kept). policy MASK_STRICT or MASK_UNION."""
        return Mask(self, mask, policy)

    def all_reduce_masked(self, send, mask, recv=None, op="sum"):
        """recv[j] = op over ranks of send[j] where the mask keeps j, else 0."""
        op = _op(op, "all_reduce_masked")
        sp, rp, n, t, recv = self._pair(send, recv, "all_reduce_masked")
        self._check(_lib.lib.sieveAllReduceMasked(sp, rp, n, t, op, mask._handle(),
                                                  self._handle(), None), "sieveAllReduceMasked")
        return recv

    def all_reduce_ternary(self, send, recv=None, op="avg", seed=1, step=0, block_size=0,
                           mask=None, error_feedback=False):
        """Unbiased stochastic ternary all-reduce (float32/float16/bfloat16, sum or avg).
        Every rank passes the same seed, step and block_size."""
        return self._quantized("all_reduce_ternary", None, send, recv, op, seed, step,
                               block_size, mask, error_feedback)

    def all_reduce_quantized(self, send, recv=None, levels=7, op="avg", seed=1, step=0,
                             block_size=0, mask=None, error_feedback=False):
        """all_reduce_ternary with `levels` = L levels per sign (1..127; 1 is ternary bit
        for bit): codes in [-L, L], exact integer sums, result s * Q / L (sum) or
        s * Q / (n L) (avg). Every rank passes the same levels, seed, step, block_size.
        levels="auto" (SIEVE_LEVELS_AUTO): dense or an L chosen per call, the same on
        every rank (docs/modes.md); auto_levels() says which."""
        levels = LEVELS_AUTO if levels == "auto" else c_int(levels, "levels",
                                                             "all_reduce_quantized")
        return self._quantized("all_reduce_quantized", levels, send, recv, op, seed, step,
                               block_size, mask, error_feedback)

    def _quantized(self, where, levels, send, recv, op, seed, step, block_size, mask,
                   error_feedback):
        """sieveAllReduceTernary (levels None) or sieveAllReduceQuantized."""
        op = _op(op, where)
        seed, step = c_uint64(seed, "seed", where), c_uint64(step, "step", where)
        block_size = c_size(block_size, "block_size", where)
        sp, rp, n, t, recv = self._pair(send, recv, where)
        p = _lib.TernaryParams(seed, step, block_size,
                               mask._handle() if mask is not None else None,
                               1 if error_feedback else 0)
        if levels is None:
            self._check(_lib.lib.sieveAllReduceTernary(sp, rp, n, t, op, ctypes.byref(p),
                                                       self._handle(), None),
                        "sieveAllReduceTernary")
        else:
            self._check(_lib.lib.sieveAllReduceQuantized(sp, rp, n, t, op, levels,
                                                         ctypes.byref(p), self._handle(), None),
                        "sieveAllReduceQuantized")
        return recv

    # -- subnet layouts: SDP, D2FT --------------------------------------------------------
    def register_layout(self, count, segments):
        """Collective: a Layout from [(offset, length, holder ranks), ...] partitioning
        [0, count)."""
        return Layout.from_segments(self, count, segments)

    def layout_from_mask_matrix(self, matrix, block_size, count):
        """Collective: a Layout from an SDP mask matrix (nranks x nblocks, non-zero = held)."""
        return Layout.from_mask_matrix(self, matrix, block_size, count)

    def layout_equal_subnets(self, count, nsubnets):
        return Layout.equal_subnets(self, count, nsubnets)

    def all_reduce_subnet(self, send, layout, recv=None, levels=None, seed=1, step=0,
                          block_size=0, error_feedback=False, mask=None):
        """SDP: on segments this rank holds, recv = mean over holders; others untouched.
        levels=L (1..127): each group's ring carries L-level sums
        (sieveAllReduceSubnetQuantized; every rank the same levels, seed, step,
        block_size, mask); error_feedback keeps this rank's residual per buffer; mask (a
        registered Mask, quantized only) cuts each group to its kept elements (the
        dropped ones of what this rank writes become 0)."""
        sp, rp, n, t, recv = self._pair(send, recv, "all_reduce_subnet")
        if levels is not None:
            levels, p = self._subnet_quantization("all_reduce_subnet", levels, seed, step,
                                                  block_size, error_feedback, mask)
            self._check(_lib.fn("sieveAllReduceSubnetQuantized")(
                sp, rp, n, t, layout._handle(), levels, ctypes.byref(p), self._handle(), None),
                "sieveAllReduceSubnetQuantized")
            return recv
        self._check(_lib.fn("sieveAllReduceSubnet")(sp, rp, n, t, layout._handle(),
                                                     self._handle(), None),
                    "sieveAllReduceSubnet")
        return recv

    def _subnet_quantization(self, where, levels, seed, step, block_size, error_feedback, mask):
        """The quantized subnet calls' levels and sieveTernaryParams_t."""
        levels = c_int(levels, "levels", where)
        p = _lib.TernaryParams(c_uint64(seed, "seed", where), c_uint64(step, "step", where),
                               c_size(block_size, "block_size", where),
                               mask._handle() if mask is not None else None,
                               1 if error_feedback else 0)
        return levels, p

    def all_reduce_d2ft(self, send, layout, touched, recv=None, schedule=None, levels=None,
                        seed=1, step=0, block_size=0, error_feedback=False, mask=None):
        """D2FT: touched = this rank's segments with a gradient this step (a sequence of
        segment indices, or bools per segment); schedule = None (the ranks exchange their
        bitmaps) or every rank's touched as an nranks x nsegments bool matrix. levels=L:
        sieveAllReduceD2ftQuantized (see all_reduce_subnet)."""
        sp, rp, n, t, recv = self._pair(send, recv, "all_reduce_d2ft")
        k = layout.num_segments
        bits = pack_bits(_as_flags(touched, k, "touched"))
        table = None
        if schedule is not None:
            sched = np.asarray(schedule)
            if sched.shape != (self.size, k):
                raise SieveError(INVALID_ARGUMENT, "schedule must be %d x %d (nranks x segments), "
                                 "got %s" % (self.size, k, sched.shape))
            table = np.ascontiguousarray(np.stack([pack_bits(row != 0) for row in sched]))
        table_p = table.ctypes.data if table is not None else None
        if levels is not None:
            levels, p = self._subnet_quantization("all_reduce_d2ft", levels, seed, step,
                                                  block_size, error_feedback, mask)
            self._check(_lib.fn("sieveAllReduceD2ftQuantized")(
                sp, rp, n, t, layout._handle(), bits.ctypes.data, table_p, levels,
                ctypes.byref(p), self._handle(), None), "sieveAllReduceD2ftQuantized")
            return recv
        self._check(_lib.fn("sieveAllReduceD2ft")(
            sp, rp, n, t, layout._handle(), bits.ctypes.data, table_p, self._handle(), None),
            "sieveAllReduceD2ft")
        return recv

    @contextlib.contextmanager
    def group(self):
        """Calls inside `with comm.group():` are issued together at its end."""
        check(_lib.lib.sieveGroupStart(), "sieveGroupStart")
        try:
            yield
        finally:
            check(_lib.lib.sieveGroupEnd(), "sieveGroupEnd", self._h)


def _as_flags(sel, k, what):
    """bool per segment (length k) or a sequence of segment indices -> bool[k]."""
    a = np.asarray(sel)
    if a.dtype == bool:
        if a.size != k:
            raise SieveError(INVALID_ARGUMENT, "%s has %d flags, the layout %d segments"
                             % (what, a.size, k))
        return a.reshape(-1)
    if a.size and a.dtype.kind not in "iu":  # [] is "no segment"; 1.5 is no segment index
        raise SieveArgumentError("%s: segment indices must be integers, got dtype %s"
                                 % (what, a.dtype))
    flags = np.zeros(k, dtype=bool)
    for i in a.reshape(-1).tolist():
        if not 0 <= i < k:
            raise SieveArgumentError("%s: segment %d outside [0, %d)" % (what, i, k))
        flags[i] = True
    return flags


def pack_bits(flags):
    """bool per element -> bitmap, bit j of byte j/8, LSB first (Sieve's mask format)."""
    return np.packbits(np.asarray(flags, dtype=bool), bitorder="little")


class Mask:
    """A registered mask (sieveMask_t): collective to create, deregister() to free."""

    def __init__(self, comm, mask, policy=MASK_STRICT):
        policy = c_int(policy, "policy", "register_mask")
        a = _mask_bytes(mask)
        h = ctypes.c_void_p()
        comm._check(_lib.lib.sieveMaskRegister(comm._handle(), a.ctypes.data, 1, a.size,
                                               policy, ctypes.byref(h)), "sieveMaskRegister")
        self._h, self.count, self.comm = h, a.size, comm

    def _handle(self):
        if self._h is None:
            raise SieveError(INVALID_USAGE, "mask already deregistered")
        return self._h

    @property
    def nnz(self):
        v = ctypes.c_size_t()
        check(_lib.lib.sieveMaskNnz(self._handle(), ctypes.byref(v)), "sieveMaskNnz")
        return v.value

    def deregister(self):
        if self._h is not None:
            h, self._h = self._h, None
            check(_lib.lib.sieveMaskDeregister(h), "sieveMaskDeregister")


def _mask_bytes(mask):
    torch = _torch()  # never imported here: a tensor exists only once the program did
    if torch is not None and isinstance(mask, torch.Tensor):
        mask = mask.detach().cpu().reshape(-1).ne(0).to(torch.uint8).numpy()
    a = np.ascontiguousarray(np.asarray(mask).reshape(-1) != 0, dtype=np.uint8)
    if a.size == 0:
        raise SieveError(INVALID_ARGUMENT, "mask is empty")
    return a


class Layout:
    """A registered subnet layout (sieveLayout_t)."""

    def __init__(self, comm, handle, count):
        self._h, self.comm, self.count = handle, comm, count
        v = ctypes.c_int()
        check(_lib.fn("sieveLayoutNumSegments")(handle, ctypes.byref(v)), "sieveLayoutNumSegments")
        self.num_segments = v.value

    @classmethod
    def from_segments(cls, comm, count, segments):
        where = "register_layout"
        count = c_size(count, "count", where)
        segs = list(segments)
        nsegs = c_int(len(segs), "number of segments", where)
        arr = (_lib.Segment * max(1, nsegs))()
        keep = []
        for i, (off, length, holders) in enumerate(segs):
            seg = "segment %d " % i
            ranks = [c_int(r, seg + "holder", where) for r in holders]
            hs = (ctypes.c_int * max(1, len(ranks)))(*ranks)
            keep.append(hs)
            arr[i] = _lib.Segment(c_size(off, seg + "offset", where),
                                  c_size(length, seg + "length", where), hs,
                                  c_int(len(ranks), seg + "number of holders", where))
        h = ctypes.c_void_p()
        comm._check(_lib.fn("sieveLayoutRegister")(comm._handle(), count, arr, nsegs,
                                                    ctypes.byref(h)), "sieveLayoutRegister")
        return cls(comm, h, count)

    @classmethod
    def from_mask_matrix(cls, comm, matrix, block_size, count):
        where = "layout_from_mask_matrix"
        block_size = c_size(block_size, "block_size", where)
        count = c_size(count, "count", where)
        m = np.ascontiguousarray(np.asarray(matrix) != 0, dtype=np.uint8)
        if m.ndim != 2 or m.shape[0] != comm.size:
            raise SieveError(INVALID_ARGUMENT, "mask matrix must be nranks (%d) x nblocks, got %s"
                             % (comm.size, m.shape))
        h = ctypes.c_void_p()
        comm._check(_lib.fn("sieveLayoutFromMaskMatrix")(
            comm._handle(), m.ctypes.data, m.shape[1], block_size, count,
            ctypes.byref(h)), "sieveLayoutFromMaskMatrix")
        return cls(comm, h, count)

    @classmethod
    def equal_subnets(cls, comm, count, nsubnets):
        count = c_size(count, "count", "layout_equal_subnets")
        nsubnets = c_int(nsubnets, "nsubnets", "layout_equal_subnets")
        h = ctypes.c_void_p()
        comm._check(_lib.fn("sieveLayoutEqualSubnets")(comm._handle(), count, nsubnets,
                                                        ctypes.byref(h)),
                    "sieveLayoutEqualSubnets")
        return cls(comm, h, count)

    def _handle(self):
        if self._h is None:
            raise SieveError(INVALID_USAGE, "layout already deregistered")
        return self._h

    def deregister(self):
        if self._h is not None:
            h, self._h = self._h, None
            check(_lib.fn("sieveLayoutDeregister")(h), "sieveLayoutDeregister")
