// The embedded kernel module (kernel_image.h) loaded through the driver: one
// load per CUDA context (a module belongs to the context it is loaded in),
// its entry points looked up by name once.
#ifndef SIEVE_GPU_KERNEL_MODULE_H_
#define SIEVE_GPU_KERNEL_MODULE_H_

#include <map>
#include <mutex>

#include "core/status.h"
#include "gpu/cuda_driver.h"
#include "kernels/dtype.h"

namespace sieve::gpu {

// The entries of one loaded module, by element size: index 0..3 for 1, 2, 4, 8 bytes.
struct KernelFunctions {
  cu::Function pack[4] = {};
  cu::Function scatter[4] = {};
  cu::Function zero_cleared[4] = {};
  // Zero patterns (mask tracker), by element size as above.
  cu::Function nonzero_bitmap[4] = {};
  cu::Function any_nonzero_outside[4] = {};
  // Dense ternary, by floating type: index 0..2 for float32, float16, bfloat16.
  cu::Function ternary_absmax[3] = {};
  cu::Function ternary_quantize[3] = {};
  cu::Function ternary_dequantize[3] = {};
  // Error feedback: quantize + residual update, and the sum g + e_prev.
  cu::Function ternary_quantize_feedback[3] = {};
  cu::Function ternary_feedback_apply[3] = {};
  // Masked: the dequantize scattered to the kept positions.
  cu::Function ternary_dequantize_scatter[3] = {};
  // Block-scaled integers (the quantized all-gather), by floating type as above.
  cu::Function block_quant_encode[3] = {};
  cu::Function block_quant_decode[3] = {};
  // Dense reductions (the direct path), by datatype: index = kernels::DType value.
  cu::Function reduce[kernels::kNumDTypes] = {};
  cu::Function divide[kernels::kNumDTypes] = {};
};

class KernelModule {
 public:
  explicit KernelModule(const CudaDriver* driver) : d_(driver) {}
  // Whether kernels can be launched at all; else `why` says why not (also
  // after a load failed: no image for this GPU, say).
  bool Available(std::string* why) const;
  // The functions of the module in the calling thread's current context,
  // loading it there on first use (never on a progress thread: an error there).
  Status ForCurrentContext(const KernelFunctions** out);

 private:
  const CudaDriver* d_;
  mutable std::mutex mu_;
  std::map<cu::Context, KernelFunctions> loaded_;  // modules stay loaded for the process
  std::string load_error_;                         // the first failed load, if any
};

// 0..3 for element sizes 1, 2, 4, 8; -1 otherwise.
int ElemSizeIndex(size_t elem_size);
// 0..2 for float32, float16, bfloat16 (the ternary entries); -1 otherwise.
int TernaryTypeIndex(kernels::DType dtype);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_KERNEL_MODULE_H_
