// The quantized all-gather: encode this rank's shard into its place in a byte
// image of every shard, the dense ring all-gather of that image, decode all.
#include "ternary/quantized_allgather.h"

#include <vector>

#include "gpu/device_collectives.h"
#include "kernels/block_quant.h"
#include "plan/algo_choice.h"
#include "sieve.h"

static_assert(SIEVE_ALLGATHER_QUANT_BLOCK == sieve::kernels::kBlockQuantBlock, "one block size");

namespace sieve::ternary {

Status QuantizedAllGather(Comm& comm, const coll::CollArgs& a, int bits) {
  const int n = comm.size();
  const size_t shard = kernels::BlockQuantBytes(a.count, bits);
  const size_t es = kernels::DTypeSize(a.dtype);
  std::vector<unsigned char> image(shard * static_cast<size_t>(n));
  // Encoded before anything is written: in place, sendbuff is our block of recvbuff.
  kernels::BlockQuantEncode(a.dtype, a.send, a.count, bits,
                            image.data() + static_cast<size_t>(comm.rank()) * shard);
  if (n > 1) {
    plan::ChooseAllGather(comm, image.size());  // the ring
    if (!comm.is_view()) ++comm.stats().collectives;
    // Every rank agrees on the count, datatype and bits (the image's size and meaning).
    algo::OpFingerprint fp;
    fp.kind = algo::OpKind::kQuantizedAllGather;
    fp.count = a.count;
    fp.dtype = static_cast<uint8_t>(a.dtype);
    fp.mode = static_cast<uint64_t>(bits);
    fp.algo = algo::OpAlgo::kRing;
    algo::Channel ch = comm.MakeChannel(fp, comm.NextSeq());
    coll::CollArgs bytes;
    bytes.recv = image.data();
    bytes.count = shard;
    bytes.dtype = kernels::DType::kUint8;
    SIEVE_RETURN_IF_ERROR(ch.Conclude(coll::RingAllGather(ch, bytes, comm.config().segment_bytes)));
  }
  for (int r = 0; r < n; ++r)
    kernels::BlockQuantDecode(a.dtype, image.data() + static_cast<size_t>(r) * shard, a.count, bits,
                              static_cast<char*>(a.recv) + static_cast<size_t>(r) * a.count * es);
  return Status::OK();
}

namespace {

Status RunOnHost(Comm& comm, const coll::Call& call) {
  return QuantizedAllGather(comm, call.args, call.Params<QuantizedGatherParams>().bits);
}

// Device buffers: every block staged whole (one image per call), coded on the host.
Status EnqueueOnDevice(Comm& comm, const coll::Call& call) {
  Comm* c = &comm;
  const int bits = call.Params<QuantizedGatherParams>().bits;
  return gpu::EnqueueDeviceCollective(
      comm, gpu::CollKind::kAllGatherWhole, call.args, call.stream,
      [c, bits](const coll::CollArgs& staged) { return QuantizedAllGather(*c, staged, bits); });
}

const coll::Mode kQuantizedAllGather = {&RunOnHost, &EnqueueOnDevice, nullptr};

}  // namespace

const coll::Mode& QuantizedAllGatherMode() { return kQuantizedAllGather; }

}  // namespace sieve::ternary
