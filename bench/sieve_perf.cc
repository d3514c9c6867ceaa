// sieve-perf: the nccl-tests of Sieve. Each process is one rank (sieve-run, torchrun-style or
// mpirun environment); it sweeps message sizes for one collective, times out-of-place and
// in-place calls, checks the results and prints an nccl-tests style table on rank 0.
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "peer_perf.h"
#include "perf_args.h"
#include "perf_coll.h"
#include "perf_mask.h"
#include "perf_report.h"
#include "perf_subnet.h"
#include "sieve.h"

namespace sieve {
namespace perf {
namespace {

// The rank the launcher gave this process, before the communicator exists (for messages).
int LauncherRank() {
  for (const char* name : {"SIEVE_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
    if (const char* v = getenv(name)) return atoi(v);
  }
  return 0;
}

// One benchmark run over all sizes. Not thread-safe; one per process.
class Bench {
 public:
  Bench(const Options& opts, sieveComm_t comm, int rank, int nranks)
      : opts_(opts),
        comm_(comm),
        rank_(rank),
        nranks_(nranks),
        checker_(opts, rank, nranks),
        report_(opts, nranks) {}

  // Runs the sweep. Returns 0, 1 if any element was wrong, or 3 after a failed call.
  int Run() {
    type_size_ = TypeSize(opts_.type);
    AllocateBuffers();
    if (rank_ == 0) report_.PrintHeader(SizeMeaning(opts_.coll));
    uint64_t step = 0;
    for (size_t bytes = opts_.min_bytes; bytes <= opts_.max_bytes; bytes = NextSize(bytes)) {
      Shape shape = ShapeOf(opts_.coll, bytes, nranks_, type_size_);
      Row out, in;
      if (opts_.masked && !RegisterMask(shape)) return 3;
      if (opts_.subnet() && !RegisterLayout(shape)) return 3;
      if (opts_.auto_mask) {
        keep_ = RandomKeep(shape.call_count, opts_.mask_density, 12345);
        checker_.SetMask(keep_.data());
        checker_.SetZeroOutsideMask(true);
      }
      if (!Measure(shape, false, ++step, &out)) return 3;
      bool has_in = SupportsInPlace(opts_.coll);
      if (has_in && !Measure(shape, true, ++step, &in)) return 3;
      if (opts_.masked && !Check(sieveMaskDeregister(mask_), "sieveMaskDeregister")) return 3;
      if (opts_.subnet() && !Check(sieveLayoutDeregister(layout_), "sieveLayoutDeregister"))
        return 3;
      if (rank_ == 0) report_.AddLine(out, has_in ? &in : nullptr);
      total_wrong_ +=
          std::max<int64_t>(out.wrong, 0) + (has_in ? std::max<int64_t>(in.wrong, 0) : 0);
    }
    if (rank_ == 0) {
      report_.PrintFooter();
      PrintIdeal();
      if (!report_.WriteFiles()) return 3;
    }
    return total_wrong_ ? 1 : 0;
  }

 private:
  size_t NextSize(size_t bytes) const {
    if (opts_.step_bytes) return bytes + opts_.step_bytes;
    return std::max(bytes + 1, static_cast<size_t>(static_cast<double>(bytes) * opts_.step_factor));
  }

  // Both buffers hold the largest input or output of the sweep (in-place views fit inside).
  void AllocateBuffers() {
    Shape shape = ShapeOf(opts_.coll, opts_.max_bytes, nranks_, type_size_);
    size_t bytes = std::max(shape.send_count, shape.recv_count) * type_size_;
    size_t words = bytes / sizeof(uint64_t) + 1;
    send_ = PeerBufferOf<uint64_t>(words * sizeof(uint64_t));
    recv_ = PeerBufferOf<uint64_t>(words * sizeof(uint64_t));
  }

  // Masked mode: registers this size's random mask (same seed on every rank).
  bool RegisterMask(const Shape& shape) {
    keep_ = RandomKeep(shape.call_count, opts_.mask_density, 12345);
    checker_.SetMask(keep_.data());
    return Check(sieveMaskRegister(comm_, keep_.data(), sieveMaskBytes, keep_.size(),
                                   sieveMaskStrict, &mask_),
                 "sieveMaskRegister");
  }

  // Subnet modes: this size's layout (and touched table), the same on every rank.
  bool RegisterLayout(const Shape& shape) {
    const uint64_t seed = 12345;
    setup_ = opts_.sdp_coverage >= 0
                 ? SdpSetup(shape.call_count, nranks_, opts_.sdp_coverage, seed)
                 : D2ftSetup(shape.call_count, nranks_, opts_.d2ft_p, seed);
    bitmap_ = setup_.Bitmap(rank_);
    checker_.SetSubnet(&setup_);
    double ideal = 0;
    for (int r = 0; r < nranks_; ++r)
      ideal = std::max(ideal, setup_.IdealBytesSent(r, nranks_, type_size_));
    ideal_.push_back({shape.bytes, ideal});
    return Check(RegisterSetup(comm_, shape.call_count, setup_, &layout_), "sieveLayoutRegister");
  }

  // The bytes/rank the subnet plan needs (rings among each group's contributors,
  // the D2FT fan-out to non-contributing holders and bitmap all-gather), max over ranks.
  void PrintIdeal() const {
    if (ideal_.empty()) return;
    if (opts_.sdp_coverage >= 0)
      printf("# SDP coverage %g: %d blocks, each held by about %g ranks\n", opts_.sdp_coverage,
             kSubnets, opts_.sdp_coverage * nranks_);
    else
      printf("# D2FT: %d subnets held by every rank, each touched by each rank with p = %g\n",
             kSubnets, opts_.d2ft_p);
    for (const auto& entry : ideal_)
      printf("# ideal bytes/rank at size %zu: %.0f\n", entry.first, entry.second);
  }

  uint64_t BytesSent() {
    sieveCounters_t c{};
    sieveCommGetCounters(comm_, &c);
    return c.bytes_sent;
  }

  // The quantized calls' parameters: a fresh step per call (new rounding noise, as in
  // training), error feedback with --feedback.
  sieveTernaryParams_t NextQuantParams(sieveMask_t mask) {
    return sieveTernaryParams_t{1, ++ternary_step_, 0, mask, opts_.feedback ? 1 : 0};
  }

  // Issues the collective once on `bufs`.
  sieveResult_t RunOnce(const Shape& shape, const CallBuffers& bufs) {
    size_t n = shape.call_count;
    sieveDataType_t t = opts_.type;
    switch (opts_.coll) {
      case Collective::kAllReduce:
        if (opts_.ternary) {
          sieveTernaryParams_t params = NextQuantParams(opts_.masked ? mask_ : nullptr);
          if (opts_.levels != 1)
            return sieveAllReduceQuantized(bufs.send, bufs.recv, n, t, opts_.op, opts_.levels,
                                           &params, comm_, nullptr);
          return sieveAllReduceTernary(bufs.send, bufs.recv, n, t, opts_.op, &params, comm_,
                                       nullptr);
        }
        if (opts_.masked)
          return sieveAllReduceMasked(bufs.send, bufs.recv, n, t, opts_.op, mask_, comm_, nullptr);
        if (opts_.sdp_coverage >= 0)
          return sieveAllReduceSubnet(bufs.send, bufs.recv, n, t, layout_, comm_, nullptr);
        if (opts_.d2ft_p >= 0)
          return sieveAllReduceD2ft(bufs.send, bufs.recv, n, t, layout_, bitmap_.data(), nullptr,
                                    comm_, nullptr);
        return sieveAllReduce(bufs.send, bufs.recv, n, t, opts_.op, comm_, nullptr);
      case Collective::kBroadcast:
        return sieveBroadcast(bufs.send, bufs.recv, n, t, opts_.root, comm_, nullptr);
      case Collective::kReduce:
        return sieveReduce(bufs.send, bufs.recv, n, t, opts_.op, opts_.root, comm_, nullptr);
      case Collective::kAllGather:
        if (opts_.gather_bits != 0)
          return sieveAllGatherQuantized(bufs.send, bufs.recv, n, t, opts_.gather_bits, comm_,
                                         nullptr);
        return sieveAllGather(bufs.send, bufs.recv, n, t, comm_, nullptr);
      case Collective::kReduceScatter:
        if (opts_.ternary) {
          sieveTernaryParams_t params = NextQuantParams(nullptr);
          return sieveReduceScatterQuantized(bufs.send, bufs.recv, n, t, opts_.op, opts_.levels,
                                             &params, comm_, nullptr);
        }
        return sieveReduceScatter(bufs.send, bufs.recv, n, t, opts_.op, comm_, nullptr);
      case Collective::kSendRecv:
        return SendRecv(n, bufs);
    }
    return sieveInvalidArgument;
  }

  // Sends to rank+1 and receives from rank-1 inside one group.
  sieveResult_t SendRecv(size_t n, const CallBuffers& bufs) {
    sieveResult_t res = sieveGroupStart();
    if (res != sieveSuccess) return res;
    sieveResult_t send_res =
        sieveSend(bufs.send, n, opts_.type, (rank_ + 1) % nranks_, comm_, nullptr);
    sieveResult_t recv_res =
        sieveRecv(bufs.recv, n, opts_.type, (rank_ + nranks_ - 1) % nranks_, comm_, nullptr);
    res = sieveGroupEnd();
    if (send_res != sieveSuccess) return send_res;
    return recv_res != sieveSuccess ? recv_res : res;
  }

  bool Check(sieveResult_t res, const char* what) {
    if (res == sieveSuccess) return true;
    fprintf(stderr, "sieve-perf: rank %d: %s failed: %s: %s\n", rank_, what,
            sieveGetErrorString(res), sieveGetLastError(comm_));
    return false;
  }

  // Times opts_.iters calls after the warmup; *time_us and *sent (bytes sent per call)
  // are the max over ranks.
  bool Time(const Shape& shape, const CallBuffers& bufs, double* time_us, double* sent) {
    for (int i = 0; i < opts_.warmup; ++i) {
      if (!Check(RunOnce(shape, bufs), CollectiveName(opts_.coll))) return false;
    }
    int32_t token = 0;  // Lines the ranks up before the clock starts.
    if (!Check(sieveAllReduce(&token, &token, 1, sieveInt32, sieveSum, comm_, nullptr), "barrier"))
      return false;
    uint64_t sent_before = BytesSent();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < opts_.iters; ++i) {
      if (!Check(RunOnce(shape, bufs), CollectiveName(opts_.coll))) return false;
    }
    std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
    double result[2] = {elapsed.count() / opts_.iters,
                        static_cast<double>(BytesSent() - sent_before) / opts_.iters};
    if (!Check(sieveAllReduce(result, result, 2, sieveFloat64, sieveMax, comm_, nullptr),
               "time reduction"))
      return false;
    *time_us = result[0];
    *sent = result[1];
    return true;
  }

  // Runs the collective once on fresh inputs; *wrong is the count summed over ranks.
  bool Verify(const Shape& shape, const CallBuffers& bufs, uint64_t seed, int64_t* wrong) {
    checker_.Prepare(shape, bufs, seed);
    if (!Check(RunOnce(shape, bufs), CollectiveName(opts_.coll))) return false;
    *wrong = checker_.CountWrong(shape, bufs, seed);
    return Check(sieveAllReduce(wrong, wrong, 1, sieveInt64, sieveSum, comm_, nullptr),
                 "wrong-count reduction");
  }

  bool Measure(const Shape& shape, bool in_place, uint64_t seed, Row* row) {
    CallBuffers bufs =
        PlaceBuffers(opts_.coll, shape, rank_, in_place, type_size_, send_.get(), recv_.get());
    checker_.Prepare(shape, bufs, 0);
    row->bytes = shape.bytes;
    row->count = shape.count;
    row->in_place = in_place;
    if (!Time(shape, bufs, &row->time_us, &row->bytes_per_rank)) return false;
    row->algbw = row->time_us > 0 ? static_cast<double>(shape.bytes) / row->time_us / 1e3 : 0;
    row->busbw = row->algbw * BusBwFactor(opts_.coll, nranks_);
    row->wrong = -1;
    if (opts_.levels == SIEVE_LEVELS_AUTO &&
        !Check(sieveCommGetAutoLevels(comm_, &row->auto_levels), "sieveCommGetAutoLevels"))
      return false;
    return !opts_.check || Verify(shape, bufs, seed, &row->wrong);
  }

  const Options& opts_;
  sieveComm_t comm_;
  int rank_;
  int nranks_;
  Checker checker_;
  Report report_;
  size_t type_size_ = 0;
  PeerBuffer<uint64_t> send_, recv_;  // aligned as PyTorch's tensors
  int64_t total_wrong_ = 0;
  std::vector<uint8_t> keep_;
  sieveMask_t mask_ = nullptr;
  uint64_t ternary_step_ = 0;
  SubnetSetup setup_;
  std::vector<unsigned char> bitmap_;
  sieveLayout_t layout_ = nullptr;
  std::vector<std::pair<size_t, double>> ideal_;  // (size, ideal bytes/rank)
};

int Main(int argc, char** argv) {
  Options opts;
  int rc = ParseArgs(argc, argv, LauncherRank() == 0, &opts);
  if (rc >= 0) return rc;
  // The library reads its configuration at init: the tracker is switched on there.
  if (opts.auto_mask) setenv("SIEVE_AUTO_MASK", "1", 1);
  sieveComm_t comm = nullptr;
  sieveResult_t res = sieveCommInitFromEnv(&comm);
  if (res != sieveSuccess) {
    fprintf(stderr, "sieve-perf: rank %d: sieveCommInitFromEnv failed: %s: %s\n", LauncherRank(),
            sieveGetErrorString(res), sieveGetLastError(nullptr));
    return 3;
  }
  int rank = 0, nranks = 1;
  sieveCommUserRank(comm, &rank);
  sieveCommCount(comm, &nranks);
  if (opts.root >= nranks) {
    if (rank == 0) fprintf(stderr, "sieve-perf: root %d >= nranks %d\n", opts.root, nranks);
    sieveCommDestroy(comm);
    return 2;
  }
  rc = Bench(opts, comm, rank, nranks).Run();
  if (rc == 3) {
    sieveCommAbort(comm);
  } else if (sieveCommDestroy(comm) != sieveSuccess) {
    rc = 3;
  }
  return rc;
}

}  // namespace
}  // namespace perf
}  // namespace sieve

int main(int argc, char** argv) { return sieve::perf::Main(argc, argv); }
