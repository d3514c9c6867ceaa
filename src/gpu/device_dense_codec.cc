// DeviceDenseCodec: the dense codec's steps as device kernels, each waited for.
#include "gpu/device_dense_codec.h"

namespace sieve::gpu {

DeviceDenseCodec::DeviceDenseCodec(DeviceOps* ops, cu::Stream stream, DeviceScratch* scratch,
                                   const void* input, void* work, kernels::DType dtype,
                                   kernels::RedOp op, int nranks)
    : ops_(ops),
      stream_(stream),
      scratch_(scratch),
      input_(static_cast<const char*>(input)),
      work_(static_cast<char*>(work)),
      dtype_(dtype),
      op_(op),
      nranks_(nranks),
      elem_size_(kernels::DTypeSize(dtype)) {}

void DeviceDenseCodec::Run(const std::function<Status()>& launch) {
  if (!status_.ok()) return;
  status_ = launch();
  if (status_.ok()) status_ = ops_->Synchronize(stream_);
}

size_t DeviceDenseCodec::WireBytes(size_t elems, int) const { return elems * elem_size_; }

const void* DeviceDenseCodec::Encode(size_t offset, size_t, int contributions, void*) {
  // Zero copy: every kernel that wrote work has completed (Run waits).
  return contributions == 1 ? static_cast<const void*>(In(offset)) : Work(offset);
}

void DeviceDenseCodec::ReduceInto(size_t offset, size_t elems, int, const void* wire,
                                  bool first) {
  const void* acc = first ? static_cast<const void*>(In(offset)) : Work(offset);
  Run([&] { return ops_->Reduce(dtype_, op_, acc, wire, Work(offset), elems, stream_); });
}

void DeviceDenseCodec::LoadInput(size_t offset, size_t elems) {
  if (In(offset) == Work(offset)) return;
  Run([&] { return ops_->CopyDevice(Work(offset), In(offset), elems * elem_size_, stream_); });
}

void DeviceDenseCodec::Finalize(size_t offset, size_t elems) {
  if (op_ != kernels::RedOp::kAvg || nranks_ <= 1) return;
  Run([&] { return ops_->DivideBy(dtype_, Work(offset), elems, nranks_, stream_); });
}

void* DeviceDenseCodec::DirectTarget(size_t offset, size_t) { return Work(offset); }

void DeviceDenseCodec::Decode(size_t offset, size_t elems, const void* wire) {
  if (wire == Work(offset)) return;
  Run([&] { return ops_->CopyDevice(Work(offset), wire, elems * elem_size_, stream_); });
}

void DeviceDenseCodec::CopyInputWire(size_t offset, size_t elems, void* scratch) {
  if (elems == 0) return;
  Run([&] { return ops_->CopyDevice(scratch, In(offset), elems * elem_size_, stream_); });
}

}  // namespace sieve::gpu
