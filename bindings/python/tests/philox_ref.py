"""Sieve's ternary all-reduce written from DESIGN.md 1.3 in NumPy (Philox 4x32-10 keyed as
kernels/philox.h documents), to check the hooks' results exactly."""
import numpy as np

M32 = np.uint64(0xFFFFFFFF)


def philox_words(quads, rank, step, seed):
    """Philox4x32-10(counter={quad, rank, lo(step), hi(step)}, key={lo(seed), hi(seed)})."""
    q = np.asarray(quads, dtype=np.uint64)
    c0, c1 = q & M32, np.full_like(q, rank)
    c2, c3 = np.full_like(q, step & 0xFFFFFFFF), np.full_like(q, step >> 32)
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64(seed >> 32)
    for rnd in range(10):
        if rnd:
            k0 = (k0 + np.uint64(0x9E3779B9)) & M32
            k1 = (k1 + np.uint64(0xBB67AE85)) & M32
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & M32,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & M32)
    return np.stack([c0, c1, c2, c3], axis=1)


def philox_halves(j, rank, step, seed, refine=False):
    """Element j's 16 bits: half j & 1 (low half for even j) of word (j >> 1) & 3 of the
    evaluation with counter word 0 = j >> 3, with bit 31 set for the refinement bits."""
    j = np.asarray(j, dtype=np.uint64)
    octs = (j >> np.uint64(3)) | np.uint64(0x80000000 if refine else 0)
    words = philox_words(octs, rank, step, seed)[np.arange(j.size), (j >> np.uint64(1)) & np.uint64(3)]
    return (words >> (np.uint64(16) * (j & np.uint64(1)))) & np.uint64(0xFFFF)


def ternary_avg(inputs, seed, step, block=2048, kept=None, levels=1):
    """Expected float32 result of the avg ternary all-reduce of per-rank float32 vectors; with
    levels = L > 1, of the L-level all-reduce (DESIGN.md 1.3a): y = (|g| / s) * L in float32,
    q = sign(g) (floor(y) + [U < frac(y) * 2^32]), result (s * Q) / (n L)."""
    n = len(inputs)
    idx = np.arange(inputs[0].size) if kept is None else np.flatnonzero(kept)
    packed = [np.asarray(x, dtype=np.float32)[idx] for x in inputs]
    m = idx.size
    nb = (m + block - 1) // block
    scale = np.zeros(nb, dtype=np.float32)
    for x in packed:
        a = np.abs(x)
        for b in range(nb):
            scale[b] = max(scale[b], a[b * block:(b + 1) * block].max(initial=0))
    s = np.repeat(scale, block)[:m]
    total = np.zeros(m, dtype=np.int64)
    j = np.arange(m)
    for r, x in enumerate(packed):
        # U = 16 bits : 16 refinement bits, uniform in [0, 2^32); keep iff U < p * 2^32 (exact).
        u = (philox_halves(j, r, step, seed) << np.uint64(16)) | philox_halves(j, r, step, seed, True)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.abs(x) / s
        if levels == 1:
            hit = (s > 0) & (u.astype(np.float64) < ratio.astype(np.float64) * 4294967296.0)
            total += np.where(hit, np.where(x < 0, -1, 1), 0)
            continue
        y = (ratio * np.float32(levels)).astype(np.float32)  # float32, as specified
        y = np.where(s > 0, y, np.float32(0)).astype(np.float64)
        whole = np.floor(y)
        m = whole + (u.astype(np.float64) < (y - whole) * 4294967296.0)
        m = np.minimum(m, levels).astype(np.int64)
        total += np.where(x < 0, -m, m)
    out = np.zeros(inputs[0].size, dtype=np.float32)
    out[idx] = (s * total.astype(np.float32)) / np.float32(n * levels)
    return out
