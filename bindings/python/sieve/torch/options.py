"""What the "sieve" backend does with all_reduce, from pg_options or the environment.

    dist.init_process_group("sieve", pg_options=sieve.torch.Options(allreduce="ternary-ef"))
    SIEVE_TORCH_ALLREDUCE=ternary torchrun ... train.py     # the same without a code change
    SIEVE_TORCH_ALLREDUCE=auto-ef torchrun ... train.py     # dense or a level, chosen per call

An explicit Options field wins over the environment, which wins over the default.
"""
import os

# mode -> (SIEVE_* settings of the communicator, levels, error feedback?); levels 0 is the
# dense all-reduce, 1 ternary (sieveAllReduceTernary), L > 1 sieveAllReduceQuantized at L,
# "auto" sieveAllReduceQuantized(SIEVE_LEVELS_AUTO).
MODES = {
    "dense": ({}, 0, False),
    "auto-mask": ({"SIEVE_AUTO_MASK": "1"}, 0, False),  # Sieve's mask tracker
    "ternary": ({}, 1, False),
    "ternary-ef": ({}, 1, True),
    "q3": ({}, 3, False),
    "q3-ef": ({}, 3, True),
    "q7": ({}, 7, False),
    "q7-ef": ({}, 7, True),
    "auto": ({}, "auto", False),
    "auto-ef": ({}, "auto", True),
}
ENV_MODE, ENV_SEED, ENV_BLOCK = "SIEVE_TORCH_ALLREDUCE", "SIEVE_TERNARY_SEED", "SIEVE_TORCH_BLOCK"


class Options:
    """pg_options of the "sieve" backend.

    allreduce: what all_reduce of float32/float16/bfloat16 tensors with SUM or AVG does:
      "dense" (exact, as Gloo), "auto-mask" (the mask tracker: buffers whose zero pattern
      stays fixed travel masked, exact), "ternary" (unbiased stochastic ternary), "q3" and
      "q7" (3 or 7 levels per sign: about 3 and 4 bits), "auto" (dense or a level, chosen per
      call from the link and kernel speed this communicator measured, the same on every
      rank), each with "-ef" for error feedback. Other dtypes and ops are always dense.
      Default: $SIEVE_TORCH_ALLREDUCE, else "dense".
    seed: Philox seed of the ternary modes (every rank the same); default $SIEVE_TERNARY_SEED or 1.
    block_size: ternary scale block (0: Sieve's default); default $SIEVE_TORCH_BLOCK or 0.
    """

    def __init__(self, allreduce=None, seed=None, block_size=None):
        self.allreduce, self.seed, self.block_size = allreduce, seed, block_size

    def resolved(self):
        """A copy with every field decided (explicit, else environment, else default);
        ValueError naming the option or variable when a value is not understood."""
        mode = self.allreduce
        src = "Options.allreduce"
        if mode is None:
            mode, src = os.environ.get(ENV_MODE, "dense") or "dense", ENV_MODE
        mode = str(mode).strip().lower()
        if mode not in MODES:
            raise ValueError("%s=%r: expected one of %s" % (src, mode, ", ".join(MODES)))
        seed = _int(self.seed, ENV_SEED, 1, "Options.seed")
        block = _int(self.block_size, ENV_BLOCK, 0, "Options.block_size")
        if block < 0:
            raise ValueError("block_size %d is negative" % block)
        return Options(mode, seed, block)

    @property
    def comm_env(self):
        return MODES[self.allreduce][0]

    @property
    def ternary(self):
        """Whether float all_reduce is quantized (ternary, L levels or auto)."""
        return MODES[self.allreduce][1] != 0

    @property
    def levels(self):
        """0 (dense), 1 (ternary), L, or "auto"."""
        return MODES[self.allreduce][1]

    @property
    def error_feedback(self):
        return MODES[self.allreduce][2]

    def __repr__(self):
        return "Options(allreduce=%r, seed=%r, block_size=%r)" % (
            self.allreduce, self.seed, self.block_size)


def _int(value, env, default, what):
    src = what
    if value is None:
        value, src = os.environ.get(env), env
        if value in (None, ""):
            return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError("%s=%r is not an integer" % (src, value)) from None
