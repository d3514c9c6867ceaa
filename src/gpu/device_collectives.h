// Collectives on device buffers: each call becomes a staged operation (pinned
// chunks, see stream_plan.h) enqueued on the caller's stream; the host
// algorithm runs on the staged bytes on the communicator's progress thread.
#ifndef SIEVE_GPU_DEVICE_COLLECTIVES_H_
#define SIEVE_GPU_DEVICE_COLLECTIVES_H_

#include <functional>
#include <initializer_list>
#include <vector>

#include "algo/op_header.h"
#include "coll/collectives.h"
#include "gpu/memory_kind.h"

struct CUstream_st;

namespace sieve::gpu {

// The plain dense collectives of core/collectives.def (its rows with device 1), as
// device buffers run them, and one more shape of the all-reduce.
#define SIEVE_DEVICE_KIND_0(name)
#define SIEVE_DEVICE_KIND_1(name) k##name,
enum class CollKind {
#define SIEVE_COLLECTIVE(name, wire, text, device) SIEVE_DEVICE_KIND_##device(name)
#include "core/collectives.def"
#undef SIEVE_COLLECTIVE
  kAllReduceWhole,  // one piece with a stable staging address (mask tracker, hierarchical
                    // dense ternary, and masked or ternary where libsieve has no device
                    // kernels: mask/device_masked.h, ternary/device_ternary.h)
  // One piece of every rank's block (the quantized reduce-scatter and all-gather, whose
  // block scales and Philox indices span the whole buffer: chunks would re-index them).
  kReduceScatterWhole,
  kAllGatherWhole,
};
#undef SIEVE_DEVICE_KIND_0
#undef SIEVE_DEVICE_KIND_1
// The table's row (kAllReduce for kAllReduceWhole too, the dense row for the other
// whole kinds) and its name ("allreduce").
algo::OpKind OpKindOf(CollKind kind);
const char* CollKindName(CollKind kind);
// The device kind of a table row with one (device 1); false for the others.
bool DeviceKindOf(algo::OpKind op, CollKind* kind);

// Runs the host algorithm on host (staging) buffers.
using HostCollective = std::function<Status(const coll::CollArgs& staged)>;

// Enqueues `kind` over the device buffers of `args` on `stream`, staged, and returns;
// `host` runs on each staged chunk (the transports are logged after its first success).
Status EnqueueDeviceCollective(Comm& comm, CollKind kind, const coll::CollArgs& args,
                               CUstream_st* stream, HostCollective host);

// An element range [begin, begin + count) of a buffer.
struct ElemRange {
  size_t begin = 0;
  size_t count = 0;
};

// An all-reduce on device buffers that writes only some ranges of recvbuff (the
// subnet calls, which leave what a rank does not hold, or nobody touched, as it
// was): one chunk with sendbuff staged whole and recvbuff's `recv_in` ranges
// staged beside it (what the host part may leave unwritten, so it comes back
// unchanged), then only `recv_out` copied back. In place, recvbuff's staging
// is sendbuff's. The staging address stays the same for the same device
// sendbuff, as for the whole all-reduce (per-buffer state: error feedback).
// `name` names the operation in messages.
Status EnqueueDevicePartial(Comm& comm, const char* name, const coll::CollArgs& args,
                            CUstream_st* stream, const std::vector<ElemRange>& recv_in,
                            const std::vector<ElemRange>& recv_out, HostCollective host);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_DEVICE_COLLECTIVES_H_
