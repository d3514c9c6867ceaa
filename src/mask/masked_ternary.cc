// Masked + ternary: one pack pass into the mask's work buffer, the ternary
// all-reduce in place there, one unpack pass into recvbuff.
#include "mask/masked_ternary.h"

#include "kernels/masked_pack.h"

namespace sieve::mask {

Status TernaryAllReduceMasked(Comm& comm, const coll::TernaryArgs& args, MaskState& mask) {
  const coll::CollArgs& a = args.base;
  const size_t esize = kernels::DTypeSize(a.dtype);
  const size_t nnz = mask.idx.size();
  char* packed = mask.Work(nnz * esize);
  ++comm.stats().masked_collectives;
  if (nnz > 0) {
    kernels::MaskedPack(esize, a.send, mask.idx.data(), nnz, packed);
    coll::TernaryArgs packed_args = args;
    packed_args.base.send = packed;
    packed_args.base.recv = packed;
    packed_args.base.count = nnz;
    SIEVE_RETURN_IF_ERROR(coll::TernaryAllReduce(comm, packed_args));
  }
  kernels::MaskedUnpack(esize, packed, mask.bits.data(), a.count, a.recv);
  return Status::OK();
}

}  // namespace sieve::mask
