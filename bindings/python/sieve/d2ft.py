"""D2FT's scheduler: per device a bi-level 0/1 knapsack by dynamic programming. First the
subnets that run the full operation (forward + backward) are chosen by weight-magnitude
score under the full-cost budget, then, among the rest, the forward-only ones by Fisher
score under the forward-only budget; the remaining subnets are skipped. The full choices
of all devices at a step are that step's D2FT bitmaps (sieveAllReduceD2ft's schedule)."""
import numpy as np

SKIP, FORWARD, FULL = 0, 1, 2


def knapsack(values, costs, capacity):
    """Max total value of items with total cost <= capacity (integer costs >= 0).
    Returns (value, sorted list of chosen item indices). O(items * capacity)."""
    values = [float(v) for v in values]
    costs = [int(c) for c in costs]
    capacity = int(capacity)
    if any(c < 0 for c in costs) or capacity < 0:
        raise ValueError("costs and capacity must be non-negative integers")
    n = len(values)
    best = np.zeros((n + 1, capacity + 1))
    for i in range(1, n + 1):
        v, c = values[i - 1], costs[i - 1]
        best[i] = best[i - 1]
        if c <= capacity and v > 0:
            take = best[i - 1, :capacity + 1 - c] + v
            best[i, c:] = np.maximum(best[i - 1, c:], take)
    chosen, cap = [], capacity
    for i in range(n, 0, -1):  # walk back: item i was taken iff it changed the optimum
        if best[i, cap] != best[i - 1, cap]:
            chosen.append(i - 1)
            cap -= costs[i - 1]
    return float(best[n, capacity]), sorted(chosen)


def bilevel(full_scores, fwd_scores, full_costs, fwd_costs, full_budget, fwd_budget):
    """One device's operations per item: FULL, FORWARD or SKIP (see module doc)."""
    ops = np.full(len(full_costs), SKIP, dtype=np.int8)
    _, full = knapsack(full_scores, full_costs, full_budget)
    ops[full] = FULL
    rest = [i for i in range(len(full_costs)) if ops[i] == SKIP]
    _, fwd = knapsack([fwd_scores[i] for i in rest], [fwd_costs[i] for i in rest], fwd_budget)
    ops[[rest[i] for i in fwd]] = FORWARD
    return ops


def schedule(full_scores, fwd_scores, full_costs, fwd_costs, full_budget, fwd_budget):
    """ops[r, s, k] for scores shaped (ranks, steps, subnets); budgets per device and step
    (scalars or per-rank sequences, for heterogeneous devices)."""
    full_scores = np.asarray(full_scores, dtype=np.float64)
    fwd_scores = np.asarray(fwd_scores, dtype=np.float64)
    nr, ns, _ = full_scores.shape
    fb = np.broadcast_to(np.asarray(full_budget), (nr,))
    ob = np.broadcast_to(np.asarray(fwd_budget), (nr,))
    ops = np.zeros(full_scores.shape, dtype=np.int8)
    for r in range(nr):
        for s in range(ns):
            ops[r, s] = bilevel(full_scores[r, s], fwd_scores[r, s], full_costs, fwd_costs,
                                fb[r], ob[r])
    return ops


def bitmaps(ops):
    """The D2FT tables: bitmaps[s] = (ops[:, s, :] == FULL), nranks x nsubnets bools."""
    return [np.asarray(ops)[:, s, :] == FULL for s in range(np.asarray(ops).shape[1])]
