"""Elastic membership (docs/membership.md): revoke, who failed, shrink, grow. The Comm methods
revoke(), failed_ranks(), shrink(), grow_id() and grow() and the function join_grow() call
these."""
import ctypes

from . import _lib
from .errors import SieveError, check, INVALID_ARGUMENT

SHRINK_DEFAULT, SHRINK_ABORT = 0, 1


def revoke(comm):
    """sieveCommRevoke: stops every call in flight on comm (a call blocked in another thread
    raises SieveError(sieveRemoteError)); returns once comm is quiescent. Afterwards only
    shrink, failed_ranks, destroy and abort may be used. Thread-safe."""
    check(_lib.fn("sieveCommRevoke")(comm._handle(), 0), "sieveCommRevoke", comm._h)


def failed_ranks(comm, agree=True):
    """The failed ranks of comm, ascending. agree=True (sieveCommAgreeFailedRanks): collective
    over the live ranks, the same list on each: pass it to shrink(). agree=False
    (sieveCommGetFailedRanks): what this rank alone knows, no communication."""
    name = "sieveCommAgreeFailedRanks" if agree else "sieveCommGetFailedRanks"
    out = (ctypes.c_int * comm.size)()
    n = ctypes.c_int()
    check(_lib.fn(name)(comm._handle(), out, comm.size, ctypes.byref(n)), name, comm._h)
    return list(out[:n.value])


def shrink(comm, exclude, abort=True):
    """sieveCommShrink: a new Comm of the ranks not in `exclude` (every one of them calls it
    with the same list), renumbered in their old order. abort=True (SIEVE_SHRINK_ABORT) first
    revokes comm: the call to make after a failure. comm stays to be destroyed."""
    from .comm import Comm
    ranks = [int(r) for r in exclude]
    arr = (ctypes.c_int * max(1, len(ranks)))(*ranks)
    h = ctypes.c_void_p()
    check(_lib.fn("sieveCommShrink")(comm._handle(), arr, len(ranks), ctypes.byref(h), None,
                                     SHRINK_ABORT if abort else SHRINK_DEFAULT),
          "sieveCommShrink", comm._h)
    return Comm(_handle=h)


def grow_id(comm):
    """sieveCommGetUniqueId on one rank of comm: the id of a grow, as its hex string, to hand
    to the new ranks and to pass to grow() on this rank."""
    from .comm import unique_id_to_string
    uid = _lib.UniqueId()
    check(_lib.fn("sieveCommGetUniqueId")(comm._handle(), ctypes.byref(uid)),
          "sieveCommGetUniqueId", comm._h)
    return unique_id_to_string(uid)


def grow(comm, nranks, unique_id=None):
    """sieveCommGrow on an existing rank (collective over comm): a new Comm of nranks ranks,
    this rank keeping its rank. The rank that made the id passes it, the others None."""
    from .comm import Comm, unique_id_from_string
    uid = None
    if unique_id is not None:
        uid = unique_id_from_string(unique_id) if isinstance(unique_id, str) else unique_id
    h = ctypes.c_void_p()
    check(_lib.fn("sieveCommGrow")(comm._handle(), int(nranks),
                                   ctypes.byref(uid) if uid is not None else None, -1,
                                   ctypes.byref(h), None),
          "sieveCommGrow", comm._h)
    return Comm(_handle=h)


def join_grow(nranks, unique_id, rank):
    """sieveCommGrow on a new rank: joins the grown communicator as `rank` with the grow id."""
    from .comm import Comm, unique_id_from_string
    if unique_id is None:
        raise SieveError(INVALID_ARGUMENT, "a new rank needs the grow id")
    uid = unique_id_from_string(unique_id) if isinstance(unique_id, str) else unique_id
    h = ctypes.c_void_p()
    check(_lib.fn("sieveCommGrow")(None, int(nranks), ctypes.byref(uid), int(rank),
                                   ctypes.byref(h), None), "sieveCommGrow")
    return Comm(_handle=h)
