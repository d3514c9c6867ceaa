// The quantized all-gather of device buffers: encode on the stream, the
// encoded shards through staging, decode on the stream.
#include "ternary/device_quantized_allgather.h"

#include "gpu/comm_engine.h"
#include "gpu/gpu_runtime.h"
#include "kernels/block_quant.h"
#include "ternary/quantized_allgather.h"

namespace sieve::gpu {

Status EnqueueDeviceQuantizedAllGather(Comm& comm, const coll::CollArgs& a, int bits,
                                       CUstream_st* stream) {
  ProgressEngine* engine = nullptr;
  SIEVE_RETURN_IF_ERROR(EngineFor(comm, {a.send, a.recv}, &engine));
  DeviceOps* ops = Runtime().ops;
  const int n = comm.size();
  const size_t shard = kernels::BlockQuantBytes(a.count, bits);
  const size_t es = kernels::DTypeSize(a.dtype);
  const size_t mine = shard * static_cast<size_t>(comm.rank());
  void* scratch = nullptr;
  SIEVE_RETURN_IF_ERROR(ops->AllocDevice(shard * static_cast<size_t>(n), stream, &scratch));
  char* image = static_cast<char*>(scratch);
  // Each step is queued behind the previous one on the stream (in place, the
  // encode reads sendbuff before any decode writes recvbuff); after a failed
  // enqueue the outputs are undefined, as for every device collective.
  Status st = ops->BlockQuantEncode(a.dtype, a.send, a.count, bits, image + mine, stream);
  if (st.ok() && n > 1) {
    StagedChunk c;
    c.bytes = shard * static_cast<size_t>(n);
    c.in.push_back({mine, image + mine, shard});
    c.out.push_back({0, image, c.bytes});
    Comm* cm = &comm;
    const size_t count = a.count;
    const kernels::DType dtype = a.dtype;
    c.run = [cm, count, dtype, bits](char* staging) {
      Status done = ternary::QuantizedAllGatherImage(*cm, count, dtype, bits, staging);
      if (done.ok()) cm->LogTransportOnce();
      return done;
    };
    st = engine->Enqueue(OneChunkOp("quantized all-gather", stream, std::move(c)));
  }
  for (int r = 0; r < n && st.ok(); ++r)
    st = ops->BlockQuantDecode(a.dtype, image + shard * static_cast<size_t>(r), a.count, bits,
                               static_cast<char*>(a.recv) + a.count * es * static_cast<size_t>(r),
                               stream);
  Status freed = ops->FreeDevice(scratch, stream);
  return st.ok() ? freed : st;
}

}  // namespace sieve::gpu
