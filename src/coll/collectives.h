// The dense collectives as plans over the algorithms: which algorithm, which
// chunk layout, which buffers. Arguments are already checked by api/.
#ifndef SIEVE_COLL_COLLECTIVES_H_
#define SIEVE_COLL_COLLECTIVES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "algo/codec.h"
#include "algo/op_header.h"
#include "algo/scratch.h"
#include "comm/comm.h"
#include "kernels/dtype.h"

namespace sieve::coll {

struct CollArgs {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  // per rank, as in NCCL (allgather: sendcount; reducescatter: recvcount)
  kernels::DType dtype = kernels::DType::kFloat32;
  kernels::RedOp op = kernels::RedOp::kSum;
  int root = 0;
  // Set when this collective is a step of a larger call (the ternary scales):
  // the ranks agree on that call's fingerprint (with this step's algorithm),
  // so a mismatch is reported in the terms of the call the user made.
  const algo::OpFingerprint* call = nullptr;
};

// Hierarchical (coll/hier.h) or flat, as plan::ChooseAllReduce says.
Status AllReduce(Comm& comm, const CollArgs& args);
// The ring or tree over all ranks of comm (or of a view), not counted as a collective.
Status FlatAllReduce(Comm& comm, const CollArgs& args);

// Where a dense collective's data lives, for the *With forms below: how bytes
// are copied, where full-size work buffers come from, which codec combines.
// HostMemory() for host buffers; the direct path passes device memory
// (gpu/direct_collectives.h). A codec failure (Codec::status) fails the
// collective on every rank.
struct DenseMemory {
  // The root's bytes in Broadcast, our own block in AllGather and ReduceScatter.
  std::function<Status(void* dst, const void* src, size_t bytes)> copy;
  // Work buffers (Reduce off the root, ReduceScatter); nullptr: the host heap.
  algo::ScratchAllocator* scratch = nullptr;
  // The dense codec combining `input` into `work`.
  std::function<std::unique_ptr<algo::Codec>(const void* input, void* work, const CollArgs& args,
                                             int nranks)>
      codec;
  // Where the buffers, the work buffers and the codec's scratch live: what the
  // transport is told for every message (algo::Channel).
  transport::MemoryType type = transport::MemoryType::kHost;
};
const DenseMemory& HostMemory();
Status FlatAllReduceWith(Comm& comm, const CollArgs& args, const DenseMemory& memory);
Status Broadcast(Comm& comm, const CollArgs& args);
Status BroadcastWith(Comm& comm, const CollArgs& args, const DenseMemory& memory);
Status Reduce(Comm& comm, const CollArgs& args);
Status ReduceWith(Comm& comm, const CollArgs& args, const DenseMemory& memory);
Status AllGather(Comm& comm, const CollArgs& args);
Status AllGatherWith(Comm& comm, const CollArgs& args, const DenseMemory& memory);
// The all-gather of a small agreement message: `width` words from every rank into *all
// (resized to width * comm.size(), rank r's words at all[width * r]); coll/rank_digests.h
// reads them.
Status AllGatherWords(Comm& comm, const uint64_t* mine, size_t width, std::vector<uint64_t>* all);
// The all-gather's ring alone, on a channel the caller opened (a step of a
// larger collective that carries its own fingerprint): args.recv already
// holds this rank's block at its place; args.send is not read.
Status RingAllGather(algo::Channel& ch, const CollArgs& args, size_t segment_bytes);
Status ReduceScatter(Comm& comm, const CollArgs& args);
Status ReduceScatterWith(Comm& comm, const CollArgs& args, const DenseMemory& memory);

}  // namespace sieve::coll

#endif  // SIEVE_COLL_COLLECTIVES_H_
