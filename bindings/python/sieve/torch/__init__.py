"""torch.distributed backend "sieve". Importing this module registers it:

    import sieve.torch
    dist.init_process_group("sieve")                       # env:// (torchrun), tcp://, store=
    dist.init_process_group("sieve", pg_options=sieve.torch.Options(allreduce="ternary"))
    g = dist.new_group([0, 1], backend="sieve")

Every group gets its own non-blocking Sieve communicator; its unique id goes through the
store PyTorch hands the backend (no extra port). Collectives return asynchronous Work
objects completed by the communicator's completion thread (sieve.async_comm); SIEVE_TIMEOUT
of the communicator is the group's timeout. SIEVE_TORCH_ALLREDUCE (or Options.allreduce)
selects dense, auto-mask, ternary, q3, q7 or auto (each quantized one also with -ef, error
feedback) for all_reduce of float tensors.
"""
import inspect

import torch.distributed as dist

from .backend import ProcessGroupSieve
from .options import Options, MODES

NAME = "sieve"


def _create(*args):
    """The creator PyTorch calls: (store, rank, size, timeout) or, with the extended API,
    (_DistributedBackendOptions, pg_options)."""
    if len(args) == 2:
        opts, pg_options = args
        if pg_options is not None and not isinstance(pg_options, Options):
            raise TypeError("sieve: pg_options must be sieve.torch.Options, not %s"
                            % type(pg_options).__name__)
        return ProcessGroupSieve(opts.store, opts.group_rank, opts.group_size, opts.timeout,
                                 pg_options, name=getattr(opts, "group_id", None))
    store, rank, size, timeout = args
    return ProcessGroupSieve(store, rank, size, timeout)


def _register():
    if NAME.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    params = inspect.signature(dist.Backend.register_backend).parameters
    kwargs = {}
    if "extended_api" in params:  # pg_options reach the creator
        kwargs["extended_api"] = True
    if "devices" in params:
        kwargs["devices"] = ["cpu", "cuda"]
    dist.Backend.register_backend(NAME, _create, **kwargs)


def is_registered():
    return NAME.upper() in getattr(dist.Backend, "_plugins", {})


def describe():
    """The backend's configuration as this process would use it (for python3 -m sieve)."""
    lines = ["torch %s; backend \"sieve\" %s" % (
        __import__("torch").__version__, "registered" if is_registered() else "NOT registered")]
    try:
        o = Options().resolved()
        lines.append("all_reduce of float tensors: %s (seed %d, block %d; from %s)" % (
            o.allreduce, o.seed, o.block_size, "SIEVE_TORCH_ALLREDUCE, SIEVE_TERNARY_SEED, "
            "SIEVE_TORCH_BLOCK or their defaults"))
    except ValueError as e:
        lines.append("configuration error: %s" % e)
    lines.append("modes: %s" % ", ".join(MODES))
    return "\n".join(lines)


_register()

__all__ = ["Options", "ProcessGroupSieve", "NAME", "describe", "is_registered"]
