// The fake device's streams, operations, strictness checks and classifier.
#include "support/fake_device.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gpu/thread_role.h"
#include "kernels/block_quant.h"
#include "kernels/masked_pack.h"
#include "kernels/reduce.h"
#include "kernels/ternary.h"
#include "kernels/ternary_feedback.h"

namespace sieve_test {

using sieve::Status;

namespace {

// The calling thread's context stack (back() is current), across fakes.
thread_local std::vector<CUctx_st*> t_contexts;

std::mutex& LiveMu() {
  static std::mutex mu;
  return mu;
}
std::set<FakeStream*>& LiveStreams() {
  static std::set<FakeStream*> streams;
  return streams;
}

}  // namespace

FakeStream::FakeStream() {
  {
    std::lock_guard<std::mutex> lock(LiveMu());
    LiveStreams().insert(this);
  }
  thread_ = std::thread([this] { Loop(); });
}

FakeStream::~FakeStream() {
  {
    std::lock_guard<std::mutex> lock(LiveMu());
    LiveStreams().erase(this);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void* FakeStream::AnyParked(FakeStream* only) {
  std::lock_guard<std::mutex> lock(LiveMu());  // no stream goes while it is looked at
  for (FakeStream* s : LiveStreams())
    if ((only == nullptr || s == only) && s->Parked()) return s;
  return nullptr;
}

void FakeStream::Push(std::function<bool()> op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ops_.push_back({std::move(op)});
  }
  cv_.notify_all();
}

void FakeStream::PushWait(const uint32_t* word, uint32_t value) {
  Op op;
  op.run = [word, value] { return sieve::gpu::Reached(sieve::gpu::LoadWord(word), value); };
  op.wait_word = word;
  op.wait_value = value;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ops_.push_back(std::move(op));
  }
  cv_.notify_all();
}

bool FakeStream::Parked() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (ops_.empty() || ops_.front().wait_word == nullptr) return false;
  const Op& op = ops_.front();
  return !sieve::gpu::Reached(sieve::gpu::LoadWord(op.wait_word), op.wait_value);
}

void FakeStream::Pause(bool paused) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = paused;
  }
  cv_.notify_all();
}

size_t FakeStream::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_.size() + (busy_ ? 1 : 0);
}

void FakeStream::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return ops_.empty() && !busy_; });
}

void FakeStream::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || (!paused_ && !ops_.empty()); });
    if (stop_) return;
    std::function<bool()> op = ops_.front().run;
    busy_ = true;
    lock.unlock();
    bool done = op();
    lock.lock();
    busy_ = false;
    if (done) {
      ops_.pop_front();
      cv_.notify_all();
    } else {  // a flag wait: poll again shortly, as the GPU's front end would
      cv_.wait_for(lock, std::chrono::microseconds(50));
    }
  }
}

// --- Strictness --------------------------------------------------------------

FakeDeviceOps::FakeDeviceOps() { t_contexts.push_back(ContextOf(0)); }

FakeDeviceOps::~FakeDeviceOps() {
  default_stream.Drain();
  for (FakeStream* s : own_streams_) delete s;
  for (void* p : live_) std::free(p);
  for (void* p : device_live_) std::free(p);
  auto own = [this](CUctx_st* c) {
    for (Context& ctx : contexts_)
      if (reinterpret_cast<CUctx_st*>(&ctx) == c) return true;
    return false;
  };
  while (!t_contexts.empty() && own(t_contexts.back())) t_contexts.pop_back();
  if (!violations_.empty()) {
    std::fprintf(stderr, "fake device: %zu violation(s) no test took:\n", violations_.size());
    for (const std::string& v : violations_) std::fprintf(stderr, "  %s\n", v.c_str());
    std::abort();
  }
}

std::vector<std::string> FakeDeviceOps::TakeViolations() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  out.swap(violations_);
  return out;
}

Status FakeDeviceOps::Violation(const std::string& what) {
  std::fprintf(stderr, "fake device violation: %s\n", what.c_str());
  {
    std::lock_guard<std::mutex> lock(mu_);
    violations_.push_back(what);
  }
  return Status::CudaError("fake device: " + what);
}

CUctx_st* FakeDeviceOps::ContextOf(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Context& c : contexts_)
    if (c.device == device) return reinterpret_cast<CUctx_st*>(&c);
  contexts_.push_back({device});
  return reinterpret_cast<CUctx_st*>(&contexts_.back());
}

