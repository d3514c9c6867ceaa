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


def ternary_avg(inputs, seed, step, block=2048, kept=None):
    """Expected float32 result of the avg ternary all-reduce of per-rank float32 vectors."""
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
        words = philox_words(j // 4, r, step, seed)[j, j % 4]
        u = (words >> np.uint64(8)).astype(np.float32) * np.float32(5.9604644775390625e-08)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.abs(x) / s
        hit = (s > 0) & (u < ratio)
        total += np.where(hit, np.where(x < 0, -1, 1), 0)
    out = np.zeros(inputs[0].size, dtype=np.float32)
    out[idx] = (s * total.astype(np.float32)) / np.float32(n)
    return out
