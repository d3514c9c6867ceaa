"""D2FT on 4 data-parallel ranks: a warm-started residual-block network (the blocks are the
subnets) fine-tuned on scikit-learn's digits with plain DDP (Gloo all-reduce) versus D2FT:
a Fisher-scoring pre-pass (on the clock), then per step and rank a bi-level knapsack picks
the subnets run in full (by weight magnitude x micro-batch Fisher score, under the
full-cost budget) and forward-only (by Fisher score, under the forward-only budget); the
rest are skipped. Sieve's D2FT all-reduce averages each subnet over the ranks that ran it
in full; subnets nobody ran move no bytes.

    bindings/python/examples/run_example.sh d2ft [--testbed]
"""
import copy
import time

import numpy as np
import torch
import torch.distributed as dist

import common
from blocks_model import BlockNet
from sieve import d2ft, hooks


def fisher_scores(model, ctx):
    """fisher[micro-batch, k]: squared gradient norm of block k's parameters on each of this
    rank's micro-batches (the one-epoch pre-pass of D2FT; no update)."""
    out = np.zeros((ctx.batches_per_epoch, len(model.blocks)))
    for i, x, y in ctx.micro_batches():
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        for k, blk in enumerate(model.blocks):
            out[i, k] = sum(float(p.grad.square().sum()) for p in blk.parameters())
    model.zero_grad()
    return out


def main():
    args = common.parse(__doc__, steps=100, lr=0.05, batch=16, clip=1.0, extra={
        "nblocks": (int, 8, "residual blocks (subnets)"),
        "full-budget": (int, 15, "full-operation cost per rank and step (a block costs 3)"),
        "fwd-budget": (int, 2, "forward-only cost per rank and step (a block costs 1)")})
    ctx = common.Context(args)
    torch.manual_seed(args.seed)
    start = common.warm_start(BlockNet(k=args.nblocks), ctx)
    nparams = sum(p.numel() for p in start.parameters())
    records = []
    for name in args.runs.split(","):
        model = copy.deepcopy(start)
        if name == "ddp":
            ddp = torch.nn.parallel.DistributedDataParallel(model)
            records.append(common.train(ctx, name, ddp, torch.optim.SGD(
                model.parameters(), lr=args.lr, momentum=0.9)))
            continue
        t0 = time.perf_counter()
        fisher = torch.tensor(fisher_scores(model, ctx))
        every = [torch.empty_like(fisher) for _ in range(ctx.size)]
        dist.all_gather(every, fisher)  # every rank builds the same global schedule
        magnitude = np.array([float(torch.cat([p.detach().abs().reshape(-1)
                                               for p in blk.parameters()]).mean())
                              for blk in model.blocks])
        steps = range(args.steps)
        mb = np.array([[ctx.batch_index(s, r) for s in steps] for r in range(ctx.size)])
        fis = np.stack([every[r].numpy()[mb[r]] for r in range(ctx.size)])  # (r, s, k)
        ops = d2ft.schedule(magnitude * fis, fis, [3] * args.nblocks, [1] * args.nblocks,
                            args.full_budget, args.fwd_budget)
        tables = d2ft.bitmaps(ops)
        setup = time.perf_counter() - t0
        ddp = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
        state = hooks.D2ftState(ctx.comm, model.block_params(), args.nblocks)
        ddp.register_comm_hook(state, hooks.d2ft_hook)
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

        def before(step):
            state.table = tables[step]

        rec = common.train(ctx, "d2ft", ddp, opt, before_step=before, setup_seconds=setup,
                           forward=lambda x, step: ddp(x, ops[ctx.rank, step].tolist()),
                           compute_forward=lambda m, x, step: m(x, ops[ctx.rank, step].tolist()))
        counts = np.bincount(ops.reshape(-1), minlength=3) / ops.size
        rec["ops"] = {"skip": counts[0], "forward": counts[1], "full": counts[2]}
        rec["never_full_per_step"] = float(np.mean([(~t.any(0)).sum() for t in tables]))
        records.append(rec)
    common.report(ctx, records, nparams, note="; D2FT budgets full %d fwd %d of %d blocks x 3"
                  % (args.full_budget, args.fwd_budget, args.nblocks))
    common.finish(ctx)


if __name__ == "__main__":
    main()
