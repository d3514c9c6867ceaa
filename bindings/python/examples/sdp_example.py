"""SDP on 4 data-parallel ranks: a residual-block network on scikit-learn's digits trained
with plain DDP (Gloo all-reduce) versus subnetwork data parallelism: each rank holds a fixed
balanced subset of the blocks (coverage --coverage: about C*n holders per block), trains
only those (forward masking, scaled by 1/C as in stochastic depth, so the full model is
evaluated unscaled and starts where plain DDP starts) and averages each block only among
its holders with Sieve's coverage-weighted subnet all-reduce; the runs sdp-q7 and sdp-ternary
(--runs ddp,sieve,sdp-q7) quantize each holder group's ring at 7 or 1 levels with error
feedback (sieveAllReduceSubnetQuantized). Measured on loopback, 40 steps: sdp 0.72, sdp-q7
0.66 at 1/7 of its bytes; ternary does not suit this network (its block scales span weights
and biases of very different size): full-model ternary reaches 0.55 against DDP's 0.80, and
sdp-ternary, two holders per block, diverges.

    bindings/python/examples/run_example.sh sdp [--testbed]
"""
import copy

import torch
import torch.distributed as dist

import common
from blocks_model import BlockNet
from sieve import hooks, sdp


def assembled(model, matrix, comm):
    """The global model: every block taken from its holders (their copies are identical;
    summed and divided by the coverage). Communicates (evaluation only)."""
    full = copy.deepcopy(model)
    held = matrix[comm.rank]
    cover = matrix.sum(0)
    with torch.no_grad():
        for k, blk in enumerate(full.blocks):
            for p in blk.parameters():
                p.mul_(float(held[k]))
                dist.all_reduce(p.data)
                p.div_(float(cover[k]))
    return full


def main():
    args = common.parse(__doc__, steps=100, lr=0.05, batch=16, extra={
        "coverage": (float, 0.5, "fraction of the blocks each rank holds"),
        "nblocks": (int, 8, "residual blocks")})
    ctx = common.Context(args)
    torch.manual_seed(args.seed)
    start = common.warm_start(BlockNet(k=args.nblocks), ctx)
    nparams = sum(p.numel() for p in start.parameters())
    matrix = sdp.balanced_mask(ctx.size, args.nblocks, args.coverage, seed=args.seed)
    held = [k for k in range(args.nblocks) if matrix[ctx.rank, k]]
    records = []
    for name in args.runs.split(","):
        model = copy.deepcopy(start)
        if name == "ddp":
            ddp = torch.nn.parallel.DistributedDataParallel(model)
            records.append(common.train(ctx, name, ddp, torch.optim.SGD(
                model.parameters(), lr=args.lr, momentum=0.9)))
            continue
        ops = [2 if matrix[ctx.rank, k] else 0 for k in range(args.nblocks)]
        scale = args.nblocks / float(sum(matrix[ctx.rank]))
        ddp = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
        levels = {"sdp-ternary": 1, "sdp-q7": 7}.get(name)
        ddp.register_comm_hook(hooks.SdpState(ctx.comm, matrix, model.block_params(),
                                              levels=levels, seed=args.seed + 1,
                                              error_feedback=levels is not None),
                               hooks.sdp_hook)
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
        label = {1: "+ternary", 7: "+q7"}.get(levels, "")
        rec = common.train(ctx, "sdp%s C=%.2f" % (label, args.coverage), ddp, opt,
                           forward=lambda x, step: ddp(x, ops, scale),
                           compute_forward=lambda m, x, step: m(x, ops, scale),
                           eval_model=lambda: assembled(model, matrix, ctx.comm))
        records.append(rec)
    common.report(ctx, records, nparams, note="; rank %d holds blocks %s, coverage per block %s"
                  % (ctx.rank, held, matrix.sum(0).tolist()))
    common.finish(ctx)


if __name__ == "__main__":
    main()
