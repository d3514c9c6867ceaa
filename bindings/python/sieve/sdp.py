"""SDP's trainer side: a balanced mask matrix (worker i holds block j) and the subnet
layout it induces on a flat buffer."""
import numpy as np


def balanced_mask(nworkers, nblocks, coverage, seed=0):
    """nworkers x nblocks uint8 matrix: every worker holds k = round(coverage * nblocks)
    blocks (at least 1), every block is held by floor or ceil of nworkers * k / nblocks
    workers (as uniform as possible; about coverage * nworkers), and every block has a
    holder. Worker i takes the k consecutive slots i*k .. i*k+k-1 of the sequence of
    blocks repeated cyclically; `seed` permutes which block is which."""
    if nworkers < 1 or nblocks < 1 or not 0.0 < coverage <= 1.0:
        raise ValueError("need nworkers, nblocks >= 1 and coverage in (0, 1]")
    k = min(nblocks, max(1, int(round(coverage * nblocks))))
    if nworkers * k < nblocks:
        raise ValueError("coverage %g leaves blocks without a holder (%d workers x %d blocks "
                         "< %d blocks)" % (coverage, nworkers, k, nblocks))
    perm = np.random.default_rng(seed).permutation(nblocks)
    m = np.zeros((nworkers, nblocks), dtype=np.uint8)
    for i in range(nworkers):
        for t in range(i * k, i * k + k):
            m[i, perm[t % nblocks]] = 1
    return m


def holders(matrix):
    """Per block, the ascending tuple of workers holding it."""
    m = np.asarray(matrix) != 0
    return [tuple(int(r) for r in np.flatnonzero(m[:, b])) for b in range(m.shape[1])]


def segments_from_blocks(matrix, block_ranges, count):
    """Layout segments [(offset, length, holders)] partitioning [0, count) for blocks given
    as element ranges: block_ranges[b] = [(offset, length), ...] (a model block may own
    several pieces of a flat buffer). Elements of no block are held by every worker.
    Adjacent pieces with the same holders merge into one segment."""
    m = np.asarray(matrix) != 0
    everyone = tuple(range(m.shape[0]))
    owner = np.full(count, -1, dtype=np.int64)
    for b, ranges in enumerate(block_ranges):
        for off, length in ranges:
            if off < 0 or off + length > count or np.any(owner[off:off + length] >= 0):
                raise ValueError("block %d range (%d, %d) overlaps another or leaves the buffer"
                                 % (b, off, length))
            owner[off:off + length] = b
    hs = holders(m)
    segs = []
    start = 0
    for j in range(1, count + 1):
        if j == count or owner[j] != owner[start]:
            h = everyone if owner[start] < 0 else hs[owner[start]]
            if segs and segs[-1][2] == h and segs[-1][0] + segs[-1][1] == start:
                segs[-1] = (segs[-1][0], segs[-1][1] + j - start, h)
            else:
                segs.append((start, j - start, h))
            start = j
    return segs


def coverage_distance(matrix):
    """SDP's rho^2 = || (1/n) m_uni - (1/c) m ||_F^2 (c = each column's coverage): how far
    the mask's averaging is from plain data-parallel averaging."""
    m = (np.asarray(matrix) != 0).astype(np.float64)
    c = m.sum(0)
    return float((((1.0 / m.shape[0]) - m / np.maximum(c, 1)) ** 2).sum())