FakeDeviceOps::ScopedContext::ScopedContext(FakeDeviceOps& ops, int device) : ops_(ops) {
  Status pushed = ops_.PushContext(ops_.ContextOf(device));  // a push never fails here
  (void)pushed;
}
FakeDeviceOps::ScopedContext::~ScopedContext() {
  Status popped = ops_.PopContext();  // a failure is recorded as a violation
  (void)popped;
}

Status FakeDeviceOps::RequireContext(const char* call) {
  if (!t_contexts.empty()) return Status::OK();
  return Violation(sieve::StrFormat("%s on a thread with no current CUDA context", call));
}

Status FakeDeviceOps::CheckNoDeadlock(const char* call, FakeStream* stream) {
  if (!sieve::gpu::FlagWriterThread()) return Status::OK();
  // A stream parked on a word another thread writes moves on; one still
  // parked a second later waits for this thread, which is inside `call`.
  void* parked = nullptr;
  for (int i = 0; i <= 1000; ++i) {
    parked = FakeStream::AnyParked(stream);
    if (parked == nullptr) return Status::OK();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Violation(sieve::StrFormat(
      "deadlock: %s may synchronize the device, and it was called on a progress thread "
      "while stream %p is parked on a handshake word only that thread writes",
      call, parked));
}

Status FakeDeviceOps::UseLocked(const char* call, FakeStream* s, const void* p) {
  if (p == nullptr || pool_.empty()) return Status::OK();
  const char* q = static_cast<const char*>(p);
  auto it = pool_.upper_bound(q);
  if (it == pool_.begin()) return Status::OK();
  --it;
  if (q >= it->first + std::max<size_t>(it->second.bytes, 1)) return Status::OK();
  const uint64_t now = ++order_;
  for (const auto& [u, when] : it->second.uses) {
    if (u == s) continue;
    auto seen = clock_[s].find(u);
    if (seen == clock_[s].end() || seen->second < when) {
      std::string what = sieve::StrFormat(
          "stream-ordered memory %p used by %s on stream %p after its use on stream %p with no "
          "event between (cuMemAllocAsync memory needs cuStreamWaitEvent across streams)",
          static_cast<const void*>(it->first), call, static_cast<void*>(s),
          static_cast<void*>(u));
      std::fprintf(stderr, "fake device violation: %s\n", what.c_str());
      violations_.push_back(what);
      return Status::CudaError("fake device: " + what);
    }
  }
  it->second.uses[s] = now;
  return Status::OK();
}

Status FakeDeviceOps::UseOn(const char* call, CUstream_st* stream,
                            std::initializer_list<const void*> ptrs) {
  FakeStream* s = StreamOf(stream);
  std::lock_guard<std::mutex> lock(mu_);
  for (const void* p : ptrs) SIEVE_RETURN_IF_ERROR(UseLocked(call, s, p));
  return Status::OK();
}

Status FakeDeviceOps::Launch(const char* call, CUstream_st* stream,
                             std::initializer_list<const void*> ptrs) {
  SIEVE_RETURN_IF_ERROR(RequireContext(call));
  bool loaded;
  {
    std::lock_guard<std::mutex> lock(mu_);
    loaded = loaded_.count(t_contexts.back()) != 0;
  }
  if (!loaded) {  // CUDA loads the module lazily on the context's first launch
    SIEVE_RETURN_IF_ERROR(
        CheckNoDeadlock(sieve::StrFormat("loading the kernels lazily (first %s in this context)",
                                         call).c_str()));
    ++module_loads;
    std::lock_guard<std::mutex> lock(mu_);
    loaded_.insert(t_contexts.back());
  }
  return UseOn(call, stream, ptrs);
}

Status FakeDeviceOps::PrepareKernels() {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuModuleLoadData"));
  if (!kernels) return Status::CudaError("the fake device was told to have no kernels");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (loaded_.count(t_contexts.back()) != 0) return Status::OK();
  }
  SIEVE_RETURN_IF_ERROR(CheckNoDeadlock("cuModuleLoadData/cuModuleGetFunction"));
  ++module_loads;
  std::lock_guard<std::mutex> lock(mu_);
  loaded_.insert(t_contexts.back());
  return Status::OK();
}

