"""The SDP and D2FT examples' model: an input layer, K residual MLP blocks (the SDP blocks /
D2FT subnets; each one a contiguous set of parameters) and a classifier."""
import torch


class Block(torch.nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.up, self.down = torch.nn.Linear(d, f), torch.nn.Linear(f, d)

    def forward(self, h):
        return self.down(torch.relu(self.up(h)))


class BlockNet(torch.nn.Module):
    def __init__(self, d=128, f=512, k=8):
        super().__init__()
        self.inp = torch.nn.Linear(64, d)
        self.blocks = torch.nn.ModuleList([Block(d, f) for _ in range(k)])
        self.out = torch.nn.Linear(d, 10)

    def forward(self, x, ops=None, scale=1.0):
        """ops[k]: 2 full, 1 forward-only (no gradient into the block), 0 skip; None: all
        blocks. scale multiplies the blocks run in full (inverted stochastic depth: a rank
        that runs a fraction C of the blocks scales them by 1/C, so the full model, used
        unscaled for evaluation, matches its subnetworks in expectation)."""
        h = torch.relu(self.inp(x))
        for k, blk in enumerate(self.blocks):
            op = 2 if ops is None else ops[k]
            if op == 2:
                h = h + (blk(h) if scale == 1.0 else scale * blk(h))
            elif op == 1:
                with torch.no_grad():
                    y = blk(h)
                h = h + y
        return self.out(h)

    def block_params(self):
        """{parameter: block id} for the blocks' parameters."""
        return {p: k for k, blk in enumerate(self.blocks) for p in blk.parameters()}
