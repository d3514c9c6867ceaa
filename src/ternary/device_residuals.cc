// The per-communicator registry of device residuals.
#include "ternary/device_residuals.h"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "core/log.h"
#include "gpu/gpu_runtime.h"

namespace sieve::gpu {

namespace {

// Kept in the communicator's state (Comm::State); frees every residual on the
// last stream that used it, so kernels still queued there finish first (the
// streams must outlive the communicator, as in NCCL). A call on another
// stream is first ordered after that one (an event): stream-ordered memory.
struct DeviceResiduals {
  using Key = std::tuple<const void*, size_t, int, const void*>;
  struct Slot {
    DeviceResidual residual;
    cu::Stream last_stream = nullptr;
  };
  DeviceOps* ops = nullptr;
  std::mutex mu;
  std::map<Key, Slot> by_buffer;

  ~DeviceResiduals() {
    for (auto& [key, slot] : by_buffer) Free(slot);
  }
  void Free(Slot& slot) {
    if (slot.residual.data == nullptr) return;
    Status st = ops->FreeDevice(slot.residual.data, slot.last_stream);
    if (!st.ok()) SIEVE_WARN("freeing an error-feedback residual: %s", st.ToString().c_str());
    slot.residual.data = nullptr;
  }
};

}  // namespace

Status DeviceResidualFor(Comm& comm, const void* send, size_t count, int dtype, const void* mask,
                         size_t elems, cu::Stream stream, DeviceResidual** out) {
  DeviceOps* ops = Runtime().ops;
  if (ops == nullptr) return Status::Internal("device residual without a device");
  DeviceResiduals* all = &comm.State<DeviceResiduals>();
  std::lock_guard<std::mutex> lock(all->mu);
  if (all->ops == nullptr) all->ops = ops;
  DeviceResiduals::Slot& slot = all->by_buffer[std::make_tuple(send, count, dtype, mask)];
  if (slot.residual.data == nullptr || slot.residual.elems != elems) {
    all->Free(slot);  // a new mask at an old mask's address: start over, as the host does
    void* data = nullptr;
    SIEVE_RETURN_IF_ERROR(ops->AllocDevice(elems * sizeof(float), stream, &data));
    slot.residual = DeviceResidual{static_cast<float*>(data), elems, true};
    slot.last_stream = stream;
  }
  if (slot.last_stream != stream) {
    SIEVE_RETURN_IF_ERROR(ops->OrderAfter(stream, slot.last_stream));
    slot.last_stream = stream;
  }
  *out = &slot.residual;
  return Status::OK();
}

}  // namespace sieve::gpu
