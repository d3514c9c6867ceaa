// DeviceOps through the dlopen'd driver table.
#include "gpu/cuda_device_ops.h"

#include <algorithm>

#include "gpu/thread_role.h"
#include "kernels/block_quant.h"
#include "kernels/dtype.h"

namespace sieve::gpu {

Status CudaDeviceOps::Check(const char* call, cu::Result r) const {
  if (r == cu::kSuccess) return Status::OK();
  return Status::CudaError(d_->ErrorText(call, r));
}

Status CudaDeviceOps::CheckContext() const {
  cu::Context ctx = nullptr;
  SIEVE_RETURN_IF_ERROR(Check("cuCtxGetCurrent", d_->CtxGetCurrent(&ctx)));
  if (ctx == nullptr)
    return Status::CudaError(
        "no CUDA context is current on the calling thread; select the device of the buffers "
        "(cudaSetDevice) before a collective on device memory");
  return Status::OK();
}

Status CudaDeviceOps::CheckNotProgressThread(const char* call) const {
  if (!FlagWriterThread()) return Status::OK();
  return Status::Internal(StrFormat(
      "%s on a progress thread: it may synchronize the device while a stream waits for this "
      "thread (a deadlock); Sieve must do it on the caller's thread",
      call));
}

Status CudaDeviceOps::Map(void* host, size_t bytes, cu::Result (*undo)(void*)) {
  cu::DevicePtr device = 0;
  Status st = Check("cuMemHostGetDevicePointer", d_->MemHostGetDevicePointer(&device, host, 0));
  if (!st.ok()) {
    undo(host);
    return st;
  }
  std::lock_guard<std::mutex> lock(mu_);
  mapped_[static_cast<const char*>(host)] = {bytes, device};
  return Status::OK();
}

Status CudaDeviceOps::AllocPinned(size_t bytes, void** host) {
  SIEVE_RETURN_IF_ERROR(CheckContext());
  // Portable: usable from every context; device-mapped: the stream's memory
  // operations and copies address it directly.
  SIEVE_RETURN_IF_ERROR(
      Check("cuMemHostAlloc",
            d_->MemHostAlloc(host, bytes, cu::kMemHostAllocPortable | cu::kMemHostAllocDeviceMap)));
  return Map(*host, bytes, d_->MemFreeHost);
}

Status CudaDeviceOps::RegisterPinned(void* host, size_t bytes) {
  SIEVE_RETURN_IF_ERROR(CheckContext());
  // The same properties as AllocPinned's memory: portable and device-mapped.
  SIEVE_RETURN_IF_ERROR(
      Check("cuMemHostRegister",
            d_->MemHostRegister(host, bytes,
                                cu::kMemHostRegisterPortable | cu::kMemHostRegisterDeviceMap)));
  return Map(host, bytes, d_->MemHostUnregister);
}

void CudaDeviceOps::FreePinned(void* host) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    mapped_.erase(static_cast<const char*>(host));
  }
  d_->MemFreeHost(host);
}

void CudaDeviceOps::UnregisterPinned(void* host) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    mapped_.erase(static_cast<const char*>(host));
  }
  d_->MemHostUnregister(host);
}

Status CudaDeviceOps::DeviceAddress(const void* host, cu::DevicePtr* out) {
  const char* p = static_cast<const char*>(host);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = mapped_.upper_bound(p);
  if (it == mapped_.begin())
    return Status::Internal("handshake word outside the pinned staging memory");
  --it;
  size_t offset = static_cast<size_t>(p - it->first);
  if (offset >= it->second.bytes)
    return Status::Internal("handshake word outside the pinned staging memory");
  *out = it->second.device + offset;
  return Status::OK();
}

Status CudaDeviceOps::CopyToHost(void* host, const void* device, size_t bytes,
                                 cu::Stream stream) {
  return Check("cuMemcpyDtoHAsync",
               d_->MemcpyDtoHAsync(host, reinterpret_cast<cu::DevicePtr>(device), bytes, stream));
}

