// The top-k plan: select, all-gather the pairs on the call's own channel (its
// fingerprint carries count, datatype, op and the fraction, so ranks that
// disagree fail by name), sum.
#include "topk/topk_allreduce.h"

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/log.h"
#include "topk/topk_codec.h"

namespace sieve::topk {

namespace {

// Kept in the communicator's state (Comm::State).
struct Residuals {
  std::mutex mu;
  std::map<std::tuple<const void*, size_t, int>, std::vector<float>> by_buffer;
};

// The fraction's bits and whether error feedback is on: what, beyond count,
// datatype and op, every rank must agree on.
uint64_t ModeWord(const TopkArgs& a) {
  uint64_t bits = 0;
  std::memcpy(&bits, &a.fraction, sizeof bits);
  return (bits & ~uint64_t{1}) | (a.error_feedback ? 1 : 0);
}

}  // namespace

float* ResidualFor(Comm& comm, const void* send, size_t count, int dtype) {
  Residuals& all = comm.State<Residuals>();
  std::lock_guard<std::mutex> lock(all.mu);
  std::vector<float>& r = all.by_buffer[std::make_tuple(send, count, dtype)];
  if (r.size() != count) r.assign(count, 0.0f);
  return r.data();
}

Status TopkAllReduce(Comm& comm, const TopkArgs& a) {
  const coll::CollArgs& b = a.base;
  const int n = comm.size();
  const size_t k = KeptElements(b.count, a.fraction);
  const size_t block = k * PairBytes(b.dtype);
  std::vector<uint8_t> pairs(block * static_cast<size_t>(n));
  // The residual changes only when the call succeeds.
  const bool feedback = a.error_feedback && b.count > 0;  // (a count-0 call has no residual)
  std::vector<float> residual;
  if (feedback) residual.assign(a.residual, a.residual + b.count);
  SelectAndPack(b.send, b.count, b.dtype, k, feedback ? residual.data() : nullptr,
                pairs.data() + block * static_cast<size_t>(comm.rank()));

  algo::OpFingerprint fp;
  fp.kind = algo::OpKind::kTopkAllReduce;
  fp.count = b.count;
  fp.dtype = static_cast<uint8_t>(b.dtype);
  fp.op = static_cast<uint8_t>(b.op);
  fp.mode = ModeWord(a);
  fp.algo = algo::OpAlgo::kRing;
  const uint32_t seq = comm.NextSeq();
  if (!comm.is_view()) ++comm.stats().collectives;
  if (comm.FirstUse("allreduce-topk", block))
    SIEVE_INFO(kLogColl, "allreduce-topk (count %zu, k %zu): ring all-gather of %zu bytes per rank",
               b.count, k, block);
  algo::Channel ch = comm.MakeChannel(fp, seq);
  coll::CollArgs gather;
  gather.recv = pairs.data();
  gather.count = block;
  gather.dtype = kernels::DType::kUint8;
  SIEVE_RETURN_IF_ERROR(
      ch.Conclude(coll::RingAllGather(ch, gather, comm.config().segment_bytes)));
  SIEVE_RETURN_IF_ERROR(SumPairs(pairs.data(), n, k, b.dtype, b.op, b.count, b.recv));
  if (feedback) std::memcpy(a.residual, residual.data(), b.count * sizeof(float));
  return Status::OK();
}

}  // namespace sieve::topk
