// The device-buffer rules of plan/device_choice.h and their INFO lines.
#include "plan/device_choice.h"

#include <atomic>

#include "core/log.h"
#include "plan/algo_choice.h"

namespace sieve::plan {

namespace {

std::atomic<PointerQuery> g_query{nullptr};
std::atomic<unsigned long> g_asked{0};

MemoryKind AskInstalled(const void* ptr) {
  const PointerQuery query = g_query.load(std::memory_order_acquire);
  if (query == nullptr) return MemoryKind::kHost;
  g_asked.fetch_add(1, std::memory_order_relaxed);
  return query(ptr);
}

DeviceChoice Logged(Comm& comm, algo::OpKind kind, size_t bytes, DeviceChoice choice) {
  const std::string what = std::string(algo::OpKindName(kind)) + " on device buffers";
  if (comm.FirstUse(what + ": " + DeviceRouteName(choice.route), bytes))
    SIEVE_INFO(kLogColl, "%s (%zu bytes): %s (%s)", what.c_str(), bytes,
               DeviceRouteName(choice.route), choice.why.c_str());
  return choice;
}

}  // namespace

const char* MemoryKindName(MemoryKind kind) {
  return kind == MemoryKind::kDevice ? "device" : "host";
}

void InstallPointerQuery(PointerQuery query) { g_query.store(query, std::memory_order_release); }

PointerQuery InstalledPointerQuery() { return g_query.load(std::memory_order_acquire); }

unsigned long PointerQueriesAsked() { return g_asked.load(std::memory_order_relaxed); }

Status ChooseMemory(std::initializer_list<NamedBuffer> buffers, MemoryKind* out) {
  return ChooseMemoryWith(&AskInstalled, buffers, out);
}

Status MixedBuffers(std::initializer_list<NamedBuffer> buffers, const MemoryKind* kinds) {
  std::string listing;
  size_t i = 0;
  for (const NamedBuffer& b : buffers) {
    const MemoryKind kind = kinds[i++];
    if (b.ptr == nullptr) continue;
    listing += StrFormat("%s%s %p is %s memory", listing.empty() ? "" : ", ", b.name, b.ptr,
                         MemoryKindName(kind));
  }
  return Status::InvalidUsage(StrFormat(
      "buffers of one call must all be host or all be device memory: %s", listing.c_str()));
}

const char* DeviceRouteName(DeviceRoute route) {
  switch (route) {
    case DeviceRoute::kDirect:
      return "direct";
    case DeviceRoute::kStaged:
      return "staged in chunks";
    case DeviceRoute::kWholeStaged:
      return "whole buffer staged, run on the host";
    case DeviceRoute::kKernels:
      return "device kernels, small parts staged";
    case DeviceRoute::kPackedOnDevice:
      return "packed on the device, kept elements staged";
  }
  return "?";
}

DeviceChoice ChooseDenseOnDevice(Comm& comm, algo::OpKind kind, size_t count, size_t bytes,
                                 bool direct_path, const std::string& path_why) {
  if (!direct_path) return Logged(comm, kind, bytes, {DeviceRoute::kStaged, path_why});
  if (kind == algo::OpKind::kAllReduce &&
      ChooseAllReduce(comm, count, bytes).algo == Algo::kHier)
    return Logged(comm, kind, bytes,
                  {DeviceRoute::kStaged, "the hierarchical all-reduce runs on host memory"});
  return Logged(comm, kind, bytes, {DeviceRoute::kDirect, path_why});
}

DeviceChoice ChooseMaskedOnDevice(Comm& comm, size_t nnz, bool kernels) {
  const algo::OpKind kind = algo::OpKind::kMaskedAllReduce;
  if (!kernels)
    return Logged(comm, kind, 0,
                  {DeviceRoute::kWholeStaged, "no device kernels in this libsieve or driver"});
  if (nnz == 0)
    return Logged(comm, kind, 0, {DeviceRoute::kWholeStaged, "the mask keeps nothing"});
  return Logged(comm, kind, 0,
                {DeviceRoute::kPackedOnDevice, "only the kept elements cross to the host"});
}

DeviceChoice ChooseTernaryOnDevice(Comm& comm, size_t elems, bool error_feedback, bool masked,
                                   bool kernels, int levels) {
  const algo::OpKind kind = algo::OpKind::kTernaryAllReduce;
  if (!kernels)
    return Logged(comm, kind, 0,
                  {DeviceRoute::kWholeStaged, "no device kernels in this libsieve or driver"});
  if (elems == 0)
    return Logged(comm, kind, 0, {DeviceRoute::kWholeStaged, "the mask keeps nothing"});
  const bool hier =
      ChooseTernaryAllReduce(comm, elems, error_feedback ? "error feedback" : nullptr, levels)
          .algo == Algo::kHier;
  if (!hier)
    return Logged(comm, kind, 0,
                  {DeviceRoute::kKernels, error_feedback ? "flat plan (error feedback)"
                                                         : "flat plan"});
  if (masked)
    return Logged(comm, kind, 0,
                  {DeviceRoute::kPackedOnDevice,
                   "hierarchical plan: the kept elements quantized on the host"});
  return Logged(comm, kind, 0,
                {DeviceRoute::kWholeStaged,
                 "hierarchical plan: dense sums inside hosts, quantized between hosts"});
}

DeviceChoice ChooseQuantizedReduceScatterOnDevice(Comm& comm, size_t count, bool masked,
                                                  bool kernels) {
  const algo::OpKind kind = algo::OpKind::kQuantizedReduceScatter;
  const char* staged = !kernels           ? "no device kernels in this libsieve or driver"
                       : masked           ? "masked: the blocks staged and packed on the host"
                       : comm.size() < 2  ? "one rank: nothing to exchange"
                       : count == 0       ? "nothing to reduce"
                                          : nullptr;
  if (staged != nullptr) return Logged(comm, kind, 0, {DeviceRoute::kWholeStaged, staged});
  return Logged(comm, kind, 0,
                {DeviceRoute::kKernels, "quantized on the device, this rank's chunk "
                                        "dequantized there"});
}

DeviceChoice ChooseQuantizedAllGatherOnDevice(Comm& comm, size_t count, bool kernels) {
  const algo::OpKind kind = algo::OpKind::kQuantizedAllGather;
  if (!kernels)
    return Logged(comm, kind, 0,
                  {DeviceRoute::kWholeStaged, "no device kernels in this libsieve or driver"});
  if (count == 0) return Logged(comm, kind, 0, {DeviceRoute::kWholeStaged, "nothing to gather"});
  return Logged(comm, kind, 0,
                {DeviceRoute::kKernels, "encoded and decoded on the device, only the encoded "
                                        "shards staged"});
}

}  // namespace sieve::plan