Status FakeDeviceOps::CurrentContext(CUctx_st** out) {
  *out = t_contexts.empty() ? nullptr : t_contexts.back();  // asking is always allowed
  return Status::OK();
}

Status FakeDeviceOps::CurrentDevice(int* ordinal) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuCtxGetDevice"));
  *ordinal = reinterpret_cast<Context*>(t_contexts.back())->device;
  return Status::OK();
}

Status FakeDeviceOps::PushContext(CUctx_st* ctx) {
  if (ctx == nullptr) return Violation("cuCtxPushCurrent of a null context");
  t_contexts.push_back(ctx);
  return Status::OK();
}

Status FakeDeviceOps::PopContext() {
  if (t_contexts.empty()) return Violation("cuCtxPopCurrent with no context current");
  t_contexts.pop_back();
  return Status::OK();
}

// --- Memory and copies -------------------------------------------------------

Status FakeDeviceOps::AllocPinned(size_t bytes, void** host) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuMemHostAlloc"));
  SIEVE_RETURN_IF_ERROR(CheckNoDeadlock("cuMemHostAlloc"));
  *host = std::aligned_alloc(256, (bytes + 255) & ~size_t{255});
  if (*host == nullptr) return Status::SystemError("fake pinned allocation failed");
  ++allocs;
  std::lock_guard<std::mutex> lock(mu_);
  live_.insert(*host);
  return Status::OK();
}

void FakeDeviceOps::FreePinned(void* host) {
  if (!RequireContext("cuMemFreeHost").ok() || !CheckNoDeadlock("cuMemFreeHost").ok()) return;
  ++frees;
  {
    std::lock_guard<std::mutex> lock(mu_);
    live_.erase(host);
  }
  std::free(host);
}

Status FakeDeviceOps::RegisterPinned(void* host, size_t bytes) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuMemHostRegister"));
  SIEVE_RETURN_IF_ERROR(CheckNoDeadlock("cuMemHostRegister"));
  if (fail_register || host == nullptr || bytes == 0)
    return Status::CudaError("cuMemHostRegister: injected failure");
  ++registers;
  std::lock_guard<std::mutex> lock(mu_);
  registered_.insert(host);
  return Status::OK();
}

void FakeDeviceOps::UnregisterPinned(void* host) {
  if (!RequireContext("cuMemHostUnregister").ok() || !CheckNoDeadlock("cuMemHostUnregister").ok())
    return;
  std::lock_guard<std::mutex> lock(mu_);
  // Only what was registered: a stray unregister would be a driver error.
  if (registered_.erase(host) == 1) ++unregisters;
}