Status CudaDeviceOps::CopyToDevice(void* device, const void* host, size_t bytes,
                                   cu::Stream stream) {
  return Check("cuMemcpyHtoDAsync",
               d_->MemcpyHtoDAsync(reinterpret_cast<cu::DevicePtr>(device), host, bytes, stream));
}

Status CudaDeviceOps::WriteFlag(cu::Stream stream, uint32_t* word, uint32_t value) {
  cu::DevicePtr addr = 0;
  SIEVE_RETURN_IF_ERROR(DeviceAddress(word, &addr));
  // Default flags: the write is ordered after all earlier work on the stream
  // and fenced, so the host sees the staged bytes before the word.
  return Check("cuStreamWriteValue32",
               d_->StreamWriteValue32(stream, addr, value, cu::kStreamWriteValueDefault));
}

Status CudaDeviceOps::WaitFlag(cu::Stream stream, uint32_t* word, uint32_t value) {
  cu::DevicePtr addr = 0;
  SIEVE_RETURN_IF_ERROR(DeviceAddress(word, &addr));
  return Check("cuStreamWaitValue32",
               d_->StreamWaitValue32(stream, addr, value, cu::kStreamWaitValueGeq));
}

Status CudaDeviceOps::Synchronize(cu::Stream stream) {
  return Check("cuStreamSynchronize", d_->StreamSynchronize(stream));
}

bool CudaDeviceOps::HasMemoryPools(std::string* why) {
  cu::Device device = 0;
  Status st = CheckContext();
  if (st.ok()) st = Check("cuCtxGetDevice", d_->CtxGetDevice(&device));
  if (!st.ok()) {
    *why = st.message();
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pools_.find(device);
  if (it == pools_.end()) {
    int supported = 0;
    cu::Result r =
        d_->DeviceGetAttribute(&supported, cu::kDeviceAttributeMemoryPoolsSupported, device);
    it = pools_.emplace(device, r == cu::kSuccess && supported != 0).first;
  }
  if (!it->second)
    *why = StrFormat("device %d does not support stream-ordered memory pools "
                     "(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0)",
                     device);
  return it->second;
}

Status CudaDeviceOps::AllocDevice(size_t bytes, cu::Stream stream, void** device) {
  std::string no_pools;
  if (!HasMemoryPools(&no_pools)) return Status::CudaError("cuMemAllocAsync: " + no_pools);
  cu::Context ctx = nullptr;
  SIEVE_RETURN_IF_ERROR(Check("cuCtxGetCurrent", d_->CtxGetCurrent(&ctx)));
  cu::DevicePtr ptr = 0;
  // Stream-ordered: no device-wide synchronization, memory reused from the pool.
  SIEVE_RETURN_IF_ERROR(
      Check("cuMemAllocAsync", d_->MemAllocAsync(&ptr, bytes > 0 ? bytes : 1, stream)));
  std::lock_guard<std::mutex> lock(mu_);
  device_ctx_[ptr] = ctx;
  *device = reinterpret_cast<void*>(ptr);
  return Status::OK();
}

Status CudaDeviceOps::FreeDevice(void* device, cu::Stream stream) {
  auto ptr = reinterpret_cast<cu::DevicePtr>(device);
  cu::Context ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = device_ctx_.find(ptr);
    if (it == device_ctx_.end()) return Status::Internal("freeing device memory Sieve did not allocate");
    ctx = it->second;
    device_ctx_.erase(it);
  }
  // In the allocation's context, whichever thread frees it.
  SIEVE_RETURN_IF_ERROR(Check("cuCtxPushCurrent", d_->CtxPushCurrent(ctx)));
  Status st = Check("cuMemFreeAsync", d_->MemFreeAsync(ptr, stream));
  cu::Context popped = nullptr;
  Status pop = Check("cuCtxPopCurrent", d_->CtxPopCurrent(&popped));
  return st.ok() ? pop : st;
}

