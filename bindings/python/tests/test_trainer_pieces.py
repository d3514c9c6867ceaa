"""PacTrain pruning, SDP balanced masks, D2FT knapsack scheduler, against brute force."""
import itertools

import numpy as np
import pytest
import torch

from sieve import d2ft, pactrain, sdp


def test_magnitude_prune_exact():
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(37, 29), torch.nn.ReLU(), torch.nn.Linear(29, 7))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    masks = pactrain.magnitude_prune(model, 0.8)
    assert len(masks) == 2  # weights only, biases dense
    for name, p in model.named_parameters():
        w0 = before[name]
        if p.dim() == 1:
            assert torch.equal(p, w0)
            continue
        m = masks[p]
        k = int(0.8 * w0.numel())
        assert int((~m).sum()) == k
        assert torch.all(p[~m] == 0) and torch.equal(p[m], w0[m])
        # brute force: the pruned ones are exactly the k smallest magnitudes
        assert w0.abs()[~m].max() <= w0.abs()[m].min()
    x = torch.randn(5, 37)
    model(x).square().sum().backward()
    pactrain.mask_gradients(masks)
    for p, m in masks.items():
        assert torch.all(p.grad[~m] == 0) and torch.any(p.grad[m] != 0)
    assert abs(pactrain.sparsity(masks) - 0.8) < 0.01


def brute_min_spread(n, b, k):
    best = None
    rows = list(itertools.combinations(range(b), k))
    for choice in itertools.product(rows, repeat=n):
        cov = np.zeros(b, dtype=int)
        for row in choice:
            cov[list(row)] += 1
        if cov.min() == 0:
            continue
        spread = cov.max() - cov.min()
        best = spread if best is None else min(best, spread)
    return best


@pytest.mark.parametrize("n,b,c", [(3, 4, 0.5), (3, 5, 0.6), (4, 5, 0.4), (2, 3, 0.67),
                                   (4, 6, 0.5), (3, 6, 0.34)])
def test_balanced_mask_is_as_uniform_as_brute_force(n, b, c):
    m = sdp.balanced_mask(n, b, c, seed=n * 10 + b)
    k = max(1, round(c * b))
    assert np.all(m.sum(1) == k)
    cov = m.sum(0)
    assert cov.min() >= 1
    assert cov.max() - cov.min() == brute_min_spread(n, b, k)
    assert abs(cov.mean() - c * n) <= n * 0.5 / b + 1e-9  # about C*n (rounding of k)


def test_balanced_mask_rejects_uncovered():
    with pytest.raises(ValueError):
        sdp.balanced_mask(2, 10, 0.2)


def test_segments_from_blocks():
    m = np.array([[1, 0, 1], [0, 1, 1]], dtype=np.uint8)
    # block 0 owns two pieces, block 2 one, elements 8..9 belong to no block (shared)
    segs = sdp.segments_from_blocks(m, [[(0, 3), (5, 1)], [(3, 2)], [(6, 2)]], 10)
    assert segs == [(0, 3, (0,)), (3, 2, (1,)), (5, 1, (0,)), (6, 4, (0, 1))]
    with pytest.raises(ValueError):
        sdp.segments_from_blocks(m, [[(0, 3)], [(2, 2)], []], 10)


def brute_knapsack(values, costs, cap):
    best = 0.0
    for mask in range(1 << len(values)):
        idx = [i for i in range(len(values)) if mask >> i & 1]
        if sum(costs[i] for i in idx) <= cap:
            best = max(best, sum(values[i] for i in idx))
    return best


def test_knapsack_equals_exhaustive_search():
    rng = np.random.default_rng(11)
    for trial in range(200):
        n = int(rng.integers(1, 11))
        values = rng.random(n).round(3) * 10
        costs = rng.integers(0, 9, n)
        cap = int(rng.integers(0, 25))
        value, chosen = d2ft.knapsack(values, costs, cap)
        assert costs[chosen].sum() <= cap
        assert abs(values[chosen].sum() - value) < 1e-9
        assert abs(value - brute_knapsack(values, costs, cap)) < 1e-9, (values, costs, cap)


def test_bilevel_each_level_optimal():
    rng = np.random.default_rng(5)
    for trial in range(100):
        k = int(rng.integers(1, 9))
        fs, ws = rng.random(k), rng.random(k)
        fc = rng.integers(1, 7, k)
        wc = np.maximum(1, (fc * 0.4).round().astype(int))
        fb, wb = int(rng.integers(0, 20)), int(rng.integers(0, 10))
        ops = d2ft.bilevel(fs, ws, fc, wc, fb, wb)
        full = ops == d2ft.FULL
        fwd = ops == d2ft.FORWARD
        assert fc[full].sum() <= fb and wc[fwd].sum() <= wb
        assert abs(fs[full].sum() - brute_knapsack(fs, fc, fb)) < 1e-9
        rest = np.flatnonzero(~full)
        assert abs(ws[fwd].sum() - brute_knapsack(ws[rest], wc[rest], wb)) < 1e-9


def test_schedule_and_bitmaps():
    rng = np.random.default_rng(2)
    full, fwd = rng.random((3, 4, 5)), rng.random((3, 4, 5))
    costs = np.array([3, 3, 3, 3, 2])
    ops = d2ft.schedule(full, fwd, costs, np.ones(5, dtype=int), [6, 9, 3], 2)
    assert ops.shape == (3, 4, 5)
    tables = d2ft.bitmaps(ops)
    assert len(tables) == 4 and tables[0].shape == (3, 5)
    for r, budget in enumerate([6, 9, 3]):
        for s in range(4):
            assert costs[ops[r, s] == d2ft.FULL].sum() <= budget
            assert np.array_equal(tables[s][r], ops[r, s] == d2ft.FULL)
    # different scores per step and rank give different bitmaps
    assert len({t.tobytes() for t in tables}) > 1
