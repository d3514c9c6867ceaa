"""Comm.all_reduce_quantized (L levels) on real processes, NumPy buffers only: equal to the
NumPy reference (philox_ref.ternary_avg with levels) bit for bit, levels=1 equal to
all_reduce_ternary, levels="auto" equal to the level it chose, and levels out of range
refused before anything travels."""
import numpy as np
import pytest

import sieve
from mp_util import run_ranks
from philox_ref import ternary_avg


def inputs(n, count):
    return [np.random.default_rng(31 * r + 5).standard_normal(count).astype(np.float32)
            for r in range(n)]


def levels_rank(rank, n, uid):
    comm = sieve.Comm(n, uid, rank)
    count = 3001  # odd, two blocks of 2048
    xs = inputs(n, count)
    for levels in (1, 3, 7, 127):
        got = comm.all_reduce_quantized(xs[rank].copy(), np.empty(count, np.float32),
                                        levels=levels, op="avg", seed=9, step=levels)
        want = ternary_avg(xs, seed=9, step=levels, levels=levels)
        assert np.array_equal(got, want), "levels %d: %d elements differ" % (
            levels, int(np.sum(got != want)))
    # levels="auto" at the stated SIEVE_LINK_RATE (100 Mbit/s): a level (which L depends on
    # this machine's kernel speed), the same on every rank, bit for bit that level's result.
    assert comm.auto_levels() == -1
    ys = inputs(n, 5001)  # auto keeps calls under 4096 elements dense
    got = comm.all_reduce_quantized(ys[rank].copy(), levels="auto", op="avg", seed=9, step=5)
    chosen = comm.auto_levels()
    assert chosen in (1, 3, 7, 15, 31, 63, 127), chosen
    assert np.array_equal(got, ternary_avg(ys, seed=9, step=5, levels=chosen)), chosen
    ternary = comm.all_reduce_ternary(xs[rank].copy(), op="avg", seed=9, step=1)
    assert np.array_equal(ternary, ternary_avg(xs, seed=9, step=1))
    for bad in (0, 128):
        with pytest.raises(sieve.SieveError, match="levels %d is out of range" % bad):
            comm.all_reduce_quantized(xs[rank].copy(), levels=bad)
    with pytest.raises(OverflowError, match="levels=4294967296"):
        comm.all_reduce_quantized(xs[rank].copy(), levels=2 ** 32)
    comm.destroy()
    return "ok"


@pytest.mark.parametrize("n", [2, 3])
def test_all_reduce_quantized(n):
    assert run_ranks(n, levels_rank, sieve.get_unique_id(),
                     env={"SIEVE_LINK_RATE": "12m"}) == ["ok"] * n

