// Dense collectives: the algorithm plan/algo_choice.h chose, chunks laid out,
// run with the dense codec.
#include "coll/collectives.h"

#include <cstring>
#include <vector>

#include "algo/chain.h"
#include "algo/dense_codec.h"
#include "algo/ring.h"
#include "algo/ring_pattern.h"
#include "algo/tree.h"
#include "coll/hier.h"
#include "plan/algo_choice.h"

namespace sieve::coll {

namespace {

// The channel of one collective, with the fingerprint every rank must agree on.
algo::Channel MakeChannel(Comm& comm, algo::OpKind kind, const CollArgs& a, uint32_t seq,
                          algo::OpAlgo algo, bool reduces, bool rooted,
                          transport::MemoryType memory) {
  // A view's operation is a step of its communicator's collective (counted there).
  if (!comm.is_view()) ++comm.stats().collectives;
  algo::OpFingerprint fp;
  if (a.call != nullptr) {
    fp = *a.call;
  } else {
    fp.kind = kind;
    fp.count = a.count;
    fp.dtype = static_cast<uint8_t>(a.dtype);
    fp.op = reduces ? static_cast<uint8_t>(a.op) : 0xff;
    fp.root = rooted ? a.root : -1;
  }
  fp.algo = algo;
  return comm.MakeChannel(fp, seq, memory);
}

}  // namespace

const DenseMemory& HostMemory() {
  static const DenseMemory* host = new DenseMemory{
      [](void* dst, const void* src, size_t bytes) {
        if (bytes != 0 && dst != src) std::memcpy(dst, src, bytes);  // NULL with 0 bytes
        return Status::OK();
      },
      nullptr,
      [](const void* input, void* work, const CollArgs& a, int nranks) {
        return std::unique_ptr<algo::Codec>(
            new algo::DenseCodec(input, work, a.dtype, a.op, nranks));
      },
      transport::MemoryType::kHost};
  return *host;
}

Status AllReduce(Comm& comm, const CollArgs& a) {
  size_t bytes = a.count * kernels::DTypeSize(a.dtype);
  if (plan::ChooseAllReduce(comm, a.count, bytes).algo == plan::Algo::kHier) {
    ++comm.stats().collectives;
    return HierDenseAllReduce(comm, a, a.call != nullptr ? *a.call : DenseAllReduceFingerprint(a));
  }
  return FlatAllReduce(comm, a);
}

Status FlatAllReduce(Comm& comm, const CollArgs& a) {
  return FlatAllReduceWith(comm, a, HostMemory());
}

Status FlatAllReduceWith(Comm& comm, const CollArgs& a, const DenseMemory& memory) {
  uint32_t seq = comm.NextSeq();
  size_t bytes = a.count * kernels::DTypeSize(a.dtype);
  std::unique_ptr<algo::Codec> owned = memory.codec(a.send, a.recv, a, comm.size());
  algo::Codec& codec = *owned;
  if (comm.size() == 1) {
    codec.LoadInput(0, a.count);
    codec.Finalize(0, a.count);
    return codec.status();
  }
  const plan::Algo chosen = plan::ChooseAllReduce(comm, a.count, bytes).algo;
  // AllReduce took the hierarchical plan already; the direct path never takes it.
  if (chosen == plan::Algo::kHier)
    return Status::Internal("flat all-reduce asked for on a hierarchical plan");
  const algo::AllReduceRun run = plan::FlatRun(comm, chosen, comm.config().segment_bytes);
  algo::Channel ch = MakeChannel(comm, algo::OpKind::kAllReduce, a, seq, run.algo, true, false,
                                 memory.type);
  Status data = algo::RunAllReduce(ch, codec, a.count, run);
  if (data.ok()) data = codec.status();
  return ch.Conclude(data);
}

Status Broadcast(Comm& comm, const CollArgs& a) { return BroadcastWith(comm, a, HostMemory()); }

Status BroadcastWith(Comm& comm, const CollArgs& a, const DenseMemory& memory) {
  uint32_t seq = comm.NextSeq();
  size_t bytes = a.count * kernels::DTypeSize(a.dtype);
  if (comm.rank() == a.root) SIEVE_RETURN_IF_ERROR(memory.copy(a.recv, a.send, bytes));
  if (comm.size() == 1) return Status::OK();
  plan::ChooseBroadcast(comm, bytes);  // the chain
  algo::Channel ch =
      MakeChannel(comm, algo::OpKind::kBroadcast, a, seq, algo::OpAlgo::kChain, false, true,
                  memory.type);
  return ch.Conclude(
      algo::RunChainBroadcast(ch, a.recv, bytes, a.root, comm.config().segment_bytes));
}

Status Reduce(Comm& comm, const CollArgs& a) { return ReduceWith(comm, a, HostMemory()); }

Status ReduceWith(Comm& comm, const CollArgs& a, const DenseMemory& memory) {
  uint32_t seq = comm.NextSeq();
  size_t bytes = a.count * kernels::DTypeSize(a.dtype);
  // Only the root's recvbuff is written; other ranks build partials in scratch.
  algo::ScratchBuffer scratch(memory.scratch);
  if (comm.rank() != a.root) SIEVE_RETURN_IF_ERROR(scratch.Reserve(bytes));
  void* work = comm.rank() == a.root ? a.recv : scratch.data();
  std::unique_ptr<algo::Codec> codec = memory.codec(a.send, work, a, comm.size());
  if (comm.size() == 1) {
    codec->LoadInput(0, a.count);
    codec->Finalize(0, a.count);
    return codec->status();
  }
  plan::ChooseReduce(comm, bytes);  // the chain
  algo::Channel ch =
      MakeChannel(comm, algo::OpKind::kReduce, a, seq, algo::OpAlgo::kChain, true, true,
                  memory.type);
  Status data = algo::RunChainReduce(ch, *codec, a.count, a.root, comm.config().segment_bytes);
  if (data.ok()) data = codec->status();
  return ch.Conclude(data);
}

Status AllGather(Comm& comm, const CollArgs& a) { return AllGatherWith(comm, a, HostMemory()); }

Status AllGatherWith(Comm& comm, const CollArgs& a, const DenseMemory& memory) {
  uint32_t seq = comm.NextSeq();
  size_t esize = kernels::DTypeSize(a.dtype);
  char* own = static_cast<char*>(a.recv) + static_cast<size_t>(comm.rank()) * a.count * esize;
  SIEVE_RETURN_IF_ERROR(memory.copy(own, a.send, a.count * esize));
  if (comm.size() == 1) return Status::OK();
  plan::ChooseAllGather(comm, a.count * esize * comm.size());  // the ring
  algo::Channel ch =
      MakeChannel(comm, algo::OpKind::kAllGather, a, seq, algo::OpAlgo::kRing, false, false,
                  memory.type);
  return ch.Conclude(RingAllGather(ch, a, comm.config().segment_bytes));
}

Status AllGatherWords(Comm& comm, const uint64_t* mine, size_t width, std::vector<uint64_t>* all) {
  all->assign(width * static_cast<size_t>(comm.size()), 0);
  CollArgs args;
  args.send = mine;
  args.recv = all->data();
  args.count = width;
  args.dtype = kernels::DType::kUint64;
  return AllGather(comm, args);
}

Status RingAllGather(algo::Channel& ch, const CollArgs& a, size_t segment_bytes) {
  // Without reduce-scatter the dense codec only hands out pointers into recv
  // (Encode, DirectTarget): no arithmetic, so device buffers work as they are.
  algo::DenseCodec codec(a.recv, a.recv, a.dtype, kernels::RedOp::kSum, ch.size());
  algo::RingOptions options;
  options.reduce_scatter = false;
  options.segment_bytes = segment_bytes;
  return algo::RunRing(ch, codec, algo::EqualBlocks(a.count, ch.size()), options);
}

Status ReduceScatter(Comm& comm, const CollArgs& a) {
  return ReduceScatterWith(comm, a, HostMemory());
}

Status ReduceScatterWith(Comm& comm, const CollArgs& a, const DenseMemory& memory) {
  uint32_t seq = comm.NextSeq();
  size_t esize = kernels::DTypeSize(a.dtype);
  size_t total = a.count * static_cast<size_t>(comm.size());
  // The ring combines into a full-size work buffer; our block is copied out.
  algo::ScratchBuffer work(memory.scratch);
  SIEVE_RETURN_IF_ERROR(work.Reserve(total * esize));
  std::unique_ptr<algo::Codec> codec = memory.codec(a.send, work.data(), a, comm.size());
  plan::ChooseReduceScatter(comm, total * esize);  // the ring
  algo::Channel ch =
      MakeChannel(comm, algo::OpKind::kReduceScatter, a, seq, algo::OpAlgo::kRing, true, false,
                  memory.type);
  algo::RingOptions options;
  options.all_gather = false;
  options.segment_bytes = comm.config().segment_bytes;
  Status data = algo::RunRing(ch, *codec, algo::EqualBlocks(a.count, comm.size()), options);
  if (data.ok()) data = codec->status();
  SIEVE_RETURN_IF_ERROR(ch.Conclude(data));
  return memory.copy(a.recv, work.data() + static_cast<size_t>(comm.rank()) * a.count * esize,
                     a.count * esize);
}

}  // namespace sieve::coll
