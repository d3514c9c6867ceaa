"""PacTrain's trainer side: magnitude pruning to a ratio and gradient sparsity
enforcement (GSE: gradients at pruned weights forced to 0 after backward), so every
worker's gradients share one known zero pattern and the masked all-reduce can pack it."""
import torch


def default_prunable(name, param):
    """Weight matrices and kernels; biases and norms stay dense."""
    return param.dim() > 1


@torch.no_grad()
def magnitude_prune(model, ratio, prunable=default_prunable):
    """Zeroes, in each prunable parameter, the floor(ratio * numel) weights of smallest
    magnitude (ties: lower index first) and returns {parameter: bool mask, True = kept}.
    Every rank starting from the same weights gets the same masks."""
    if not 0.0 <= ratio < 1.0:
        raise ValueError("pruning ratio must be in [0, 1), got %r" % ratio)
    masks = {}
    for name, p in model.named_parameters():
        if not prunable(name, p):
            continue
        flat = p.detach().reshape(-1)
        k = int(ratio * flat.numel())
        keep = torch.ones(flat.numel(), dtype=torch.bool)
        if k > 0:
            order = torch.sort(flat.abs(), stable=True).indices  # ascending |w|, stable ties
            keep[order[:k]] = False
        mask = keep.reshape(p.shape)
        p.mul_(mask)
        masks[p] = mask
    return masks


@torch.no_grad()
def mask_gradients(masks):
    """GSE after backward: grad = grad * mask for every pruned parameter."""
    for p, m in masks.items():
        if p.grad is not None:
            p.grad.mul_(m)


@torch.no_grad()
def apply_masks(masks):
    """Re-zeroes pruned weights (e.g. after an optimizer with weight decay on a restart)."""
    for p, m in masks.items():
        p.mul_(m)


def sparsity(masks):
    """Fraction of pruned weights over the masked parameters."""
    total = sum(m.numel() for m in masks.values())
    kept = sum(int(m.sum()) for m in masks.values())
    return 1.0 - kept / max(1, total)
