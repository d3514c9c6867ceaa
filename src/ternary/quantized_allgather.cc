// The quantized all-gather: encode this rank's shard into its place in a byte
// image of every shard, the dense ring all-gather of that image, decode all.
#include "ternary/quantized_allgather.h"

#include <vector>

#include "gpu/device_collectives.h"
#include "mask/device_masked.h"
#include "plan/device_choice.h"
#include "ternary/device_quantized_allgather.h"
#include "kernels/block_quant.h"
#include "plan/algo_choice.h"
#include "sieve.h"

static_assert(SIEVE_ALLGATHER_QUANT_BLOCK == sieve::kernels::kBlockQuantBlock, "one block size");

namespace sieve::ternary {

Status QuantizedAllGatherImage(Comm& comm, size_t count, kernels::DType dtype, int bits,
                               void* image) {
  const size_t shard = kernels::BlockQuantBytes(count, bits);
  plan::ChooseAllGather(comm, shard * static_cast<size_t>(comm.size()));  // the ring
  if (!comm.is_view()) ++comm.stats().collectives;
  // Every rank agrees on the count, datatype and bits (the image's size and meaning).
  algo::OpFingerprint fp;
  fp.kind = algo::OpKind::kQuantizedAllGather;
  fp.count = count;
  fp.dtype = static_cast<uint8_t>(dtype);
  fp.mode = static_cast<uint64_t>(bits);
  fp.algo = algo::OpAlgo::kRing;
  algo::Channel ch = comm.MakeChannel(fp, comm.NextSeq());
  coll::CollArgs bytes;
  bytes.recv = image;
  bytes.count = shard;
  bytes.dtype = kernels::DType::kUint8;
  return ch.Conclude(coll::RingAllGather(ch, bytes, comm.config().segment_bytes));
}

Status QuantizedAllGather(Comm& comm, const coll::CollArgs& a, int bits) {
  const int n = comm.size();
  const size_t shard = kernels::BlockQuantBytes(a.count, bits);
  const size_t es = kernels::DTypeSize(a.dtype);
  std::vector<unsigned char> image(shard * static_cast<size_t>(n));
  // Encoded before anything is written: in place, sendbuff is our block of recvbuff.
  kernels::BlockQuantEncode(a.dtype, a.send, a.count, bits,
                            image.data() + static_cast<size_t>(comm.rank()) * shard);
  if (n > 1) SIEVE_RETURN_IF_ERROR(QuantizedAllGatherImage(comm, a.count, a.dtype, bits, image.data()));
  for (int r = 0; r < n; ++r)
    kernels::BlockQuantDecode(a.dtype, image.data() + static_cast<size_t>(r) * shard, a.count, bits,
                              static_cast<char*>(a.recv) + static_cast<size_t>(r) * a.count * es);
  return Status::OK();
}

namespace {

Status RunOnHost(Comm& comm, const coll::Call& call) {
  return QuantizedAllGather(comm, call.args, call.Params<QuantizedGatherParams>().bits);
}

// Device buffers: encoded and decoded by the device kernels, only the encoded
// shards staged (ternary/device_quantized_allgather.h); else (no kernels) every
// block staged whole (one image per call) and coded on the host.
Status EnqueueOnDevice(Comm& comm, const coll::Call& call) {
  Comm* c = &comm;
  const int bits = call.Params<QuantizedGatherParams>().bits;
  if (plan::ChooseQuantizedAllGatherOnDevice(comm, call.args.count, gpu::CanPackOnDevice())
          .route == plan::DeviceRoute::kKernels)
    return gpu::EnqueueDeviceQuantizedAllGather(comm, call.args, bits, call.stream);
  return gpu::EnqueueDeviceCollective(
      comm, gpu::CollKind::kAllGatherWhole, call.args, call.stream,
      [c, bits](const coll::CollArgs& staged) { return QuantizedAllGather(*c, staged, bits); });
}

const coll::Mode kQuantizedAllGather = {&RunOnHost, &EnqueueOnDevice, nullptr};

}  // namespace

const coll::Mode& QuantizedAllGatherMode() { return kQuantizedAllGather; }

}  // namespace sieve::ternary
