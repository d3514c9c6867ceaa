"""Subnet layouts from Python: SDP averaging over a mask-matrix layout and explicit
segments, D2FT with exchanged bitmaps and with a global table, against the formulas; the
quantized subnet calls with and without error feedback."""
import numpy as np
import pytest
import torch

import sieve
from sieve import _lib, sdp
from mp_util import run_ranks

pytestmark = pytest.mark.skipif(
    "sieveAllReduceSubnet" in _lib.missing,
    reason="this libsieve does not export the subnet-layout API (SDP/D2FT not built in)")


def inputs(n, count, dtype, salt):
    return [(torch.rand(count, generator=torch.Generator().manual_seed(salt * 31 + r),
                        dtype=torch.float64) * 4 - 2).to(dtype) for r in range(n)]


def check_quantized_subnets(comm, rank, n):
    """The quantized subnet calls: each output within the quantizer's bound of the dense
    mean; with error feedback the mean over steps converges to it (the residual carries
    what one step's rounding left), without it does not."""
    count = 1001
    lay = comm.layout_equal_subnets(count, 3)  # every rank holds every segment
    x = inputs(n, count, torch.float32, 40)
    want = torch.stack(x).mean(0)
    levels, steps = 7, 24
    err = {}
    for feedback in (False, True):
        total = torch.zeros(count, dtype=torch.float64)
        for step in range(steps):
            out = torch.empty(count)
            if step % 2:
                comm.all_reduce_d2ft(x[rank], lay, [0, 1, 2], out, levels=levels, seed=3,
                                     step=step, error_feedback=feedback)
            else:
                comm.all_reduce_subnet(x[rank], lay, out, levels=levels, seed=3, step=step,
                                       error_feedback=feedback)
            # Without feedback |avg of the codes * s / L - mean| <= s / L, s <= max |x| <= 2;
            # with it the scale is still max |x| (not of x + e), a value above it is clipped
            # and keeps the rest, so each residual stays below s / L and the output is off
            # by at most two residuals.
            bound = 2 * 2.0 / levels if feedback else 2.0 / levels
            assert (out - want).abs().max() <= bound + 1e-6
            total += out.double()
        err[feedback] = (total / steps - want.double()).abs().max().item()
    # With feedback the sum over steps is off by the ranks' last residuals only: the mean by
    # <= s / (L * steps).
    assert err[True] <= 2.0 / (levels * steps) + 1e-5, err
    assert err[False] > 2 * err[True], err
    # Under a mask: dropped elements are 0, kept ones within the bound.
    keep = np.arange(count) % 3 != 1
    mask = comm.register_mask(keep)
    out = torch.full((count,), 9.0)
    comm.all_reduce_subnet(x[rank], lay, out, levels=levels, seed=3, step=99, mask=mask)
    assert torch.all(out[torch.from_numpy(~keep)] == 0)
    kept = torch.from_numpy(keep)
    assert (out[kept] - want[kept]).abs().max() <= 2.0 / levels + 1e-6
    mask.deregister()
    lay.deregister()


