// Masked all-reduce: packs by index inside the algorithm's first hop and first
// combine, runs the same ring/tree as the dense all-reduce on nnz elements, and
// unpacks each range of the result (zero where the mask is clear) on its last hop.
#include "mask/masked_allreduce.h"

#include "algo/ring.h"
#include "algo/ring_pattern.h"
#include "algo/tree.h"
#include "coll/hier.h"
#include "kernels/masked_pack.h"
#include "mask/masked_codec.h"
#include "plan/algo_choice.h"

namespace sieve::mask {
namespace {

// What the ranks agree on: the call's count (unpacked), datatype, op, and the
// mask: its number of kept elements and its digest (which ones).
algo::OpFingerprint Fingerprint(const coll::CollArgs& a, const MaskState& mask,
                                algo::OpAlgo algo) {
  algo::OpFingerprint fp;
  fp.kind = algo::OpKind::kMaskedAllReduce;
  fp.count = a.count;
  fp.dtype = static_cast<uint8_t>(a.dtype);
  fp.op = static_cast<uint8_t>(a.op);
  fp.algo = algo;
  fp.mode = algo::MaskedMode(mask.idx.size(), mask.digest);
  return fp;
}

// The ring, tree or direct exchange (`chosen`: plan::ChooseMaskedAllReduce's flat choice).
Status Exchange(Comm& comm, uint32_t seq, const coll::CollArgs& a, MaskedCodec& codec,
                const MaskState& mask, plan::Algo chosen) {
  const size_t nnz = mask.idx.size();
  ++comm.stats().collectives;
  const algo::AllReduceRun run = plan::FlatRun(comm, chosen, comm.config().segment_bytes);
  algo::Channel ch = comm.MakeChannel(Fingerprint(a, mask, run.algo), seq);
  return ch.Conclude(algo::RunAllReduce(ch, codec, nnz, run));
}

// The hierarchical all-reduce of nnz packed elements, in place in `packed`; every
// rank agrees on the masked call (its digest included) as on the flat plans.
Status HierPacked(Comm& comm, const coll::CollArgs& a, void* packed, const MaskState& mask) {
  coll::CollArgs p = a;
  p.send = packed;
  p.recv = packed;
  p.count = mask.idx.size();
  ++comm.stats().collectives;
  return coll::HierDenseAllReduce(comm, p, Fingerprint(a, mask, algo::OpAlgo::kHier));
}

// The flat choice with the masked codec (one rank: the codec's own passes).
Status RunCodec(Comm& comm, uint32_t seq, const coll::CollArgs& a, MaskedCodec& codec,
                const MaskState& mask, plan::Algo chosen) {
  const size_t nnz = mask.idx.size();
  if (comm.size() == 1) {
    codec.LoadInput(0, nnz);
    codec.Finalize(0, nnz);
    codec.Deliver(0, nnz);
    return Status::OK();
  }
  return Exchange(comm, seq, a, codec, mask, chosen);
}

}  // namespace

Status AllReduceMasked(Comm& comm, const coll::CollArgs& a, MaskState& mask) {
  uint32_t seq = comm.NextSeq();
  ++comm.stats().masked_collectives;
  const size_t esize = kernels::DTypeSize(a.dtype);
  const size_t nnz = mask.idx.size();
  char* packed = mask.Work(nnz * esize);
  if (nnz == 0) {  // nothing travels: the result is all zeros; the call is still agreed on
    kernels::MaskedUnpack(esize, packed, mask.bits.data(), a.count, a.recv);
    const plan::Algo chosen = plan::ChooseMaskedAllReduce(comm, 0, 0).algo;
    return comm.AgreeWithoutData(Fingerprint(a, mask, plan::FlatRun(comm, chosen, 0).algo), seq);
  }
  const plan::Algo chosen = plan::ChooseMaskedAllReduce(comm, nnz, nnz * esize).algo;
  if (chosen == plan::Algo::kHier) {
    // Packing is lossless: pack once, the hierarchical all-reduce of the kept
    // elements, then one unpack pass (the hierarchical plan has no codec hop).
    kernels::MaskedPack(esize, a.send, mask.idx.data(), nnz, packed);
    SIEVE_RETURN_IF_ERROR(HierPacked(comm, a, packed, mask));
    kernels::MaskedUnpack(esize, packed, mask.bits.data(), a.count, a.recv);
    return Status::OK();
  }
  MaskedCodec::View view{mask.idx.data(), mask.bits.data(), nnz, a.count};
  MaskedCodec codec(a.send, a.recv, packed, view, a.dtype, a.op, comm.size());
  return RunCodec(comm, seq, a, codec, mask, chosen);
}

Status AllReduceMaskedPacked(Comm& comm, const coll::CollArgs& p, MaskState& mask) {
  uint32_t seq = comm.NextSeq();
  ++comm.stats().masked_collectives;
  const size_t esize = kernels::DTypeSize(p.dtype);
  const size_t nnz = mask.idx.size();
  if (nnz == 0 || p.count != nnz || p.send != p.recv)
    return Status::Internal(StrFormat("packed masked allreduce of %zu elements, mask keeps %zu",
                                      p.count, nnz));
  coll::CollArgs dense = p;  // what the fingerprint names: the unpacked length
  dense.count = mask.count;
  const plan::Algo chosen = plan::ChooseMaskedAllReduce(comm, nnz, nnz * esize).algo;
  if (chosen == plan::Algo::kHier) return HierPacked(comm, dense, p.recv, mask);
  // The codec over the packed vector: its own mask keeps all nnz elements, so
  // the gather and the unpack are copies and the arithmetic is unchanged.
  mask.BuildPackedView();
  MaskedCodec::View view{mask.packed_idx.data(), mask.packed_bits.data(), nnz, nnz};
  MaskedCodec codec(p.recv, p.recv, mask.Work(nnz * esize), view, p.dtype, p.op, comm.size());
  return RunCodec(comm, seq, dense, codec, mask, chosen);
}

}  // namespace sieve::mask
