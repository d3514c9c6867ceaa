// DeviceOps' defaults for backends without device kernels.
#include "gpu/device_ops.h"

namespace sieve::gpu {

namespace {

Status NoKernels(const DeviceOps& ops, const char* what) {
  std::string why;
  ops.HasKernels(&why);
  return Status::Internal(StrFormat("%s on the device: %s", what, why.c_str()));
}

}  // namespace

Status DeviceOps::PrepareKernels() { return NoKernels(*this, "loading kernels"); }
Status DeviceOps::OrderAfter(cu::Stream, cu::Stream) {
  return NoKernels(*this, "ordering streams");
}
Status DeviceOps::AllocDevice(size_t, cu::Stream, void**) {
  return NoKernels(*this, "device scratch");
}
Status DeviceOps::FreeDevice(void*, cu::Stream) { return NoKernels(*this, "device scratch"); }
Status DeviceOps::AllocDeviceBlock(size_t, void**) { return NoKernels(*this, "device memory"); }
Status DeviceOps::FreeDeviceBlock(void*) { return NoKernels(*this, "device memory"); }
Status DeviceOps::MaskedPack(size_t, const void*, const uint32_t*, size_t, void*, cu::Stream) {
  return NoKernels(*this, "masked pack");
}
Status DeviceOps::MaskedUnpack(size_t, const void*, const uint32_t*, size_t, const uint64_t*,
                               size_t, void*, cu::Stream) {
  return NoKernels(*this, "masked unpack");
}
Status DeviceOps::NonzeroBitmap(size_t, const void*, size_t, uint64_t*, cu::Stream) {
  return NoKernels(*this, "zero pattern");
}
Status DeviceOps::AnyNonzeroOutside(size_t, const void*, const uint64_t*, size_t, uint32_t*,
                                    cu::Stream) {
  return NoKernels(*this, "zero pattern outside a mask");
}
Status DeviceOps::BlockQuantEncode(kernels::DType, const void*, size_t, int, void*, cu::Stream) {
  return NoKernels(*this, "block-scaled encode");
}
Status DeviceOps::BlockQuantDecode(kernels::DType, const void*, size_t, int, void*, cu::Stream) {
  return NoKernels(*this, "block-scaled decode");
}
Status DeviceOps::TernaryAbsMax(kernels::DType, const void*, const float*, size_t, size_t, float*,
                                cu::Stream) {
  return NoKernels(*this, "ternary block abs-max");
}
Status DeviceOps::TernaryQuantize(kernels::DType, const void*, size_t, size_t, const float*,
                                  kernels::PhiloxStream, int, void*, cu::Stream) {
  return NoKernels(*this, "ternary quantize");
}
Status DeviceOps::TernaryFeedbackApply(kernels::DType, const void*, float*, bool, void*, size_t,
                                       cu::Stream) {
  return NoKernels(*this, "ternary error feedback");
}
Status DeviceOps::TernaryQuantizeFeedback(kernels::DType, const void*, size_t, size_t,
                                          const float*, kernels::PhiloxStream, int, void*, float*,
                                          cu::Stream) {
  return NoKernels(*this, "ternary quantize with error feedback");
}
Status DeviceOps::TernaryDequantize(kernels::DType, const void*, int, size_t, size_t,
                                    const float*, int, void*, cu::Stream) {
  return NoKernels(*this, "ternary dequantize");
}
Status DeviceOps::TernaryDequantizeScatter(kernels::DType, const void*, int, size_t, size_t,
                                           const float*, int, const uint32_t*, const uint64_t*,
                                           size_t, void*, cu::Stream) {
  return NoKernels(*this, "ternary dequantize and scatter");
}

Status DeviceOps::Reduce(kernels::DType, kernels::RedOp, const void*, const void*, void*, size_t,
                         cu::Stream) {
  return NoKernels(*this, "reduction");
}
Status DeviceOps::DivideBy(kernels::DType, void*, size_t, int, cu::Stream) {
  return NoKernels(*this, "average division");
}
Status DeviceOps::CopyDevice(void*, const void*, size_t, cu::Stream) {
  return NoKernels(*this, "device copy");
}
Status DeviceOps::CreateStream(cu::Stream*) { return NoKernels(*this, "stream creation"); }
Status DeviceOps::DestroyStream(cu::Stream) { return NoKernels(*this, "stream destruction"); }

}  // namespace sieve::gpu
