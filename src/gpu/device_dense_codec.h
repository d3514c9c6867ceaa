// DeviceDenseCodec: the dense codec (algo/dense_codec.h) on device memory,
// for the direct path. Sends go straight from the caller's device buffers,
// receive scratch is device memory (gpu/device_scratch.h), and combining, the
// average's division and copies are device kernels on the progress thread's
// stream. Each kernel is waited for before
// the codec returns, so whatever the algorithm sends or receives next sees
// its result: same arithmetic, same order as the host ring, bit for bit.
#ifndef SIEVE_GPU_DEVICE_DENSE_CODEC_H_
#define SIEVE_GPU_DEVICE_DENSE_CODEC_H_

#include <functional>

#include "algo/codec.h"
#include "gpu/device_ops.h"
#include "gpu/device_scratch.h"

namespace sieve::gpu {

class DeviceDenseCodec : public algo::Codec {
 public:
  // input and work: device memory (may be the same buffer); `scratch` on
  // `stream`, the engine's own, in the current context.
  DeviceDenseCodec(DeviceOps* ops, cu::Stream stream, DeviceScratch* scratch, const void* input,
                   void* work, kernels::DType dtype, kernels::RedOp op, int nranks);

  size_t WireBytes(size_t elems, int contributions) const override;
  bool EncodeUsesScratch() const override { return false; }
  const void* Encode(size_t offset, size_t elems, int contributions, void* scratch) override;
  void ReduceInto(size_t offset, size_t elems, int contributions, const void* wire,
                  bool first) override;
  void LoadInput(size_t offset, size_t elems) override;
  void Finalize(size_t offset, size_t elems) override;
  void* DirectTarget(size_t offset, size_t elems) override;
  void Decode(size_t offset, size_t elems, const void* wire) override;
  bool OneShot() const override { return true; }
  void CopyInputWire(size_t offset, size_t elems, void* scratch) override;
  void LoadWire(size_t offset, size_t elems, const void* wire) override { Decode(offset, elems, wire); }
  algo::ScratchAllocator* scratch_allocator() override { return scratch_; }

  // The first device failure (kernels or scratch): the collective's outcome on this rank.
  Status status() const override { return status_; }
  bool MayFailLocally() const override { return true; }

 private:
  const char* In(size_t offset) const { return input_ + offset * elem_size_; }
  char* Work(size_t offset) const { return work_ + offset * elem_size_; }
  // Enqueues `launch` on the stream and waits for it; nothing after a failure.
  void Run(const std::function<Status()>& launch);

  DeviceOps* ops_;
  cu::Stream stream_;
  DeviceScratch* scratch_;
  const char* input_;
  char* work_;
  kernels::DType dtype_;
  kernels::RedOp op_;
  int nranks_;
  size_t elem_size_;
  Status status_;
};

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DEVICE_DENSE_CODEC_H_
