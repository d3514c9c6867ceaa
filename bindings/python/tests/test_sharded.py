"""sieve.reduce_scatter_quantized and sieve.all_gather_quantized on real processes, NumPy
buffers: the reduce-scatter equal bit for bit to chunk r of the NumPy L-level reference
(philox_ref.ternary_avg over the whole send buffers), the all-gather equal bit for bit to a
NumPy block quantizer (kernels/block_quant.h's definition) and within its stated error,
and bad levels/bits refused before anything travels."""
import numpy as np
import pytest

import sieve
from mp_util import run_ranks
from philox_ref import ternary_avg


def inputs(n, count):
    return [np.random.default_rng(17 * r + 3).standard_normal(count).astype(np.float32)
            for r in range(n)]


def block_quant(x, bits, block=256):
    """The decoded values of sieveAllGatherQuantized for float32 x (finite)."""
    qmax = np.float32(2 ** (bits - 1) - 1)
    out = np.zeros_like(x)
    for b in range(0, x.size, block):
        xb = x[b:b + block]
        s = np.float32(np.abs(xb).max(initial=0) / qmax)
        if s > 0:
            q = np.clip(np.rint(xb / s), -qmax, qmax).astype(np.float32)
            out[b:b + block] = q * s
    return out


def sharded_rank(rank, n, uid):
    comm = sieve.Comm(n, uid, rank)
    count = 1001  # per rank: odd, and the whole send spans several 2048-blocks
    xs = inputs(n, count * n)
    for levels in (1, 7):
        got = sieve.reduce_scatter_quantized(comm, xs[rank].copy(), np.empty(count, np.float32),
                                             levels=levels, op="avg", seed=4, step=levels)
        want = ternary_avg(xs, seed=4, step=levels, levels=levels)[rank * count:(rank + 1) * count]
        assert np.array_equal(got, want), "levels %d: %d elements differ" % (
            levels, int(np.sum(got != want)))
    shard = xs[rank][:count].copy()
    for bits in (8, 4):
        got = sieve.all_gather_quantized(comm, shard, np.empty(count * n, np.float32), bits=bits)
        want = np.concatenate([block_quant(x[:count], bits) for x in xs])
        assert np.array_equal(got, want), "bits %d: %d elements differ" % (
            bits, int(np.sum(got != want)))
        # The stated bound for float32, per shard's blocks: s / 2 + 2^-22 (|x| + s) + 2^-25.
        for r, x in enumerate(xs):
            x, y = x[:count], got[r * count:(r + 1) * count]
            s = np.repeat([np.abs(x[b:b + 256]).max() / (2 ** (bits - 1) - 1)
                           for b in range(0, count, 256)], 256)[:count]
            assert np.all(np.abs(y - x) <= s / 2 + 2.0 ** -22 * (np.abs(x) + s) + 2.0 ** -25)
    with pytest.raises(sieve.SieveError, match="levels 0 is out of range"):
        sieve.reduce_scatter_quantized(comm, xs[rank].copy(), np.empty(count, np.float32),
                                       levels=0)
    with pytest.raises(sieve.SieveError, match="bits 5 is not supported"):
        sieve.all_gather_quantized(comm, shard, np.empty(count * n, np.float32), bits=5)
    with pytest.raises(sieve.SieveError, match="recv has"):
        sieve.reduce_scatter_quantized(comm, xs[rank].copy(), np.empty(count + 1, np.float32))
    comm.destroy()
    return "ok"


def test_sharded_collectives_match_numpy():
    # 3 ranks: chunks of unequal position in the 2048-blocks; one run keeps the test short.
    assert run_ranks(3, sharded_rank, sieve.get_unique_id()) == ["ok"] * 3
