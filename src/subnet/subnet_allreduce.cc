// SDP and D2FT entry into the exchange: the call's fingerprint and verdict
// (one control channel per call), bitmap agreement, schedule checks and the
// per-pattern plan cache.
#include "subnet/subnet_allreduce.h"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>

#include "coll/collectives.h"
#include "coll/rank_digests.h"
#include "core/log.h"
#include "core/mix64.h"
#include "subnet/masked_plan.h"

namespace sieve::subnet {
namespace {

size_t RowBytes(const LayoutState& layout) {
  return (static_cast<size_t>(layout.num_segments()) + 7) / 8;
}

// Clears the bits past K in every row, so they cannot change the plan or its key.
void ClearPadding(std::vector<unsigned char>* table, size_t row_bytes, size_t k) {
  if (k % 8 == 0) return;
  const unsigned char keep = static_cast<unsigned char>((1u << (k % 8)) - 1);
  for (size_t at = row_bytes - 1; at < table->size(); at += row_bytes) (*table)[at] &= keep;
}

// Every rank's bitmap, gathered on the call's control channel: nranks rows of row_bytes.
Status GatherBitmaps(algo::Channel& control, size_t segment_bytes,
                     const std::vector<unsigned char>& touched, size_t row_bytes,
                     std::vector<unsigned char>* table) {
  table->assign(row_bytes * static_cast<size_t>(control.size()), 0);
  std::copy(touched.begin(), touched.begin() + row_bytes,
            table->begin() + static_cast<ptrdiff_t>(row_bytes * control.rank()));
  coll::CollArgs args;
  args.recv = table->data();
  args.count = row_bytes;
  args.dtype = kernels::DType::kUint8;
  return coll::RingAllGather(control, args, segment_bytes);
}

// SIEVE_CHECK_SCHEDULE=1: the caller's table must be the same on every rank
// (hashes gathered on the call's control channel).
Status CheckSchedule(algo::Channel& control, size_t segment_bytes,
                     const std::vector<unsigned char>& table) {
  uint64_t h = Mix64(table.size());
  for (size_t i = 0; i < table.size(); ++i) h = Mix64(h ^ (table[i] + (i << 8)));
  std::vector<uint64_t> all(static_cast<size_t>(control.size()));
  all[static_cast<size_t>(control.rank())] = h;
  coll::CollArgs args;
  args.recv = all.data();
  args.count = 1;
  args.dtype = kernels::DType::kUint64;
  SIEVE_RETURN_IF_ERROR(coll::RingAllGather(control, args, segment_bytes));
  const std::string differ = coll::RanksDifferingFromRank0(all.data(), control.size(), 1, 0);
  if (differ.empty()) return Status::OK();
  return Status::InvalidUsage(StrFormat(
      "D2FT schedule table differs across ranks: rank(s) %s passed a table different from rank "
      "0's (SIEVE_CHECK_SCHEDULE=1); every rank must pass the same table",
      differ.c_str()));
}

// What every rank must have called at this sequence number: the collective,
// the layout (count, K, hash), the datatype, the ring settings, the levels
// (0: dense) with the quantized call's seed, step and block (mixed into the
// layout's hash) and, for D2FT, how the bitmaps are learned. Ranks that differ fail on every rank
// naming the field (algo/op_header.h) instead of exchanging mismatched plans.
algo::OpFingerprint SubnetFingerprint(algo::OpKind kind, const ExchangeArgs& args,
                                      const LayoutState& layout, algo::BitmapSource bitmaps) {
  algo::OpFingerprint fp;
  fp.kind = kind;
  fp.count = layout.count;
  fp.dtype = static_cast<uint8_t>(args.dtype);
  fp.algo = algo::OpAlgo::kRing;
  fp.mode = layout.hash;
  const GroupQuantization& q = args.quant;
  // Levels have their own field; the rest must agree too, or codes do not add up.
  if (q.levels > 0) fp.mode ^= Mix64(algo::TernaryMode(q.seed, q.step, q.block));
  if (args.mask != nullptr) fp.mode ^= Mix64(args.mask->digest ^ 0x6d61736b);  // "mask"
  fp.levels = static_cast<uint8_t>(q.levels);
  fp.segments = static_cast<uint32_t>(layout.num_segments());
  fp.bitmaps = bitmaps;
  return fp;
}

void LogFirstUse(Comm& comm, const char* what, const Plan& plan, size_t bytes) {
  if (!comm.FirstUse(what, bytes)) return;
  size_t mine = 0;
  for (const GroupPlan& g : plan.groups)
    if (g.Involves(comm.rank())) ++mine;
  SIEVE_INFO(kLogColl,
             "%s of %zu bytes on %d ranks: %zu groups (rings among their holders), "
             "this rank in %zu",
             what, bytes, comm.size(), plan.groups.size(), mine);
}

Status Run(Comm& comm, const Plan& plan, const ExchangeArgs& args, size_t count,
           algo::Channel* control) {
  ++comm.stats().collectives;
  ++comm.stats().subnet_collectives;
  LogFirstUse(comm, args.what, plan, count * kernels::DTypeSize(args.dtype));
  if (args.mask == nullptr) return Exchange(comm, plan, args, control);
  // Dropped elements are not read, so zeroing them first is safe in place too.
  ++comm.stats().masked_collectives;
  ZeroDropped(plan, args.mask->bits, comm.rank(), kernels::DTypeSize(args.dtype), args.recv);
  return Exchange(comm, MaskPlan(plan, args.mask->bits), args, control);
}

// The D2FT plan for this step: from the caller's schedule or the gathered
// bitmaps (on `control`, null with one rank), cached per pattern.
Status D2ftPlan(Comm& comm, algo::Channel* control, LayoutState& layout,
                const std::vector<unsigned char>& touched,
                const std::vector<unsigned char>& schedule, std::shared_ptr<const Plan>* plan) {
  const size_t row_bytes = RowBytes(layout);
  const size_t segment_bytes = comm.config().segment_bytes;
  std::vector<unsigned char> table;
  if (!schedule.empty()) {
    table = schedule;
    if (comm.config().check_schedule && control != nullptr)
      SIEVE_RETURN_IF_ERROR(CheckSchedule(*control, segment_bytes, table));
  } else if (control != nullptr) {
    SIEVE_RETURN_IF_ERROR(GatherBitmaps(*control, segment_bytes, touched, row_bytes, &table));
  } else {
    table = touched;
  }
  ClearPadding(&table, row_bytes, static_cast<size_t>(layout.num_segments()));
  const std::string key(table.begin(), table.end());
  *plan = layout.d2ft_plans.Find(key);
  if (*plan) return Status::OK();
  auto built = std::make_shared<Plan>();
  SIEVE_RETURN_IF_ERROR(BuildD2ftPlan(layout, comm.size(), table, built.get()));
  *plan = built;
  layout.d2ft_plans.Insert(key, *plan);
  return Status::OK();
}

}  // namespace

Status AllReduceSubnet(Comm& comm, const ExchangeArgs& args, LayoutState& layout) {
  if (comm.size() == 1) return Run(comm, *layout.sdp_plan, args, layout.count, nullptr);
  // The control channel takes its sequence number before the groups take theirs.
  algo::Channel control = comm.MakeChannel(
      SubnetFingerprint(algo::OpKind::kSubnetAllReduce, args, layout, algo::BitmapSource::kNone),
      comm.NextSeq());
  return control.Conclude(Run(comm, *layout.sdp_plan, args, layout.count, &control));
}

Status AllReduceD2ft(Comm& comm, const ExchangeArgs& args, LayoutState& layout,
                     const std::vector<unsigned char>& touched,
                     const std::vector<unsigned char>& schedule) {
  std::shared_ptr<const Plan> plan;
  if (comm.size() == 1) {
    SIEVE_RETURN_IF_ERROR(D2ftPlan(comm, nullptr, layout, touched, schedule, &plan));
    return Run(comm, *plan, args, layout.count, nullptr);
  }
  algo::BitmapSource bitmaps = schedule.empty()             ? algo::BitmapSource::kGathered
                               : comm.config().check_schedule ? algo::BitmapSource::kScheduleChecked
                                                              : algo::BitmapSource::kSchedule;
  algo::Channel control = comm.MakeChannel(
      SubnetFingerprint(algo::OpKind::kD2ftAllReduce, args, layout, bitmaps), comm.NextSeq());
  Status st = D2ftPlan(comm, &control, layout, touched, schedule, &plan);
  if (st.ok()) st = Run(comm, *plan, args, layout.count, &control);
  return control.Conclude(st);
}

}  // namespace sieve::subnet
