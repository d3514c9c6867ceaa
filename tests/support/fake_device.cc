// The fake device's streams, operations and classifier.
#include "support/fake_device.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "kernels/masked_pack.h"
#include "kernels/reduce.h"
#include "kernels/ternary.h"
#include "kernels/ternary_feedback.h"

namespace sieve_test {

using sieve::Status;

FakeStream::FakeStream() { thread_ = std::thread([this] { Loop(); }); }

FakeStream::~FakeStream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void FakeStream::Push(std::function<bool()> op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ops_.push_back(std::move(op));
  }
  cv_.notify_all();
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
    std::function<bool()> op = ops_.front();
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

Status FakeDeviceOps::AllocPinned(size_t bytes, void** host) {
  *host = std::aligned_alloc(256, (bytes + 255) & ~size_t{255});
  if (*host == nullptr) return Status::SystemError("fake pinned allocation failed");
  ++allocs;
  std::lock_guard<std::mutex> lock(mu_);
  live_.insert(*host);
  return Status::OK();
}

FakeDeviceOps::~FakeDeviceOps() {
  default_stream.Drain();
  for (FakeStream* s : own_streams_) delete s;
  for (void* p : live_) std::free(p);
  for (void* p : device_live_) std::free(p);
}

void FakeDeviceOps::FreePinned(void* host) {
  ++frees;
  {
    std::lock_guard<std::mutex> lock(mu_);
    live_.erase(host);
  }
  std::free(host);
}

Status FakeDeviceOps::RegisterPinned(void* host, size_t bytes) {
  if (fail_register || host == nullptr || bytes == 0)
    return Status::CudaError("cuMemHostRegister: injected failure");
  ++registers;
  std::lock_guard<std::mutex> lock(mu_);
  registered_.insert(host);
  return Status::OK();
}

void FakeDeviceOps::UnregisterPinned(void* host) {
  std::lock_guard<std::mutex> lock(mu_);
  // Only what was registered: a stray unregister would be a driver error.
  if (registered_.erase(host) == 1) ++unregisters;
}

Status FakeDeviceOps::CopyToHost(void* host, const void* device, size_t bytes,
                                 CUstream_st* stream) {
  if (fail_copy_in_after.load() > 0 && --fail_copy_in_after == 0)
    return Status::CudaError("cuMemcpyDtoHAsync: injected failure");
  bytes_to_host += bytes;
  StreamOf(stream)->Push([=] {
    std::memcpy(host, device, bytes);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::CopyToDevice(void* device, const void* host, size_t bytes,
                                   CUstream_st* stream) {
  bytes_to_device += bytes;
  StreamOf(stream)->Push([=] {
    std::memcpy(device, host, bytes);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::WriteFlag(CUstream_st* stream, uint32_t* word, uint32_t value) {
  ++flag_ops;
  StreamOf(stream)->Push([=] {
    sieve::gpu::StoreWord(word, value);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::WaitFlag(CUstream_st* stream, uint32_t* word, uint32_t value) {
  ++flag_ops;
  StreamOf(stream)->Push([=] { return sieve::gpu::Reached(sieve::gpu::LoadWord(word), value); });
  return Status::OK();
}

Status FakeDeviceOps::Synchronize(CUstream_st* stream) {
  ++syncs;
  StreamOf(stream)->Drain();
  return Status::OK();
}

bool FakeDeviceOps::HasKernels(std::string* why) const {
  if (!kernels) *why = "the fake device was told to have none";
  return kernels;
}

Status FakeDeviceOps::AllocDevice(size_t bytes, CUstream_st*, void** device) {
  *device = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) & ~size_t{255});
  if (*device == nullptr) return Status::SystemError("fake device allocation failed");
  // Junk, as fresh device memory may hold: code that reads scratch before
  // writing it shows up as a wrong result.
  std::memset(*device, 0xa5, std::max<size_t>(bytes, 1));
  std::lock_guard<std::mutex> lock(mu_);
  device_live_.insert(*device);
  return Status::OK();
}

Status FakeDeviceOps::FreeDevice(void* device, CUstream_st* stream) {
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

Status FakeDeviceOps::AllocDeviceBlock(size_t bytes, void** device) {
  return AllocDevice(bytes, nullptr, device);  // the fake's allocations are usable at once
}

Status FakeDeviceOps::FreeDeviceBlock(void* device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (device_live_.erase(device) == 0)
    return Status::Internal("fake device: freeing a block that is not live");
  std::free(device);
  return Status::OK();
}

Status FakeDeviceOps::MaskedPack(size_t elem_size, const void* in, const uint32_t* idx,
                                 size_t nnz, void* out, CUstream_st* stream) {
  ++packs;
  StreamOf(stream)->Push([=] {
    sieve::kernels::MaskedPack(elem_size, in, idx, nnz, out);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::MaskedUnpack(size_t elem_size, const void* packed, const uint32_t*,
                                   size_t, const uint64_t* bits, size_t count, void* out,
                                   CUstream_st* stream) {
  ++unpacks;
  StreamOf(stream)->Push([=] {
    sieve::kernels::MaskedUnpack(elem_size, packed, bits, count, out);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::TernaryAbsMax(sieve::kernels::DType dtype, const void* in, size_t count,
                                    size_t block, float* scales, CUstream_st* stream) {
  ++ternary_absmax;
  StreamOf(stream)->Push([=] {
    sieve::kernels::TernaryAbsMax(dtype, in, count, block, scales);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::TernaryQuantize(sieve::kernels::DType dtype, const void* in, size_t count,
                                      size_t block, const float* scales,
                                      sieve::kernels::PhiloxStream rng, void* wire,
                                      CUstream_st* stream) {
  ++ternary_quantize;
  StreamOf(stream)->Push([=] {
    sieve::kernels::TernaryQuantizePack(dtype, in, 0, count, block, scales, rng,
                                        sieve::kernels::TernaryBits(1), wire);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::TernaryFeedbackApply(sieve::kernels::DType dtype, const void* g,
                                           float* residual, bool fresh, void* out, size_t count,
                                           CUstream_st* stream) {
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
                                              sieve::kernels::PhiloxStream rng, void* wire,
                                              float* residual, CUstream_st* stream) {
  ++ternary_quantize_feedback;
  StreamOf(stream)->Push([=] {
    sieve::kernels::TernaryQuantizePack(dtype, in, 0, count, block, scales, rng,
                                        sieve::kernels::TernaryBits(1), wire);
    sieve::kernels::TernaryFeedbackUpdate(dtype, in, count, block, scales, rng, residual);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::TernaryDequantizeScatter(sieve::kernels::DType dtype, const void* wire,
                                               int w, size_t nnz, size_t block,
                                               const float* scales, int divisor, const uint32_t*,
                                               const uint64_t* bits, size_t count, void* out,
                                               CUstream_st* stream) {
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
  ++divides;
  StreamOf(stream)->Push([=] {
    sieve::kernels::DivideBy(dtype, buf, n, divisor);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::CopyDevice(void* dst, const void* src, size_t bytes, CUstream_st* stream) {
  ++device_copies;
  StreamOf(stream)->Push([=] {
    std::memmove(dst, src, bytes);
    return true;
  });
  return Status::OK();
}

Status FakeDeviceOps::CreateStream(CUstream_st** out) {
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
  FakeStream* s = StreamOf(stream);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (own_streams_.erase(s) == 0)
      return Status::Internal("destroying a stream the fake did not create");
  }
  ++streams_destroyed;
  s->Drain();
  delete s;
  return Status::OK();
}

sieve::gpu::MemoryKind FakeClassifier::Classify(const void* ptr) const {
  const char* p = static_cast<const char*>(ptr);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = arenas_.upper_bound(p);
  if (it == arenas_.begin()) return sieve::gpu::MemoryKind::kHost;
  --it;
  return p < it->first + it->second ? sieve::gpu::MemoryKind::kDevice
                                    : sieve::gpu::MemoryKind::kHost;
}

void FakeClassifier::AddArena(const void* base, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  arenas_[static_cast<const char*>(base)] = bytes;
}

ScopedFakeRuntime::ScopedFakeRuntime() {
  runtime_.available = true;
  runtime_.description = "fake device";
  runtime_.classifier = &classifier;
  runtime_.ops = &ops;
  sieve::gpu::SetRuntimeForTest(&runtime_);
}

ScopedFakeRuntime::~ScopedFakeRuntime() { sieve::gpu::SetRuntimeForTest(nullptr); }

}  // namespace sieve_test