Status CudaDeviceOps::OrderAfter(cu::Stream later, cu::Stream earlier) {
  if (later == earlier) return Status::OK();
  cu::Event event = nullptr;
  SIEVE_RETURN_IF_ERROR(Check("cuEventCreate", d_->EventCreate(&event, cu::kEventDisableTiming)));
  Status st = Check("cuEventRecord", d_->EventRecord(event, earlier));
  if (st.ok()) st = Check("cuStreamWaitEvent", d_->StreamWaitEvent(later, event, 0));
  // Destroying a recorded event is fine: the wait keeps what it needs.
  Status destroyed = Check("cuEventDestroy", d_->EventDestroy(event));
  return st.ok() ? destroyed : st;
}

Status CudaDeviceOps::AllocDeviceBlock(size_t bytes, void** device) {
  SIEVE_RETURN_IF_ERROR(CheckNotProgressThread("cuMemAlloc"));
  cu::DevicePtr ptr = 0;
  SIEVE_RETURN_IF_ERROR(Check("cuMemAlloc", d_->MemAlloc(&ptr, bytes > 0 ? bytes : 1)));
  *device = reinterpret_cast<void*>(ptr);
  return Status::OK();
}

Status CudaDeviceOps::FreeDeviceBlock(void* device) {
  SIEVE_RETURN_IF_ERROR(CheckNotProgressThread("cuMemFree"));
  return Check("cuMemFree", d_->MemFree(reinterpret_cast<cu::DevicePtr>(device)));
}

Status CudaDeviceOps::Functions(size_t elem_size, const KernelFunctions** fns, int* index) {
  *index = ElemSizeIndex(elem_size);
  if (*index < 0)
    return Status::Internal(StrFormat("no device kernel for %zu-byte elements", elem_size));
  return module_.ForCurrentContext(fns);
}

Status CudaDeviceOps::Launch(const char* name, cu::Function fn, size_t elems, void** params,
                             cu::Stream stream) {
  return LaunchBlocks(name, fn, (elems + 255) / 256, params, stream);
}

Status CudaDeviceOps::LaunchBlocks(const char* name, cu::Function fn, size_t blocks,
                                   void** params, cu::Stream stream) {
  constexpr size_t kThreads = 256, kMaxBlocks = 65535;  // grid-stride beyond that
  blocks = std::min(kMaxBlocks, std::max<size_t>(1, blocks));
  return Check(name, d_->LaunchKernel(fn, static_cast<unsigned>(blocks), 1, 1, kThreads, 1, 1, 0,
                                      stream, params, nullptr));
}

Status CudaDeviceOps::TernaryFunctions(kernels::DType dtype, const KernelFunctions** fns,
                                       int* index) {
  *index = TernaryTypeIndex(dtype);
  if (*index < 0)
    return Status::Internal(
        StrFormat("no ternary device kernel for %s", kernels::DTypeName(dtype)));
  return module_.ForCurrentContext(fns);
}

Status CudaDeviceOps::TernaryAbsMax(kernels::DType dtype, const void* in, const float* residual,
                                    size_t count, size_t block, float* scales, cu::Stream stream) {
  if (count == 0) return Status::OK();
  const KernelFunctions* fns = nullptr;
  int i = 0;
  SIEVE_RETURN_IF_ERROR(TernaryFunctions(dtype, &fns, &i));
  void* params[] = {&in, &count, &block, &scales, &residual};
  return LaunchBlocks("cuLaunchKernel(sieve_ternary_absmax)", fns->ternary_absmax[i],
                      (count + block - 1) / block, params, stream);
}

Status CudaDeviceOps::TernaryQuantize(kernels::DType dtype, const void* in, size_t count,
                                      size_t block, const float* scales,
                                      kernels::PhiloxStream rng, int levels, void* wire,
                                      cu::Stream stream) {
  if (count == 0) return Status::OK();
  const KernelFunctions* fns = nullptr;
  int i = 0;
  SIEVE_RETURN_IF_ERROR(TernaryFunctions(dtype, &fns, &i));
  void* params[] = {&in, &count, &block, &scales, &rng, &wire, &levels};
  // One thread per packed group of 8 elements.
  return Launch("cuLaunchKernel(sieve_ternary_quantize)", fns->ternary_quantize[i],
                (count + 7) / 8, params, stream);
}

