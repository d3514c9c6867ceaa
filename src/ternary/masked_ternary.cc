// Masked + ternary: the ternary all-reduce over the mask's kept elements,
// gathered once into the mask's work buffer, with the unpack (zero-fill
// included) fused into the dequantization of the last hop. The hierarchical
// plan (no codec hops) packs, runs on the packed vector, unpacks.
#include "ternary/masked_ternary.h"

#include <chrono>
#include <vector>

#include "core/log.h"
#include "kernels/masked_pack.h"
#include "kernels/ternary_compress.h"
#include "plan/algo_choice.h"

namespace sieve::mask {

Status TernaryAllReduceMasked(Comm& comm, const coll::TernaryArgs& args, MaskState& mask) {
  const coll::CollArgs& a = args.base;
  const size_t esize = kernels::DTypeSize(a.dtype);
  const size_t nnz = mask.idx.size();
  char* packed = mask.Work(nnz * esize);
  ++comm.stats().masked_collectives;
  if (nnz == 0) {  // nothing travels: the result is all zeros; the call is still agreed on
    kernels::MaskedUnpack(esize, packed, mask.bits.data(), a.count, a.recv);
    algo::OpFingerprint fp = coll::TernaryFingerprint(args);
    fp.count = 0;  // the elements quantized
    const plan::Algo chosen =
        plan::ChooseTernaryAllReduce(comm, 0, "the mask keeps nothing", args.levels).algo;
    fp.algo = plan::FlatRun(comm, chosen, 0).algo;
    return comm.AgreeWithoutData(fp, comm.NextSeq());
  }
  const char* flat_because = args.residual != nullptr ? "error feedback" : nullptr;
  if (plan::ChooseTernaryAllReduce(comm, nnz, flat_because, args.levels).algo ==
      plan::Algo::kHier) {
    kernels::MaskedPack(esize, a.send, mask.idx.data(), nnz, packed);
    coll::TernaryArgs packed_args = args;
    packed_args.base.send = packed;
    packed_args.base.recv = packed;
    packed_args.base.count = nnz;
    SIEVE_RETURN_IF_ERROR(coll::TernaryAllReduce(comm, packed_args));
    kernels::MaskedUnpack(esize, packed, mask.bits.data(), a.count, a.recv);
    return Status::OK();
  }
  // The kept elements gathered once (vpcompress through the bitmap; by index
  // when the mask is sparse enough that reading every position would cost
  // more): the quantizing hops then read nnz contiguous elements at the dense
  // kernels' speed. Through the bitmap, the block abs-maxes are taken in the
  // same pass, so the input is read once before the ring. The last hop still
  // scatters.
  coll::TernaryArgs masked = args;
  std::vector<float> local_scales;
  const auto gather_start = std::chrono::steady_clock::now();
  if (nnz * 16 < a.count) {
    kernels::MaskedPack(esize, a.send, mask.idx.data(), nnz, packed);
  } else {
    local_scales.resize((nnz + args.block - 1) / args.block);
    kernels::TernarySource src;
    src.dtype = a.dtype;
    src.data = a.send;
    src.residual = args.residual;  // over packed positions, like the scales
    src.block = args.block;
    kernels::TernaryCompressAbsMax(src, mask.bits.data(), a.count, packed, local_scales.data());
    masked.local_scales = local_scales.data();
  }
  SIEVE_TRACE(kLogColl, "masked ternary: gather of %zu of %zu elements%s, %.2f ms", nnz, a.count,
              local_scales.empty() ? " by index" : " with the block abs-max",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                        gather_start)
                  .count());
  masked.base.send = packed;
  masked.mask_send_packed = true;
  masked.mask_idx = mask.idx.data();
  masked.mask_bits = mask.bits.data();
  masked.mask_nnz = nnz;
  return coll::TernaryAllReduce(comm, masked);
}

Status TernaryAllReduceMaskedPacked(Comm& comm, const coll::TernaryArgs& args, MaskState& mask) {
  const size_t nnz = mask.idx.size();
  if (nnz == 0 || args.base.count != nnz || args.base.send != args.base.recv ||
      args.mask_idx != nullptr)
    return Status::Internal(StrFormat(
        "packed masked ternary allreduce of %zu elements, mask keeps %zu", args.base.count, nnz));
  ++comm.stats().masked_collectives;
  // TernaryAllReduceMasked's two plans, on packed data: the hierarchical one
  // already runs this call; the ring/tree over its gather (Philox index and
  // scale block = position among the kept elements) computes the same bits.
  return coll::TernaryAllReduce(comm, args);
}

}  // namespace sieve::mask