Status FakeDeviceOps::CopyToHost(void* host, const void* device, size_t bytes,
                                 CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuMemcpyDtoHAsync"));
  if (fail_copy_in_after.load() > 0 && --fail_copy_in_after == 0)
    return Status::CudaError("cuMemcpyDtoHAsync: injected failure");
  SIEVE_RETURN_IF_ERROR(UseOn("cuMemcpyDtoHAsync", stream, {device}));
  bytes_to_host += bytes;
  StreamOf(stream)->Push([=] {
    std::memcpy(host, device, bytes);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::CopyToDevice(void* device, const void* host, size_t bytes,
                                   CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuMemcpyHtoDAsync"));
  SIEVE_RETURN_IF_ERROR(UseOn("cuMemcpyHtoDAsync", stream, {device}));
  bytes_to_device += bytes;
  StreamOf(stream)->Push([=] {
    std::memcpy(device, host, bytes);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::WriteFlag(CUstream_st* stream, uint32_t* word, uint32_t value) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuStreamWriteValue32"));
  ++flag_ops;
  StreamOf(stream)->Push([=] {
    sieve::gpu::StoreWord(word, value);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::WaitFlag(CUstream_st* stream, uint32_t* word, uint32_t value) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuStreamWaitValue32"));
  ++flag_ops;
  StreamOf(stream)->PushWait(word, value);
  return Status::OK();
}

Status FakeDeviceOps::Synchronize(CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuStreamSynchronize"));
  SIEVE_RETURN_IF_ERROR(CheckNoDeadlock("cuStreamSynchronize", StreamOf(stream)));
  ++syncs;
  StreamOf(stream)->Drain();
  return Status::OK();
}

bool FakeDeviceOps::HasKernels(std::string* why) const {
  if (!kernels) *why = "the fake device was told to have none";
  return kernels;
}

bool FakeDeviceOps::HasMemoryPools(std::string* why) {
  if (!memory_pools) *why = "the fake device was told to have no memory pools";
  return memory_pools;
}

Status FakeDeviceOps::AllocDevice(size_t bytes, CUstream_st* stream, void** device) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuMemAllocAsync"));
  if (!memory_pools)
    return Violation("cuMemAllocAsync on a device without memory pools (check "
                     "CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED first)");
  const size_t size = std::max<size_t>(bytes, 1);
  *device = std::aligned_alloc(256, (size + 255) & ~size_t{255});
  if (*device == nullptr) return Status::SystemError("fake device allocation failed");
  // Junk, as fresh device memory may hold: code that reads scratch before
  // writing it shows up as a wrong result.
  std::memset(*device, 0xa5, size);
  std::lock_guard<std::mutex> lock(mu_);
  device_live_.insert(*device);
  pool_[static_cast<const char*>(*device)] = {size, {{StreamOf(stream), ++order_}}};
  return Status::OK();
}

Status FakeDeviceOps::FreeDevice(void* device, CUstream_st* stream) {
  // Any thread: the allocation's context is the driver's business (as
  // CudaDeviceOps pushes it), and cuMemFreeAsync never synchronizes.
  {
    std::lock_guard<std::mutex> lock(mu_);
    SIEVE_RETURN_IF_ERROR(UseLocked("cuMemFreeAsync", StreamOf(stream), device));
    pool_.erase(static_cast<const char*>(device));
  }
  StreamOf(stream)->Push([this, device] {  // stream-ordered, as cuMemFreeAsync
    {
      std::lock_guard<std::mutex> lock(mu_);
      device_live_.erase(device);
    }
    std::free(device);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::OrderAfter(CUstream_st* later, CUstream_st* earlier) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuEventRecord/cuStreamWaitEvent"));
  ++events;
  FakeStream* l = StreamOf(later);
  FakeStream* e = StreamOf(earlier);
  if (l != e) {
    // The fake's streams are independent threads: the event is a flag the
    // earlier stream sets and the later one waits for.
    auto flag = std::make_shared<std::atomic<bool>>(false);
    e->Push([flag] {
      flag->store(true);
      return true;
    });
    l->Push([flag] { return flag->load(); });
  }
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t now = ++order_;
  std::map<FakeStream*, uint64_t>& mine = clock_[l];
  for (const auto& [u, when] : clock_[e]) mine[u] = std::max(mine[u], when);
  mine[e] = std::max(mine[e], now);
  return Status::OK();
}

Status FakeDeviceOps::AllocDeviceBlock(size_t bytes, void** device) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuMemAlloc"));
  SIEVE_RETURN_IF_ERROR(CheckNoDeadlock("cuMemAlloc"));
  const size_t size = std::max<size_t>(bytes, 1);
  *device = std::aligned_alloc(256, (size + 255) & ~size_t{255});
  if (*device == nullptr) return Status::SystemError("fake device allocation failed");
  std::memset(*device, 0xa5, size);
  std::lock_guard<std::mutex> lock(mu_);
  device_live_.insert(*device);
  return Status::OK();
}

Status FakeDeviceOps::FreeDeviceBlock(void* device) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuMemFree"));
  SIEVE_RETURN_IF_ERROR(CheckNoDeadlock("cuMemFree"));
  std::lock_guard<std::mutex> lock(mu_);
  if (device_live_.erase(device) == 0)
    return Status::Internal("fake device: freeing a block that is not live");
  std::free(device);
  return Status::OK();
}

// --- Kernels -----------------------------------------------------------------

Status FakeDeviceOps::MaskedPack(size_t elem_size, const void* in, const uint32_t* idx,
                                 size_t nnz, void* out, CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(Launch("sieve_masked_pack", stream, {in, idx, out}));
  ++packs;
  StreamOf(stream)->Push([=] {
    sieve::kernels::MaskedPack(elem_size, in, idx, nnz, out);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::MaskedUnpack(size_t elem_size, const void* packed, const uint32_t* idx,
                                   size_t, const uint64_t* bits, size_t count, void* out,
                                   CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(Launch("sieve_masked_scatter", stream, {packed, idx, bits, out}));
  ++unpacks;
  StreamOf(stream)->Push([=] {
    sieve::kernels::MaskedUnpack(elem_size, packed, bits, count, out);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::BlockQuantEncode(sieve::kernels::DType dtype, const void* in, size_t count,
                                       int bits, void* out, CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(Launch("sieve_block_quant_encode", stream, {in, out}));
  ++block_quant_encodes;
  StreamOf(stream)->Push([=] {
    sieve::kernels::BlockQuantEncode(dtype, in, count, bits, out);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::BlockQuantDecode(sieve::kernels::DType dtype, const void* in, size_t count,
                                       int bits, void* out, CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(Launch("sieve_block_quant_decode", stream, {in, out}));
  ++block_quant_decodes;
  StreamOf(stream)->Push([=] {
    sieve::kernels::BlockQuantDecode(dtype, in, count, bits, out);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::TernaryAbsMax(sieve::kernels::DType dtype, const void* in,
                                    const float* residual, size_t count, size_t block,
                                    float* scales, CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(Launch("sieve_ternary_absmax", stream, {in, residual, scales}));
  ++ternary_absmax;
  StreamOf(stream)->Push([=] {
    sieve::kernels::TernarySource src =
        sieve::kernels::TernarySourceOf(dtype, in, nullptr, block, nullptr);
    src.residual = const_cast<float*>(residual);  // only read by the abs-max
    sieve::kernels::TernaryAbsMax(src, count, scales);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::TernaryQuantize(sieve::kernels::DType dtype, const void* in, size_t count,
                                      size_t block, const float* scales,
                                      sieve::kernels::PhiloxStream rng, int levels, void* wire,
                                      CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(Launch("sieve_ternary_quantize", stream, {in, scales, wire}));
  ++ternary_quantize;
  StreamOf(stream)->Push([=] {
    sieve::kernels::TernarySource src =
        sieve::kernels::TernarySourceOf(dtype, in, nullptr, block, scales, rng);
    src.levels = levels;
    sieve::kernels::TernaryQuantizePack(src, 0, count, sieve::kernels::TernaryBits(levels), wire);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::TernaryFeedbackApply(sieve::kernels::DType dtype, const void* g,
                                           float* residual, bool fresh, void* out, size_t count,
                                           CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(Launch("sieve_ternary_feedback_apply", stream, {g, residual, out}));
  ++ternary_feedback_apply;
  StreamOf(stream)->Push([=] {
    if (fresh) std::fill(residual, residual + count, 0.0f);
    sieve::kernels::TernaryFeedbackApply(dtype, g, residual, out, count);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::TernaryQuantizeFeedback(sieve::kernels::DType dtype, const void* in,
                                              size_t count, size_t block, const float* scales,
                                              sieve::kernels::PhiloxStream rng, int levels,
                                              void* wire, float* residual, CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(
      Launch("sieve_ternary_quantize_feedback", stream, {in, scales, wire, residual}));
  ++ternary_quantize_feedback;
  StreamOf(stream)->Push([=] {
    sieve::kernels::TernarySource src =
        sieve::kernels::TernarySourceOf(dtype, in, nullptr, block, scales, rng);
    src.levels = levels;
    sieve::kernels::TernaryQuantizePack(src, 0, count, sieve::kernels::TernaryBits(levels), wire);
    sieve::kernels::TernaryFeedbackUpdate(dtype, in, count, block, scales, rng, residual, levels);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::TernaryDequantizeScatter(sieve::kernels::DType dtype, const void* wire,
                                               int w, size_t nnz, size_t block,
                                               const float* scales, int divisor,
                                               const uint32_t* idx, const uint64_t* bits,
                                               size_t count, void* out, CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(
      Launch("sieve_ternary_dequantize_scatter", stream, {wire, scales, idx, bits, out}));
  ++ternary_dequantize_scatter;
  StreamOf(stream)->Push([=] {
    std::vector<int32_t> sums(nnz);
    sieve::kernels::TernaryUnpack(sieve::kernels::TernaryWork::kInt32, wire, nnz, w,
                                  /*accumulate=*/false, sums.data());
    sieve::kernels::TernaryDequantizeScatter(dtype, sieve::kernels::TernaryWork::kInt32,
                                             sums.data(), 0, block, scales, divisor, bits, 0,
                                             count, out);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::TernaryDequantize(sieve::kernels::DType dtype, const void* wire, int w,
                                        size_t count, size_t block, const float* scales,
                                        int divisor, void* out, CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(Launch("sieve_ternary_dequantize", stream, {wire, scales, out}));
  ++ternary_dequantize;
  StreamOf(stream)->Push([=] {
    std::vector<int32_t> sums(count);
    sieve::kernels::TernaryUnpack(sieve::kernels::TernaryWork::kInt32, wire, count, w,
                                  /*accumulate=*/false, sums.data());
    sieve::kernels::TernaryDequantizeRange(dtype, sieve::kernels::TernaryWork::kInt32,
                                           sums.data(), 0, count, block, scales, divisor, out);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::Reduce(sieve::kernels::DType dtype, sieve::kernels::RedOp op,
                             const void* a, const void* b, void* out, size_t n,
                             CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(Launch("sieve_reduce", stream, {a, b, out}));
  if (fail_reduce_after.load() > 0 && --fail_reduce_after == 0)
    return Status::CudaError("cuLaunchKernel(sieve_reduce): injected failure");
  ++reduces;
  StreamOf(stream)->Push([=] {
    sieve::kernels::Reduce(dtype, op, a, b, out, n);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::DivideBy(sieve::kernels::DType dtype, void* buf, size_t n, int divisor,
                               CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(Launch("sieve_divide", stream, {buf}));
  ++divides;
  StreamOf(stream)->Push([=] {
    sieve::kernels::DivideBy(dtype, buf, n, divisor);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::CopyDevice(void* dst, const void* src, size_t bytes, CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuMemcpyDtoDAsync"));
  SIEVE_RETURN_IF_ERROR(UseOn("cuMemcpyDtoDAsync", stream, {dst, src}));
  ++device_copies;
  StreamOf(stream)->Push([=] {
    std::memmove(dst, src, bytes);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::CreateStream(CUstream_st** out) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuStreamCreate"));
  auto* s = new FakeStream;
  ++streams_created;
  {
    std::lock_guard<std::mutex> lock(mu_);
    own_streams_.insert(s);
  }
  *out = s->handle();
  return Status::OK();
}

Status FakeDeviceOps::DestroyStream(CUstream_st* stream) {
  SIEVE_RETURN_IF_ERROR(RequireContext("cuStreamDestroy"));
  FakeStream* s = StreamOf(stream);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (own_streams_.erase(s) == 0)
      return Status::Internal("destroying a stream the fake did not create");
    clock_.erase(s);
    for (auto& [other, seen] : clock_) seen.erase(s);
  }
  ++streams_destroyed;
  s->Drain();
  delete s;
  return Status::OK();
}

// --- Classifier and runtime --------------------------------------------------

const FakeClassifier::Arena* FakeClassifier::Find(const void* ptr) const {
  const char* p = static_cast<const char*>(ptr);
  auto it = arenas_.upper_bound(p);
  if (it == arenas_.begin()) return nullptr;
  --it;
  return p < it->first + it->second.bytes ? &it->second : nullptr;
}

sieve::gpu::MemoryKind FakeClassifier::Classify(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  return Find(ptr) != nullptr ? sieve::gpu::MemoryKind::kDevice : sieve::gpu::MemoryKind::kHost;
}

int FakeClassifier::DeviceOf(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Arena* a = Find(ptr);
  return a != nullptr ? a->device : -1;
}

void FakeClassifier::AddArena(const void* base, size_t bytes, int device) {
  std::lock_guard<std::mutex> lock(mu_);
  arenas_[static_cast<const char*>(base)] = {bytes, device};
}

ScopedFakeRuntime::ScopedFakeRuntime() {
  // As the real runtime reads it (gpu/gpu_runtime.cc).
  if (const char* v = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS"))
    runtime_.max_connections = std::atoi(v);
  runtime_.available = true;
  runtime_.description = "fake device";
  runtime_.classifier = &classifier;
  runtime_.ops = &ops;
  sieve::gpu::SetRuntimeForTest(&runtime_);
}

ScopedFakeRuntime::~ScopedFakeRuntime() { sieve::gpu::SetRuntimeForTest(nullptr); }

}  // namespace sieve_test
