// Loading the embedded kernel module per context.
#include "gpu/kernel_module.h"

#include <vector>

#include "core/log.h"
#include "gpu/kernel_image.h"
#include "gpu/thread_role.h"

namespace sieve::gpu {

int ElemSizeIndex(size_t elem_size) {
  switch (elem_size) {
    case 1: return 0;
    case 2: return 1;
    case 4: return 2;
    case 8: return 3;
  }
  return -1;
}

int TernaryTypeIndex(kernels::DType dtype) {
  switch (dtype) {
    case kernels::DType::kFloat32: return 0;
    case kernels::DType::kFloat16: return 1;
    case kernels::DType::kBfloat16: return 2;
    default: return -1;
  }
}

bool KernelModule::Available(std::string* why) const {
  if (kKernelImageBytes == 0) {
    *why = "libsieve was built without nvcc (no embedded kernels)";
    return false;
  }
  if (!d_->kernels_missing.empty()) {
    *why = StrFormat("the CUDA driver lacks %s", d_->kernels_missing.c_str());
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!load_error_.empty()) {
    *why = load_error_;
    return false;
  }
  return true;
}

Status KernelModule::ForCurrentContext(const KernelFunctions** out) {
  std::string why;
  if (!Available(&why)) return Status::CudaError(why);
  cu::Context ctx = nullptr;
  cu::Result r = d_->CtxGetCurrent(&ctx);
  if (r != cu::kSuccess) return Status::CudaError(d_->ErrorText("cuCtxGetCurrent", r));
  if (ctx == nullptr)
    return Status::CudaError("no CUDA context is current on the calling thread; select the "
                             "device of the buffers (cudaSetDevice) before the call");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = loaded_.find(ctx);
  if (it != loaded_.end()) {
    *out = &it->second;
    return Status::OK();
  }
  // Loading (and, with lazy loading, each lookup) may synchronize the device:
  // never where a parked stream waits for this thread (DeviceOps::PrepareKernels).
  if (FlagWriterThread())
    return Status::Internal("the device kernels were not loaded into this context before the "
                            "progress thread's first launch (PrepareKernels)");
  cu::Module module = nullptr;
  r = d_->ModuleLoadData(&module, kKernelImage);
  if (r != cu::kSuccess) {  // e.g. a GPU older than every architecture built
    load_error_ = d_->ErrorText("cuModuleLoadData (the kernels embedded in libsieve)", r);
    return Status::CudaError(load_error_);
  }
  KernelFunctions fns;
  struct Entry {
    cu::Function* fn;
    std::string name;
  };
  std::vector<Entry> entries;
  static const char* kSizes[4] = {"1", "2", "4", "8"};
  for (int i = 0; i < 4; ++i) {
    entries.push_back({&fns.pack[i], std::string("sieve_masked_pack_") + kSizes[i]});
    entries.push_back({&fns.scatter[i], std::string("sieve_masked_scatter_") + kSizes[i]});
    entries.push_back(
        {&fns.zero_cleared[i], std::string("sieve_masked_zero_cleared_") + kSizes[i]});
    entries.push_back(
        {&fns.nonzero_bitmap[i], std::string("sieve_nonzero_bitmap_") + kSizes[i]});
    entries.push_back(
        {&fns.any_nonzero_outside[i], std::string("sieve_any_nonzero_outside_") + kSizes[i]});
  }
  static const char* kTypes[3] = {"f32", "f16", "bf16"};  // TernaryTypeIndex order
  for (int i = 0; i < 3; ++i) {
    entries.push_back({&fns.ternary_absmax[i], std::string("sieve_ternary_absmax_") + kTypes[i]});
    entries.push_back(
        {&fns.ternary_quantize[i], std::string("sieve_ternary_quantize_") + kTypes[i]});
    entries.push_back(
        {&fns.ternary_dequantize[i], std::string("sieve_ternary_dequantize_") + kTypes[i]});
    entries.push_back({&fns.ternary_quantize_feedback[i],
                       std::string("sieve_ternary_quantize_feedback_") + kTypes[i]});
    entries.push_back({&fns.ternary_feedback_apply[i],
                       std::string("sieve_ternary_feedback_apply_") + kTypes[i]});
    entries.push_back({&fns.ternary_dequantize_scatter[i],
                       std::string("sieve_ternary_dequantize_scatter_") + kTypes[i]});
    entries.push_back(
        {&fns.block_quant_encode[i], std::string("sieve_block_quant_encode_") + kTypes[i]});
    entries.push_back(
        {&fns.block_quant_decode[i], std::string("sieve_block_quant_decode_") + kTypes[i]});
  }
  // DType order (kernels/dtype.h), as kernels/cuda/module_entry.cu names them.
  static const char* kDTypes[kernels::kNumDTypes] = {"i8",  "u8",  "i32", "u32", "i64",
                                                     "u64", "f16", "f32", "f64", "bf16"};
  for (int i = 0; i < kernels::kNumDTypes; ++i) {
    entries.push_back({&fns.reduce[i], std::string("sieve_reduce_") + kDTypes[i]});
    entries.push_back({&fns.divide[i], std::string("sieve_divide_") + kDTypes[i]});
  }
  for (auto& e : entries) {
    r = d_->ModuleGetFunction(e.fn, module, e.name.c_str());
    if (r != cu::kSuccess) {
      load_error_ = d_->ErrorText(("cuModuleGetFunction " + e.name).c_str(), r);
      return Status::CudaError(load_error_);
    }
  }
  SIEVE_INFO(kLogInit, "device kernels: loaded the embedded module (%zu bytes) into a context",
             kKernelImageBytes);
  *out = &(loaded_[ctx] = fns);
  return Status::OK();
}

}  // namespace sieve::gpu
