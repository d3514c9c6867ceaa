"""Every integer the bindings hand to libsieve through ctypes is range-checked first: a value
that does not fit its C type (int, size_t, uint64_t) is refused with an exception naming the
argument, never truncated (ctypes would turn root=2**32 into root 0 and op=2**40 into sum)."""
import numpy as np
import pytest
import torch

import sieve
from sieve._args import c_int, c_size, c_uint64
from mp_util import run_ranks


@pytest.mark.parametrize("check, lo, hi", [(c_int, -2 ** 31, 2 ** 31 - 1),
                                           (c_size, 0, 2 ** 64 - 1),
                                           (c_uint64, 0, 2 ** 64 - 1)])
def test_checkers_accept_the_c_range_and_nothing_else(check, lo, hi):
    assert check(lo, "x", "f") == lo and check(hi, "x", "f") == hi
    assert check(np.int64(3), "x", "f") == 3 and check(True, "x", "f") == 1
    for bad in (lo - 1, hi + 1, 2 ** 100, -2 ** 100):
        with pytest.raises(OverflowError) as e:
            check(bad, "the_arg", "the_call")
        assert "the_call: the_arg=%d" % bad in str(e.value)
        assert isinstance(e.value, ValueError) and isinstance(e.value, sieve.SieveError)
        assert e.value.code == 4  # sieveInvalidArgument, as the library would say
    for bad in (1.0, 2.5, "3", None):
        with pytest.raises(TypeError, match="the_call: the_arg must be an integer"):
            check(bad, "the_arg", "the_call")


def test_init_refuses_before_joining():
    # Refused before any bootstrap: no rank, no timeout to wait out.
    with pytest.raises(OverflowError, match="nranks=4294967298"):
        sieve.Comm(2 ** 32 + 2, "00", 0)
    with pytest.raises(OverflowError, match="rank=-2147483649"):
        sieve.Comm(2, "00", -2 ** 31 - 1)


def refusals_rank(rank, n, uid):
    comm = sieve.Comm(n, uid, rank)
    x = torch.ones(8)
    mask = comm.register_mask(np.ones(8, dtype=bool))
    layout = comm.layout_equal_subnets(8, 2)
    before = comm.counters()["collectives"]
    seen = []

    def refused(name, f, kind=OverflowError):
        try:
            f()
        except kind as e:
            assert name in str(e), (name, str(e))
            seen.append(name)
            return
        raise AssertionError("%s was not refused" % name)

    # The values of issue 22 item 3, then one out of range for every other integer argument.
    refused("op=1099511627776", lambda: comm.all_reduce(x, op=2 ** 40))
    refused("root=4294967296", lambda: comm.broadcast(x, root=2 ** 32))
    refused("peer=4294967297", lambda: comm.send(x, 2 ** 32 + 1))
    refused("block_size=-1", lambda: comm.all_reduce_ternary(x, block_size=-1))
    refused("root=-2147483649", lambda: comm.reduce(x, root=-2 ** 31 - 1))
    refused("op=4294967296", lambda: comm.reduce(x, op=2 ** 32))
    refused("op=-4294967296", lambda: comm.reduce_scatter(torch.ones(2 * n), torch.ones(2),
                                                          op=-2 ** 32))
    refused("op=4294967296", lambda: comm.all_reduce_masked(x, mask, op=2 ** 32))
    refused("peer=4294967296", lambda: comm.recv(x, 2 ** 32))
    refused("seed=-1", lambda: comm.all_reduce_ternary(x, seed=-1))
    refused("step=18446744073709551616", lambda: comm.all_reduce_ternary(x, step=2 ** 64))
    refused("block_size=18446744073709551616",
            lambda: comm.all_reduce_ternary(x, block_size=2 ** 64))
    refused("color=2147483648", lambda: comm.split(2 ** 31))
    refused("key=-2147483649", lambda: comm.split(0, -2 ** 31 - 1))
    refused("policy=4294967296", lambda: comm.register_mask(np.ones(8), policy=2 ** 32))
    refused("count=-8", lambda: comm.layout_equal_subnets(-8, 2))
    refused("nsubnets=4294967298", lambda: comm.layout_equal_subnets(8, 2 ** 32 + 2))
    refused("count=-1", lambda: comm.register_layout(-1, [(0, 8, [0, 1])]))
    refused("segment 0 offset=-1", lambda: comm.register_layout(8, [(-1, 9, [0, 1])]))
    refused("segment 1 length=18446744073709551617",
            lambda: comm.register_layout(8, [(0, 4, [0]), (4, 2 ** 64 + 1, [1])]))
    refused("segment 0 holder=4294967296", lambda: comm.register_layout(8, [(0, 8, [2 ** 32])]))
    refused("block_size=-1", lambda: comm.layout_from_mask_matrix(np.ones((n, 2)), -1, 8))
    refused("count=-2", lambda: comm.layout_from_mask_matrix(np.ones((n, 2)), 4, -2))
    # Non-integers are refused, not truncated (root=1.7 is not root 1).
    refused("root must be an integer", lambda: comm.broadcast(x, root=1.7), TypeError)
    refused("seed must be an integer", lambda: comm.all_reduce_ternary(x, seed=0.5), TypeError)
    refused("touched: segment indices must be integers",
            lambda: comm.all_reduce_d2ft(x, layout, [1.5]), ValueError)

    # Nothing reached the library's collectives, and the ranks are still in step: an
    # in-range but invalid value is the library's to refuse (it names it), then a real call.
    assert comm.counters()["collectives"] == before
    try:
        comm.broadcast(x, root=2 ** 31 - 1)
        raise AssertionError("root 2**31-1 accepted")
    except sieve.SieveError as e:
        assert e.code == 4 and not isinstance(e, OverflowError), e
    y = torch.full((5,), float(rank + 1))
    comm.all_reduce(y)
    assert torch.equal(y, torch.full((5,), float(n * (n + 1) // 2)))
    layout.deregister()
    mask.deregister()
    comm.destroy()
    return len(seen)


def test_out_of_range_integers_are_refused_on_every_call():
    counts = run_ranks(2, refusals_rank, sieve.get_unique_id(), env={"SIEVE_TIMEOUT": "5"},
                       timeout=60)
    assert counts == [26, 26]