Status CudaDeviceOps::TernaryQuantizeFeedback(kernels::DType dtype, const void* in, size_t count,
                                              size_t block, const float* scales,
                                              kernels::PhiloxStream rng, int levels, void* wire,
                                              float* residual, cu::Stream stream) {
  if (count == 0) return Status::OK();
  const KernelFunctions* fns = nullptr;
  int i = 0;
  SIEVE_RETURN_IF_ERROR(TernaryFunctions(dtype, &fns, &i));
  void* params[] = {&in, &count, &block, &scales, &rng, &wire, &residual, &levels};
  return Launch("cuLaunchKernel(sieve_ternary_quantize_feedback)",
                fns->ternary_quantize_feedback[i], (count + 7) / 8, params, stream);
}

Status CudaDeviceOps::TernaryFeedbackApply(kernels::DType dtype, const void* g, float* residual,
                                           bool fresh, void* out, size_t count,
                                           cu::Stream stream) {
  if (count == 0) return Status::OK();
  const KernelFunctions* fns = nullptr;
  int i = 0;
  SIEVE_RETURN_IF_ERROR(TernaryFunctions(dtype, &fns, &i));
  int fresh_arg = fresh ? 1 : 0;  // the entry takes an int
  void* params[] = {&g, &residual, &fresh_arg, &out, &count};
  return Launch("cuLaunchKernel(sieve_ternary_feedback_apply)", fns->ternary_feedback_apply[i],
                count, params, stream);
}

Status CudaDeviceOps::TernaryDequantize(kernels::DType dtype, const void* wire, int w,
                                        size_t count, size_t block, const float* scales,
                                        int divisor, void* out, cu::Stream stream) {
  if (count == 0) return Status::OK();
  const KernelFunctions* fns = nullptr;
  int i = 0;
  SIEVE_RETURN_IF_ERROR(TernaryFunctions(dtype, &fns, &i));
  void* params[] = {&wire, &count, &w, &block, &scales, &divisor, &out};
  return Launch("cuLaunchKernel(sieve_ternary_dequantize)", fns->ternary_dequantize[i],
                (count + 7) / 8, params, stream);
}

// One CUDA block of kBlockQuantBlock threads (LaunchBlocks' 256) per scale block.
static_assert(kernels::kBlockQuantBlock == 256, "the block-scaled kernels need a thread per element");
Status CudaDeviceOps::BlockQuantEncode(kernels::DType dtype, const void* in, size_t count,
                                       int bits, void* out, cu::Stream stream) {
  return LaunchBlockQuant(true, dtype, in, count, bits, out, stream);
}

Status CudaDeviceOps::BlockQuantDecode(kernels::DType dtype, const void* in, size_t count,
                                       int bits, void* out, cu::Stream stream) {
  return LaunchBlockQuant(false, dtype, in, count, bits, out, stream);
}

Status CudaDeviceOps::LaunchBlockQuant(bool encode, kernels::DType dtype, const void* in,
                                       size_t count, int bits, void* out, cu::Stream stream) {
  if (count == 0) return Status::OK();
  const KernelFunctions* fns = nullptr;
  int i = 0;
  SIEVE_RETURN_IF_ERROR(TernaryFunctions(dtype, &fns, &i));
  void* params[] = {&in, &count, &bits, &out};  // both entries: (in, count, bits, out)
  return LaunchBlocks(encode ? "cuLaunchKernel(sieve_block_quant_encode)"
                             : "cuLaunchKernel(sieve_block_quant_decode)",
                      encode ? fns->block_quant_encode[i] : fns->block_quant_decode[i],
                      (count + kernels::kBlockQuantBlock - 1) / kernels::kBlockQuantBlock,
                      params, stream);
}

