"""Run by test_torch_launch.py under torchrun: an ordinary DDP script whose only Sieve-specific
lines are the import and the backend name; SIEVE_TORCH_ALLREDUCE chooses the all-reduce."""
import os
import sys

import numpy as np
import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sieve.torch  # noqa: E402,F401 - registers the backend
from philox_ref import ternary_avg  # noqa: E402

dist.init_process_group("sieve")  # env:// from torchrun: RANK, WORLD_SIZE, MASTER_ADDR/PORT
rank, n = dist.get_rank(), dist.get_world_size()
assert dist.get_backend() == "sieve"
mode = dist.group.WORLD.options.allreduce
inputs = [torch.linspace(-1, 1, 5000) * (r + 1) for r in range(n)]
x = inputs[rank].clone()
dist.all_reduce(x, op=dist.ReduceOp.AVG)
if mode == "ternary":
    want = ternary_avg([i.numpy() for i in inputs], seed=1, step=0, block=64)
    assert np.array_equal(x.numpy(), want), "not the ternary reference"
else:
    assert torch.allclose(x, torch.stack(inputs).mean(0))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(20, 50), torch.nn.ReLU(), torch.nn.Linear(50, 4))
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
g = torch.Generator().manual_seed(rank)
for _ in range(3):
    opt.zero_grad()
    torch.nn.functional.mse_loss(ddp(torch.randn(8, 20, generator=g)),
                                 torch.randn(8, 4, generator=g)).backward()
    opt.step()
flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
copies = [torch.empty_like(flat) for _ in range(n)]
dist.all_gather(copies, flat)
assert all(torch.equal(c, copies[0]) for c in copies), "replicas diverged"
pair = dist.new_group([0, 1], backend="sieve")
y = torch.ones(3)
dist.all_reduce(y, group=pair)
assert torch.equal(y, torch.full((3,), 2.0))
dist.destroy_process_group()
print("OK rank %d mode %s" % (rank, mode), flush=True)
