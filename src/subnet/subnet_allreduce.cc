// SDP and D2FT entry into the exchange: bitmap agreement, schedule checks and
// the per-pattern plan cache.
#include "subnet/subnet_allreduce.h"

#include <algorithm>
#include <string>

#include "coll/collectives.h"
#include "core/log.h"

namespace sieve::subnet {
namespace {

uint64_t Mix64(uint64_t x) {  // splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

size_t RowBytes(const LayoutState& layout) {
  return (static_cast<size_t>(layout.num_segments()) + 7) / 8;
}

// Clears the bits past K in every row, so they cannot change the plan or its key.
void ClearPadding(std::vector<unsigned char>* table, size_t row_bytes, size_t k) {
  if (k % 8 == 0) return;
  const unsigned char keep = static_cast<unsigned char>((1u << (k % 8)) - 1);
  for (size_t at = row_bytes - 1; at < table->size(); at += row_bytes) (*table)[at] &= keep;
}

// Every rank's bitmap, gathered: nranks rows of row_bytes.
Status GatherBitmaps(Comm& comm, const std::vector<unsigned char>& touched, size_t row_bytes,
                     std::vector<unsigned char>* table) {
  table->assign(row_bytes * static_cast<size_t>(comm.size()), 0);
  coll::CollArgs args;
  args.send = touched.data();
  args.recv = table->data();
  args.count = row_bytes;
  args.dtype = kernels::DType::kUint8;
  return coll::AllGather(comm, args);
}

// SIEVE_CHECK_SCHEDULE=1: the caller's table must be the same on every rank.
Status CheckSchedule(Comm& comm, const std::vector<unsigned char>& table) {
  uint64_t h = Mix64(table.size());
  for (size_t i = 0; i < table.size(); ++i) h = Mix64(h ^ (table[i] + (i << 8)));
  std::vector<uint64_t> all(static_cast<size_t>(comm.size()));
  coll::CollArgs args;
  args.send = &h;
  args.recv = all.data();
  args.count = 1;
  args.dtype = kernels::DType::kUint64;
  SIEVE_RETURN_IF_ERROR(coll::AllGather(comm, args));
  std::string differ;
  for (int r = 1; r < comm.size(); ++r)
    if (all[r] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  if (differ.empty()) return Status::OK();
  return Status::InvalidUsage(StrFormat(
      "D2FT schedule table differs across ranks: rank(s) %s passed a table different from rank "
      "0's (SIEVE_CHECK_SCHEDULE=1); every rank must pass the same table",
      differ.c_str()));
}

void LogFirstUse(Comm& comm, const char* what, const Plan& plan, size_t bytes) {
  if (!comm.FirstUse(what, bytes)) return;
  size_t mine = 0;
  for (const GroupPlan& g : plan.groups)
    if (std::binary_search(g.senders.begin(), g.senders.end(), comm.rank()) ||
        std::binary_search(g.receivers.begin(), g.receivers.end(), comm.rank()))
      ++mine;
  SIEVE_INFO(kLogColl,
             "%s of %zu bytes on %d ranks: %zu groups (rings among their holders), "
             "this rank in %zu",
             what, bytes, comm.size(), plan.groups.size(), mine);
}

Status Run(Comm& comm, const Plan& plan, const ExchangeArgs& args, size_t count) {
  ++comm.stats().collectives;
  ++comm.stats().subnet_collectives;
  LogFirstUse(comm, args.what, plan, count * kernels::DTypeSize(args.dtype));
  return Exchange(comm, plan, args);
}

}  // namespace

Status AllReduceSubnet(Comm& comm, const ExchangeArgs& args, LayoutState& layout) {
  return Run(comm, *layout.sdp_plan, args, layout.count);
}

Status AllReduceD2ft(Comm& comm, const ExchangeArgs& args, LayoutState& layout,
                     const std::vector<unsigned char>& touched,
                     const std::vector<unsigned char>& schedule) {
  const size_t row_bytes = RowBytes(layout);
  std::vector<unsigned char> table;
  if (!schedule.empty()) {
    table = schedule;
    if (comm.config().check_schedule && comm.size() > 1)
      SIEVE_RETURN_IF_ERROR(CheckSchedule(comm, table));
  } else if (comm.size() > 1) {
    SIEVE_RETURN_IF_ERROR(GatherBitmaps(comm, touched, row_bytes, &table));
  } else {
    table = touched;
  }
  ClearPadding(&table, row_bytes, static_cast<size_t>(layout.num_segments()));
  const std::string key(table.begin(), table.end());
  std::shared_ptr<const Plan> plan = layout.d2ft_plans.Find(key);
  if (!plan) {
    auto built = std::make_shared<Plan>();
    SIEVE_RETURN_IF_ERROR(BuildD2ftPlan(layout, comm.size(), table, built.get()));
    plan = built;
    layout.d2ft_plans.Insert(key, plan);
  }
  return Run(comm, *plan, args, layout.count);
}

}  // namespace sieve::subnet
