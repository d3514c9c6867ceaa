"""CUDA tensors in the "sieve" backend: Sieve's device path, enqueued on the current stream.

A collective on device buffers is issued on the caller's thread with
torch.cuda.current_stream() (Sieve enqueues the staging or direct transfers on it and
returns, as NCCL does), after the communicator's queued host work has run (AsyncComm.exclusive).
Work on the stream after the call sees the result, so the Work is complete at once. Only the
collectives DDP needs on device tensors take this path (all_reduce dense or ternary, broadcast,
reduce, all_gather_into_tensor / all_gather, reduce_scatter_tensor); others raise.
"""
import ctypes

import torch

from .. import _lib
from ..async_comm import new_future
from ..buffers import _torch_dtype
from .._args import c_int, c_size, c_uint64
from ..comm import LEVELS_AUTO, _op

SUPPORTED = ("all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
             "reduce_scatter_tensor")


def check_tensor(t, what):
    """Argument checks of a non-CPU tensor (on the caller's thread, before anything runs)."""
    if t.device.type != "cuda":
        raise ValueError("sieve: %s: %s tensors are not supported (CPU and CUDA)"
                         % (what, t.device.type))
    if what not in SUPPORTED:
        raise ValueError("sieve: %s of CUDA tensors is not supported (device path: %s)"
                         % (what, ", ".join(SUPPORTED)))
    if _torch_dtype(torch, t.dtype) is None:
        raise ValueError("sieve: %s: dtype %s has no Sieve datatype" % (what, t.dtype))


def _ptr(t):
    return ctypes.c_void_p(t.data_ptr()), t.numel(), _torch_dtype(torch, t.dtype)


def _stream(t):
    return ctypes.c_void_p(torch.cuda.current_stream(t.device).cuda_stream)


def _issue(pg, what, name, make_args, result, make_work):
    """Issues C function `name` with make_args(comm_handle, stream) on this thread."""
    with pg.sieve_comm.exclusive() as comm:
        args = make_args(comm._handle())
        comm._check(getattr(_lib.lib, name)(*args), name)
    fut = new_future()
    fut.set_result(result)  # stream-ordered: later work on the stream sees the result
    return make_work(fut, what, depth=4)  # _issue, device function, backend method, caller


def all_reduce(pg, t, op, make_work):
    p, n, dt = _ptr(t)
    s = _stream(t)
    o = pg.options
    if o.ternary and t.dtype in (torch.float32, torch.float16, torch.bfloat16) and \
            op in ("sum", "avg") and n > 0:
        step, pg._ternary_step = pg._ternary_step, pg._ternary_step + 1
        where = "all_reduce (quantized)"
        params = _lib.TernaryParams(c_uint64(o.seed, "seed", where),
                                    c_uint64(step, "step", where),
                                    c_size(o.block_size, "block_size", where), None,
                                    int(o.error_feedback))
        c_op = _op(op, where)
        if o.levels == 1:
            return _issue(pg, "all_reduce", "sieveAllReduceTernary",
                          lambda h: (p, p, n, dt, c_op, ctypes.byref(params), h, s), [t],
                          make_work)
        levels = LEVELS_AUTO if o.levels == "auto" else o.levels
        return _issue(pg, "all_reduce", "sieveAllReduceQuantized",
                      lambda h: (p, p, n, dt, c_op, levels, ctypes.byref(params), h, s), [t],
                      make_work)
    c_op = _op(op, "all_reduce")
    return _issue(pg, "all_reduce", "sieveAllReduce",
                  lambda h: (p, p, n, dt, c_op, h, s), [t], make_work)


def broadcast(pg, t, root, make_work):
    p, n, dt = _ptr(t)
    s = _stream(t)
    root = c_int(root, "root", "broadcast")
    return _issue(pg, "broadcast", "sieveBroadcast", lambda h: (p, p, n, dt, root, h, s), [t],
                  make_work)


def reduce(pg, t, op, root, make_work):
    p, n, dt = _ptr(t)
    s = _stream(t)
    c_op, root = _op(op, "reduce"), c_int(root, "root", "reduce")
    return _issue(pg, "reduce", "sieveReduce", lambda h: (p, p, n, dt, c_op, root, h, s),
                  [t], make_work)


def all_gather(pg, output, input, make_work, what="all_gather_into_tensor", result=None):
    ip, n, dt = _ptr(input)
    op_, _, _ = _ptr(output)
    s = _stream(input)
    return _issue(pg, what, "sieveAllGather", lambda h: (ip, op_, n, dt, h, s),
                  [output] if result is None else result, make_work)


def reduce_scatter(pg, output, input, op, make_work):
    ip, _, dt = _ptr(input)
    op_, n, _ = _ptr(output)
    s = _stream(output)
    c_op = _op(op, "reduce_scatter_tensor")
    return _issue(pg, "reduce_scatter_tensor", "sieveReduceScatter",
                  lambda h: (ip, op_, n, dt, c_op, h, s), [output], make_work)