Status CudaDeviceOps::TernaryDequantizeScatter(kernels::DType dtype, const void* wire, int w,
                                               size_t nnz, size_t block, const float* scales,
                                               int divisor, const uint32_t* idx,
                                               const uint64_t* bits, size_t count, void* out,
                                               cu::Stream stream) {
  if (count == 0) return Status::OK();
  const KernelFunctions* fns = nullptr;
  int i = 0;
  SIEVE_RETURN_IF_ERROR(TernaryFunctions(dtype, &fns, &i));
  // Zero the cleared positions, then scatter the kept ones: disjoint writes.
  const int size_index = ElemSizeIndex(kernels::DTypeSize(dtype));
  size_t begin = 0;
  void* zero_params[] = {&bits, &begin, &count, &out};
  SIEVE_RETURN_IF_ERROR(Launch("cuLaunchKernel(sieve_masked_zero_cleared)",
                               fns->zero_cleared[size_index], count, zero_params, stream));
  if (nnz == 0) return Status::OK();
  void* params[] = {&wire, &nnz, &w, &block, &scales, &divisor, &idx, &out};
  return Launch("cuLaunchKernel(sieve_ternary_dequantize_scatter)",
                fns->ternary_dequantize_scatter[i], (nnz + 7) / 8, params, stream);
}

Status CudaDeviceOps::MaskedPack(size_t elem_size, const void* in, const uint32_t* idx,
                                 size_t nnz, void* out, cu::Stream stream) {
  if (nnz == 0) return Status::OK();
  const KernelFunctions* fns = nullptr;
  int i = 0;
  SIEVE_RETURN_IF_ERROR(Functions(elem_size, &fns, &i));
  void* params[] = {&in, &idx, &nnz, &out};  // the entry's arguments, in order
  return Launch("cuLaunchKernel(sieve_masked_pack)", fns->pack[i], nnz, params, stream);
}

Status CudaDeviceOps::MaskedUnpack(size_t elem_size, const void* packed, const uint32_t* idx,
                                   size_t nnz, const uint64_t* bits, size_t count, void* out,
                                   cu::Stream stream) {
  if (count == 0) return Status::OK();
  const KernelFunctions* fns = nullptr;
  int i = 0;
  SIEVE_RETURN_IF_ERROR(Functions(elem_size, &fns, &i));
  // Zero the cleared positions, then scatter the kept ones: disjoint writes.
  size_t begin = 0;
  void* zero_params[] = {&bits, &begin, &count, &out};
  SIEVE_RETURN_IF_ERROR(Launch("cuLaunchKernel(sieve_masked_zero_cleared)", fns->zero_cleared[i],
                               count, zero_params, stream));
  if (nnz == 0) return Status::OK();
  void* scatter_params[] = {&packed, &idx, &nnz, &out};
  return Launch("cuLaunchKernel(sieve_masked_scatter)", fns->scatter[i], nnz, scatter_params,
                stream);
}

Status CudaDeviceOps::LaunchWords(const char* name, cu::Function fn, size_t count,
                                  void** params, cu::Stream stream) {
  const size_t words = (count + 63) / 64;
  return Launch(name, fn, words * 32, params, stream);  // 32 threads (a warp) per word
}

Status CudaDeviceOps::NonzeroBitmap(size_t elem_size, const void* data, size_t count,
                                    uint64_t* bits, cu::Stream stream) {
  if (count == 0) return Status::OK();  // no words to write
  const KernelFunctions* fns = nullptr;
  int i = 0;
  SIEVE_RETURN_IF_ERROR(Functions(elem_size, &fns, &i));
  void* params[] = {&data, &count, &bits};
  return LaunchWords("cuLaunchKernel(sieve_nonzero_bitmap)", fns->nonzero_bitmap[i], count,
                     params, stream);
}

Status CudaDeviceOps::AnyNonzeroOutside(size_t elem_size, const void* data, const uint64_t* mask,
                                        size_t count, uint32_t* any, cu::Stream stream) {
  const KernelFunctions* fns = nullptr;
  int i = 0;
  SIEVE_RETURN_IF_ERROR(Functions(elem_size, &fns, &i));
  // The kernel only ever sets the word: start it at "none found" (a static
  // source, so the pageable copy may complete after this returns).
  static const uint32_t kNoneFound = 0;
  SIEVE_RETURN_IF_ERROR(CopyToDevice(any, &kNoneFound, sizeof kNoneFound, stream));
  if (count == 0) return Status::OK();
  void* params[] = {&data, &mask, &count, &any};
  return LaunchWords("cuLaunchKernel(sieve_any_nonzero_outside)", fns->any_nonzero_outside[i],
                     count, params, stream);
}

