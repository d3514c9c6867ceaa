#!/usr/bin/env bash
# GPU check of the NCCL shim (issue 7): a PyTorch DDP job with backend="nccl", 2 processes on one
# GPU with libsieve-nccl.so preloaded, trains 20 steps; the first step's averaged gradients and
# the final parameters must equal those of a single-process run on the same global batch; prints
# which library served the NCCL calls.
#
# Device tensors go through Sieve's GPU path: each collective is classified as device memory,
# staged through pinned host memory on PyTorch's stream, and its network part runs on the
# communicator's progress thread (see src/gpu/). Needs a CUDA GPU and PyTorch with CUDA; run by
# tests/gpu/run.sh, which builds the shim first.
#
# Usage: bindings/nccl/gpu_check.sh [path/to/libsieve-nccl.so]   (default: build/...)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shim=$(realpath "${1:-$here/../../build/bindings/nccl/libsieve-nccl.so}")
[[ -f "$shim" ]] || { echo "FAIL: no $shim; build first (cmake --build build)"; exit 1; }
python=${PYTHON:-python3}
"$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
  { echo "FAIL: PyTorch with a CUDA GPU is needed"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/train.py" <<'PY'
# Trains a small MLP for 20 steps: `single` on the whole global batch, `ddp` on this rank's half.
import ctypes, os, sys
import torch
import torch.distributed as dist

STEPS, GLOBAL_BATCH = 20, 64
mode, out = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
device = torch.device("cuda:0")
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 8))
model = model.to(device)
gen = torch.Generator().manual_seed(1)
data = [(torch.randn(GLOBAL_BATCH, 32, generator=gen),
         torch.randn(GLOBAL_BATCH, 8, generator=gen)) for _ in range(STEPS)]
rank, world = 0, 1
if mode == "ddp":
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    sieve = hasattr(ctypes.CDLL(None), "sieveGetVersion")
    print(f"[{rank}] NCCL calls served by {'Sieve' if sieve else 'NCCL'} "
          f"(torch reports NCCL {torch.cuda.nccl.version()})", flush=True)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
per_rank = GLOBAL_BATCH // world
for step, (x, y) in enumerate(data):
    x = x[rank * per_rank:(rank + 1) * per_rank].to(device)
    y = y[rank * per_rank:(rank + 1) * per_rank].to(device)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()  # DDP averages gradients over ranks
    if step == 0 and rank == 0:
        torch.save([p.grad.detach().cpu() for p in model.parameters()], out + ".grad0")
    opt.step()
if rank == 0:
    module = model.module if mode == "ddp" else model
    torch.save([p.detach().cpu() for p in module.parameters()], out)
if mode == "ddp":
    dist.destroy_process_group()
PY

"$python" "$work/train.py" single "$work/single.pt"
pids=()
for rank in 0 1; do
  env LD_PRELOAD="$shim" RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=29517 SIEVE_SOCKET_IFNAME=lo UCX_NET_DEVICES=lo SIEVE_DEBUG=INFO \
    SIEVE_DEBUG_SUBSYS=INIT "$python" "$work/train.py" ddp "$work/ddp.pt" >"$work/rank$rank.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
cat "$work"/rank*.log
(( status == 0 )) || { echo "FAIL: the DDP run failed"; exit 1; }
# Sieve's own INFO lines prove who served the calls and that device buffers took the GPU path.
grep -q "Sieve serving NCCL calls" "$work"/rank*.log ||
  { echo "FAIL: no 'Sieve serving NCCL calls' line: the real NCCL answered"; exit 1; }
grep -qE "device buffers: (staged|direct)" "$work"/rank*.log ||
  { echo "FAIL: Sieve never took the device-buffer path"; exit 1; }
echo "ok: Sieve served the NCCL calls, on device buffers"

"$python" - "$work/single.pt" "$work/ddp.pt" <<'PY'
import sys, torch
def compare(single, ddp):
    worst = max((a - b).abs().max().item() for a, b in zip(single, ddp))
    return all(torch.allclose(a, b, rtol=1e-4, atol=1e-5) for a, b in zip(single, ddp)), worst
grads_ok, grads = compare(torch.load(sys.argv[1] + ".grad0"), torch.load(sys.argv[2] + ".grad0"))
params_ok, params = compare(torch.load(sys.argv[1]), torch.load(sys.argv[2]))
ok = grads_ok and params_ok
print(f"{'ok' if ok else 'FAIL'}: DDP over Sieve vs single process: step-0 gradients max |diff| "
      f"{grads:.3g}, parameters after 20 steps max |diff| {params:.3g}")
sys.exit(0 if ok else 1)
PY