def subnet_rank(rank, n, uid):
    comm = sieve.Comm(n, uid, rank)
    count, block = 1003, 50  # odd; 21 blocks, the last one short
    nblocks = (count + block - 1) // block
    matrix = sdp.balanced_mask(n, nblocks, 0.5, seed=4)
    layout = comm.layout_from_mask_matrix(matrix, block, count)
    assert 1 <= layout.num_segments <= nblocks
    hs = sdp.holders(matrix)
    for salt, dtype in enumerate([torch.float32, torch.float64, torch.float16, torch.bfloat16]):
        xs = inputs(n, count, dtype, salt)
        out = torch.full((count,), 7.0, dtype=dtype)
        comm.all_reduce_subnet(xs[rank], layout, out)
        tol = {torch.float16: 5e-3, torch.bfloat16: 3e-2}.get(dtype, 1e-6)
        for b in range(nblocks):
            sl = slice(b * block, min(count, (b + 1) * block))
            if rank in hs[b]:
                want = torch.stack([xs[r][sl].double() for r in hs[b]]).mean(0)
                assert torch.allclose(out[sl].double(), want, rtol=tol, atol=tol), (dtype, b)
            else:
                assert torch.all(out[sl] == 7.0), "a segment this rank does not hold was written"
    layout.deregister()
    # explicit segments (segments_from_blocks) and D2FT on an equal-subnets layout
    segs = sdp.segments_from_blocks(matrix[:, :3], [[(0, 10)], [(10, 5), (20, 4)], [(30, 3)]], 41)
    lay = comm.register_layout(41, segs)
    x = inputs(n, 41, torch.float32, 9)
    y = x[rank].clone()
    comm.all_reduce_subnet(y, lay)
    for off, length, h in segs:
        if rank in h:
            want = torch.stack([x[r][off:off + length] for r in h]).mean(0)
            assert torch.allclose(y[off:off + length], want, atol=1e-6)
    eq = comm.layout_equal_subnets(999, 7)
    assert eq.num_segments == 7
    rng = np.random.default_rng(12)
    table = rng.random((n, 7)) < 0.4
    table[:, 2] = False  # nobody: untouched everywhere
    table[:, 5] = False
    table[n - 1, 5] = True  # one contributor
    for use_table in (False, True):
        xs = inputs(n, 999, torch.float32, 20 + use_table)
        out = torch.full((999,), -3.0)
        comm.all_reduce_d2ft(xs[rank], eq, np.flatnonzero(table[rank]), out,
                             schedule=table if use_table else None)
        size = 999 // 7
        for k in range(7):
            sl = slice(k * size, 999 if k == 6 else (k + 1) * size)
            t = np.flatnonzero(table[:, k])
            if len(t) == 0:
                assert torch.all(out[sl] == -3.0)
            else:
                want = torch.stack([xs[r][sl] for r in t]).mean(0)
                assert torch.allclose(out[sl], want, atol=1e-6), (use_table, k)
    c = comm.counters()
    assert c["subnet_collectives"] >= 7, c
    # errors: a layout that does not partition the buffer; a touched bit of a non-holder
    try:
        comm.register_layout(10, [(0, 4, list(range(n))), (5, 5, list(range(n)))])
        raise AssertionError("a gapped layout registered")
    except sieve.SieveError as e:
        assert e.code in (4, 5) and e.message
    only0 = comm.register_layout(8, [(0, 8, [0])])
    try:
        comm.all_reduce_d2ft(torch.zeros(8), only0, [0] if rank == 1 else [])
        raise AssertionError("a non-holder's touched bit was accepted")
    except sieve.SieveError as e:
        assert e.code in (4, 5) and "rank 1 marked segment 0" in e.message, e.message
    check_quantized_subnets(comm, rank, n)
    comm.destroy()
    return "ok"


def test_subnet_collectives():
    assert run_ranks(3, subnet_rank, sieve.get_unique_id()) == ["ok"] * 3


def d2ft_patterns_rank(rank, n, uid, steps, count, k):
    """Many steps with fresh random tables (every pattern a new plan), checked each step."""
    comm = sieve.Comm(n, uid, rank)
    pieces = np.linspace(0, count, k + 1).astype(int)
    lay = comm.register_layout(count, [(int(a), int(b - a), list(range(n)))
                                       for a, b in zip(pieces[:-1], pieces[1:])])
    rng = np.random.default_rng(99)  # same tables on every rank
    bad = []
    for step in range(steps):
        table = rng.random((n, k)) < rng.choice([0.2, 0.5, 0.8])
        xs = inputs(n, count, torch.float32, 1000 + step)
        out = xs[rank].clone()
        comm.all_reduce_d2ft(out, lay, table[rank], schedule=table if step % 2 else None)
        for s in range(k):
            sl = slice(pieces[s], pieces[s + 1])
            t = np.flatnonzero(table[:, s])
            want = xs[rank][sl] if len(t) == 0 else torch.stack([xs[r][sl] for r in t]).mean(0)
            if not torch.allclose(out[sl], want, atol=1e-6):
                bad.append((step, s, table[:, s].tolist()))
    comm.destroy()
    return bad


def test_d2ft_many_patterns():
    bad = run_ranks(4, d2ft_patterns_rank, sieve.get_unique_id(), 60, 20011, 8)
    assert bad == [[]] * 4, bad