Status CudaDeviceOps::Reduce(kernels::DType dtype, kernels::RedOp op, const void* a,
                             const void* b, void* out, size_t n, cu::Stream stream) {
  if (n == 0) return Status::OK();
  const int t = static_cast<int>(dtype);
  if (t < 0 || t >= kernels::kNumDTypes)
    return Status::Internal("reduction of an unknown datatype");
  const KernelFunctions* fns = nullptr;
  SIEVE_RETURN_IF_ERROR(module_.ForCurrentContext(&fns));
  int op_value = static_cast<int>(op);
  void* params[] = {&op_value, &a, &b, &out, &n};
  return Launch("cuLaunchKernel(sieve_reduce)", fns->reduce[t], n, params, stream);
}

Status CudaDeviceOps::DivideBy(kernels::DType dtype, void* buf, size_t n, int divisor,
                               cu::Stream stream) {
  if (n == 0 || divisor < 1) return Status::OK();  // as kernels::DivideBy
  const int t = static_cast<int>(dtype);
  if (t < 0 || t >= kernels::kNumDTypes)
    return Status::Internal("division of an unknown datatype");
  const KernelFunctions* fns = nullptr;
  SIEVE_RETURN_IF_ERROR(module_.ForCurrentContext(&fns));
  void* params[] = {&buf, &n, &divisor};
  return Launch("cuLaunchKernel(sieve_divide)", fns->divide[t], n, params, stream);
}

Status CudaDeviceOps::CopyDevice(void* dst, const void* src, size_t bytes, cu::Stream stream) {
  if (bytes == 0 || dst == src) return Status::OK();
  return Check("cuMemcpyDtoDAsync",
               d_->MemcpyDtoDAsync(reinterpret_cast<cu::DevicePtr>(dst),
                                   reinterpret_cast<cu::DevicePtr>(src), bytes, stream));
}

Status CudaDeviceOps::CreateStream(cu::Stream* out) {
  SIEVE_RETURN_IF_ERROR(CheckContext());
  // Non-blocking: the progress thread's work never waits on the legacy NULL stream.
  return Check("cuStreamCreate", d_->StreamCreate(out, cu::kStreamNonBlocking));
}

Status CudaDeviceOps::DestroyStream(cu::Stream stream) {
  return Check("cuStreamDestroy", d_->StreamDestroy(stream));
}

Status CudaDeviceOps::CurrentContext(cu::Context* out) {
  SIEVE_RETURN_IF_ERROR(CheckContext());
  return Check("cuCtxGetCurrent", d_->CtxGetCurrent(out));
}

Status CudaDeviceOps::CurrentDevice(int* ordinal) {
  SIEVE_RETURN_IF_ERROR(CheckContext());
  cu::Device device = 0;
  SIEVE_RETURN_IF_ERROR(Check("cuCtxGetDevice", d_->CtxGetDevice(&device)));
  *ordinal = device;
  return Status::OK();
}

Status CudaDeviceOps::PrepareKernels() {
  SIEVE_RETURN_IF_ERROR(CheckNotProgressThread("loading the kernel module"));
  const KernelFunctions* fns = nullptr;
  return module_.ForCurrentContext(&fns);
}

Status CudaDeviceOps::PushContext(cu::Context ctx) {
  return Check("cuCtxPushCurrent", d_->CtxPushCurrent(ctx));
}

Status CudaDeviceOps::PopContext() {
  cu::Context popped = nullptr;
  return Check("cuCtxPopCurrent", d_->CtxPopCurrent(&popped));
}

bool CudaDeviceOps::HasStreamMemOps() const {
  return d_->driver_version >= cu::kStreamMemOpsMinDriver;
}

}  // namespace sieve::gpu
