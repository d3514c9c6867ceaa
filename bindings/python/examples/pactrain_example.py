"""PacTrain on 4 data-parallel ranks: a warm-started MLP on scikit-learn's digits, fine-tuned
with plain DDP (Gloo all-reduce) versus pruned by magnitude to --prune and fine-tuned with
Sieve's masked all-reduce (gradient sparsity enforcement) and masked+ternary.

    bindings/python/examples/run_example.sh pactrain [--testbed]
"""
import copy

import torch

import common
from sieve import hooks, pactrain


class Mlp(torch.nn.Sequential):
    def __init__(self, width):
        super().__init__(torch.nn.Linear(64, width), torch.nn.ReLU(),
                         torch.nn.Linear(width, width), torch.nn.ReLU(),
                         torch.nn.Linear(width, 10))


def main():
    args = common.parse(__doc__, steps=160, lr=0.05, batch=8, warm_epochs=2, extra={
        "width": (int, 1024, "hidden width (1024: 1.1 M parameters)"),
        "prune": (float, 0.8, "pruning ratio of the weight matrices")})
    args.runs = args.runs.replace("sieve", "masked+ternary")  # --runs ddp,masked,... for more
    ctx = common.Context(args)
    torch.manual_seed(args.seed)
    start = common.warm_start(Mlp(args.width), ctx)
    nparams = sum(p.numel() for p in start.parameters())
    records = []
    for name in args.runs.split(","):
        model = copy.deepcopy(start)
        ddp = common.ddp(model, args)  # the same DDP settings for every run
        # "ternary", "q7" (7 levels), "auto" (dense or a level per bucket, chosen from the
        # link and kernel speed measured): the quantizing hook alone, no pruning.
        levels = {"ternary": 1, "q7": 7, "auto": "auto"}.get(name)
        if name != "ddp":
            masks = pactrain.magnitude_prune(model, args.prune) if levels is None else {}
            state = (hooks.MaskedState(ctx.comm, masks) if name == "masked" else
                     hooks.TernaryState(ctx.comm, seed=args.seed + 1, masks=masks,
                                        error_feedback=True, levels=levels or 1))
            ddp.register_comm_hook(state, hooks.masked_hook if name == "masked"
                                   else hooks.ternary_hook)
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
        records.append(common.train(ctx, name, ddp, opt))
        if name != "ddp":
            assert all(torch.all(p[~m] == 0) for p, m in masks.items()), "pruned weight moved"
    common.report(ctx, records, nparams, note="; pruned %.0f%% of weights" % (100 * args.prune))
    common.finish(ctx)


if __name__ == "__main__":
    main()
