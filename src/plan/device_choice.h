// How a collective on device buffers runs, and why: one function per kind of
// call. The device's abilities come in as arguments (gpu/ asks the driver and
// UCX), so plan/ stays below gpu/. Each logs its choice with the reason at INFO
// once per communicator, collective, route and size class.
#ifndef SIEVE_PLAN_DEVICE_CHOICE_H_
#define SIEVE_PLAN_DEVICE_CHOICE_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "algo/op_header.h"
#include "comm/comm.h"
#include "core/status.h"
#include "plan/memory_kind.h"

namespace sieve::plan {

// Host or device for one call, the one place it is decided: the kind all
// non-null buffers share, asked of the query gpu/ installed
// (plan/memory_kind.h; none installed: host, without a question), or
// InvalidUsage naming each buffer and its kind when they differ.
Status ChooseMemory(std::initializer_list<NamedBuffer> buffers, MemoryKind* out);

// The same rule with the caller's query (gpu/'s classifiers, tests' fakes).
template <typename Query>
Status ChooseMemoryWith(const Query& query, std::initializer_list<NamedBuffer> buffers,
                        MemoryKind* out);

enum class DeviceRoute : uint8_t {
  kDirect,          // device memory handed to UCX, device kernels reduce (gpu/direct_collectives.h)
  kStaged,          // through pinned host memory in chunks (gpu/device_collectives.h)
  kWholeStaged,     // the whole buffer staged, the mode run on the host copy
  kKernels,         // the mode's kernels on the caller's stream; only scales, wire and
                    // final sums staged (ternary/device_ternary.h)
  kPackedOnDevice,  // packed by the mask on the device, the nnz kept elements staged and
                    // the host plan run on them (mask/device_masked.h)
};
const char* DeviceRouteName(DeviceRoute route);

struct DeviceChoice {
  DeviceRoute route = DeviceRoute::kStaged;
  std::string why;
};

// A plain dense collective (`kind`: a row of core/collectives.def with a device
// kind) of `count` elements, `bytes` of them: direct when the communicator's
// direct path is open (`direct_path`, `path_why`: gpu::DirectPath) unless it is an
// all-reduce whose plan is hierarchical; else staged in chunks.
DeviceChoice ChooseDenseOnDevice(Comm& comm, algo::OpKind kind, size_t count, size_t bytes,
                                 bool direct_path, const std::string& path_why);

// The masked all-reduce keeping `nnz` elements: packed on the device when libsieve
// has its device kernels (`kernels`) and the mask keeps something; else the whole
// buffer staged and packed on the host.
DeviceChoice ChooseMaskedOnDevice(Comm& comm, size_t nnz, bool kernels);

// The ternary all-reduce quantizing `elems` elements (a mask's kept ones when
// `masked`): the device kernels when libsieve has them (`kernels`), elems > 0 and
// the ternary plan at `levels` is flat (always with error feedback); packed on the
// device and run through the hierarchical plan on the host when masked; else the
// whole buffer staged and quantized on the host.
DeviceChoice ChooseTernaryOnDevice(Comm& comm, size_t elems, bool error_feedback, bool masked,
                                   bool kernels, int levels);

// The quantized reduce-scatter of `count` elements per rank: the device kernels
// (ternary/device_reduce_scatter.h) when libsieve has them (`kernels`), unmasked,
// on two or more ranks with count > 0; else every block staged whole and
// quantized on the host.
DeviceChoice ChooseQuantizedReduceScatterOnDevice(Comm& comm, size_t count, bool masked,
                                                  bool kernels);

// The quantized all-gather of `count` elements per rank: encoded and decoded by
// the device kernels when libsieve has them (`kernels`) and count > 0; else
// every block staged whole and coded on the host.
DeviceChoice ChooseQuantizedAllGatherOnDevice(Comm& comm, size_t count, bool kernels);

// The mixed-buffers error of ChooseMemory: names every non-null buffer and the
// kind `kinds` gives it (only built on that error path).
Status MixedBuffers(std::initializer_list<NamedBuffer> buffers, const MemoryKind* kinds);

template <typename Query>
Status ChooseMemoryWith(const Query& query, std::initializer_list<NamedBuffer> buffers,
                        MemoryKind* out) {
  MemoryKind kinds[8] = {};
  bool any = false, mixed = false;
  MemoryKind first = MemoryKind::kHost;
  size_t i = 0;
  for (const NamedBuffer& b : buffers) {
    if (i == 8) return Status::Internal("more than 8 buffers in one call");
    MemoryKind kind = b.ptr == nullptr ? MemoryKind::kHost : query(b.ptr);
    kinds[i++] = kind;
    if (b.ptr == nullptr) continue;
    if (any && kind != first) mixed = true;
    if (!any) first = kind;
    any = true;
  }
  if (mixed) return MixedBuffers(buffers, kinds);
  *out = first;
  return Status::OK();
}

}  // namespace sieve::plan

#endif  // SIEVE_PLAN_DEVICE_CHOICE_H_
