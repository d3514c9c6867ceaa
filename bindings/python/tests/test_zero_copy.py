"""The bindings hand the library the caller's own memory: the pointers passed are the
tensors' / arrays' data pointers, and a large all-reduce does not grow peak memory by
anything near the buffer's size."""
import resource

import numpy as np
import torch

import sieve
from sieve import _lib
from mp_util import run_ranks


def zero_copy_rank(rank, n, uid):
    comm = sieve.Comm(n, uid, rank)
    seen = []
    real = _lib.lib.sieveAllReduce

    def spy(send, recv, count, dtype, op, c, stream):
        seen.append((send, recv, count, dtype))
        return real(send, recv, count, dtype, op, c, stream)

    _lib.lib.sieveAllReduce = spy
    try:
        t = torch.full((1 << 20,), float(rank + 1))
        p = t.data_ptr()
        comm.all_reduce(t)
        assert seen[-1] == (p, p, 1 << 20, 7) and t.data_ptr() == p
        a = torch.arange(10, dtype=torch.float64).numpy()  # shares memory with the tensor
        comm.all_reduce(a, op="sum")
        assert seen[-1][0] == a.ctypes.data
        s, r = torch.ones(333, dtype=torch.bfloat16), torch.empty(333, dtype=torch.bfloat16)
        comm.all_reduce(s, r)
        assert seen[-1] == (s.data_ptr(), r.data_ptr(), 333, 9)
        sl = torch.zeros(100)[10:50]  # a contiguous slice: its own offset pointer
        comm.all_reduce(sl)
        assert seen[-1][0] == sl.data_ptr()
    finally:
        _lib.lib.sieveAllReduce = real
    # shared memory between torch and numpy: the result is visible through both
    base = np.full(1001, rank + 1, dtype=np.float32)
    comm.all_reduce(torch.from_numpy(base))
    assert np.all(base == n * (n + 1) / 2)
    # peak memory: a 256 MiB in-place all-reduce adds far less than its size
    big = torch.ones(64 << 20, dtype=torch.float32)
    comm.all_reduce(big[:1024])  # warm the transport
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    comm.all_reduce(big)
    growth_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert big[12345].item() == n
    comm.destroy()
    return growth_mib


def test_zero_copy():
    growth = run_ranks(2, zero_copy_rank, sieve.get_unique_id())
    assert max(growth) < 64, "peak memory grew %s MiB for a 256 MiB all-reduce" % growth
