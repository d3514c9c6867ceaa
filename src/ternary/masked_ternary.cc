// Masked + ternary: the ternary all-reduce over the mask's kept elements,
// gathered once into the mask's work buffer, with the unpack (zero-fill
// included) fused into the dequantization of the last hop. The hierarchical
// plan (no codec hops) packs, runs on the packed vector, unpacks.
#include "ternary/masked_ternary.h"

#include <chrono>
#include <memory>
#include <vector>

#include "core/log.h"
#include "kernels/masked_pack.h"
#include "kernels/ternary_compress.h"
#include "plan/algo_choice.h"
#include "ternary/ternary_scales.h"

namespace sieve::mask {

namespace {

// The masked call's first pass (kernels::TernaryCompressor) as the scales' source:
// each piece's blocks are gathered, and their abs-maxes taken, just before the piece
// goes out.
class GatherForScales : public algo::LocalAbsMax {
 public:
  GatherForScales(const kernels::TernarySource& src, const uint64_t* bits, size_t count,
                  void* packed, size_t nnz)
      : scales_((nnz + src.block - 1) / src.block),
        gather_(src, bits, count, packed, scales_.data()) {}

  const float* Through(size_t end) override {
    if (!gather_.done()) {
      const auto start = std::chrono::steady_clock::now();
      gather_.Through(end);
      seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return scales_.data();
  }
  double seconds() const { return seconds_; }

 private:
  std::vector<float> scales_;
  kernels::TernaryCompressor gather_;
  double seconds_ = 0;
};

}  // namespace

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
  // same pass, so the input is read once before the ring, and the pass goes only
  // as far as each scale piece needs before the piece is sent: the rest of it
  // runs while the first pieces travel. The last hop still scatters.
  coll::TernaryArgs masked = args;
  std::unique_ptr<GatherForScales> gather;
  double gather_s = 0;
  if (nnz * 16 < a.count) {
    const auto start = std::chrono::steady_clock::now();
    kernels::MaskedPack(esize, a.send, mask.idx.data(), nnz, packed);
    gather_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } else {
    kernels::TernarySource src;
    src.dtype = a.dtype;
    src.data = a.send;
    src.residual = args.residual;  // over packed positions, like the scales
    src.block = args.block;
    gather = std::make_unique<GatherForScales>(src, mask.bits.data(), a.count, packed, nnz);
    masked.local_scales = gather.get();
  }
  masked.base.send = packed;
  masked.mask_send_packed = true;
  masked.mask_idx = mask.idx.data();
  masked.mask_bits = mask.bits.data();
  masked.mask_nnz = nnz;
  Status st = coll::TernaryAllReduce(comm, masked);
  SIEVE_TRACE(kLogColl, "masked ternary: gather of %zu of %zu elements%s, %.2f ms", nnz, a.count,
              gather == nullptr ? " by index" : " with the block abs-max, as the scales went",
              (gather == nullptr ? gather_s : gather->seconds()) * 1e3);
  return st;
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
