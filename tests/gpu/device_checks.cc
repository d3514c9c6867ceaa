// Device-buffer collectives vs the host path on the same inputs, bit for bit.
#include "gpu/device_checks.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "gpu/device_check_ok.h"
#include "gpu/stream_plan.h"
#include "support/reference.h"
#include "support/ternary_reference.h"

namespace sieve_test {
namespace {

size_t SizeOf(sieveDataType_t t) {
  switch (t) {
    case sieveInt8: case sieveUint8: return 1;
    case sieveFloat16: case sieveBfloat16: return 2;
    case sieveInt32: case sieveUint32: case sieveFloat32: return 4;
    default: return 8;
  }
}

enum class Coll { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter };
const char* Name(Coll c) {
  static const char* n[] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter"};
  return n[static_cast<int>(c)];
}

struct Case {
  Coll coll;
  sieveDataType_t dtype;
  sieveRedOp_t op;
  size_t count;
  bool in_place;
  bool real_values;  // random reals: the summation order shows in the bits
};

// Random reals in [-1, 1) per rank (float32/float64 only).
void FillReal(uint64_t seed, int rank, sieveDataType_t t, size_t n, void* out) {
  std::mt19937_64 rng(seed * 1000003 + rank);
  std::uniform_real_distribution<double> u(-1, 1);
  for (size_t i = 0; i < n; ++i) {
    if (t == sieveFloat32) static_cast<float*>(out)[i] = static_cast<float>(u(rng));
    else static_cast<double*>(out)[i] = u(rng);
  }
}

// One case on host buffers (the reference) and on device buffers.
std::string RunCase(sieveComm_t comm, int rank, int n, size_t chunk_bytes, DeviceMemory& mem,
                    const Case& c, uint64_t seed) {
  const size_t es = SizeOf(c.dtype);
  const int root = static_cast<int>(seed % static_cast<uint64_t>(n));
  const bool gathered = c.coll == Coll::kAllGather, scattered = c.coll == Coll::kReduceScatter;
  const size_t send_n = scattered ? c.count * n : c.count;
  const size_t recv_n = gathered ? c.count * n : c.count;
  std::vector<char> send(send_n * es), host_out(recv_n * es, 0x5a), dev_out(recv_n * es);
  if (c.real_values) FillReal(seed, rank, c.dtype, send_n, send.data());
  else FillInput(seed, rank, c.dtype, c.op, 0, send_n, send.data());

  // Reference: the host path. All-reduce on the same pieces as the device path's
  // chunks, so the reduction order (hence every bit) is the same.
  char* hs = send.data();
  char* hr = host_out.data();
  switch (c.coll) {
    case Coll::kAllReduce: {
      size_t off = 0;
      for (size_t len : sieve::gpu::SplitEven(c.count, chunk_bytes / es)) {
        CHECK_OK(sieveAllReduce(hs + off * es, hr + off * es, len, c.dtype, c.op, comm, nullptr),
                 "host allreduce");
        off += len;
      }
      break;
    }
    case Coll::kBroadcast:
      CHECK_OK(sieveBroadcast(hs, hr, c.count, c.dtype, root, comm, nullptr), "host broadcast");
      break;
    case Coll::kReduce:
      CHECK_OK(sieveReduce(hs, hr, c.count, c.dtype, c.op, root, comm, nullptr), "host reduce");
      break;
    case Coll::kAllGather:
      CHECK_OK(sieveAllGather(hs, hr, c.count, c.dtype, comm, nullptr), "host allgather");
      break;
    case Coll::kReduceScatter:
      CHECK_OK(sieveReduceScatter(hs, hr, c.count, c.dtype, c.op, comm, nullptr),
               "host reducescatter");
      break;
  }

  // Device: in place as NCCL defines it per collective.
  size_t dev_bytes = std::max(send_n, recv_n) * es;
  char* d_big = static_cast<char*>(mem.Alloc(dev_bytes));
  char* d_send = static_cast<char*>(mem.Alloc(send_n * es));
  std::vector<char> sentinel(recv_n * es, static_cast<char>(0xa5));
  char *ds = d_send, *dr = d_big;
  if (c.in_place) {
    ds = gathered ? d_big + static_cast<size_t>(rank) * c.count * es : d_big;
    dr = d_big;
    if (scattered) dr = d_big + static_cast<size_t>(rank) * c.count * es;
    mem.Upload(d_big, sentinel.data(), recv_n * es);
  } else {
    mem.Upload(dr, sentinel.data(), recv_n * es);
  }
  mem.Upload(ds, send.data(), send_n * es);
  sieveStream_t s = mem.stream();
  switch (c.coll) {
    case Coll::kAllReduce:
      CHECK_OK(sieveAllReduce(ds, dr, c.count, c.dtype, c.op, comm, s), "device allreduce");
      break;
    case Coll::kBroadcast:
      CHECK_OK(sieveBroadcast(ds, dr, c.count, c.dtype, root, comm, s), "device broadcast");
      break;
    case Coll::kReduce:
      CHECK_OK(sieveReduce(ds, dr, c.count, c.dtype, c.op, root, comm, s), "device reduce");
      break;
    case Coll::kAllGather:
      CHECK_OK(sieveAllGather(ds, dr, c.count, c.dtype, comm, s), "device allgather");
      break;
    case Coll::kReduceScatter:
      CHECK_OK(sieveReduceScatter(ds, dr, c.count, c.dtype, c.op, comm, s), "device reducescatter");
      break;
  }
  mem.Synchronize();
  mem.Download(dev_out.data(), dr, recv_n * es);
  if (c.coll == Coll::kReduce && rank != root) return "";  // recvbuff unused off the root
  size_t first = 0;
  size_t bad = CountMismatches(dev_out.data(), host_out.data(), recv_n, es, &first);
  if (bad != 0) {
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "%s %s %s count %zu %s%s: %zu of %zu elements differ from the host path "
                  "(first at %zu)",
                  Name(c.coll), TypeName(c.dtype), OpName(c.op), c.count,
                  c.in_place ? "in place" : "out of place", c.real_values ? " (reals)" : "", bad,
                  recv_n, first);
    return msg;
  }
  return "";
}

std::string DenseChecks(sieveComm_t comm, int rank, int n, size_t chunk_bytes, DeviceMemory& mem) {
  const sieveDataType_t types[] = {sieveInt8,    sieveInt32,   sieveUint64, sieveFloat16,
                                   sieveBfloat16, sieveFloat32, sieveFloat64};
  const sieveRedOp_t ops[] = {sieveSum, sieveProd, sieveMax, sieveMin, sieveAvg};
  const size_t counts[] = {1, 7, 1023, 40001};
  uint64_t seed = 11;
  for (Coll coll : {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather,
                    Coll::kReduceScatter}) {
    bool reduces = coll != Coll::kBroadcast && coll != Coll::kAllGather;
    for (sieveDataType_t t : types)
      for (sieveRedOp_t op : ops) {
        if (!reduces && op != sieveSum) continue;
        for (size_t count : counts)
          for (bool in_place : {false, true}) {
            std::string e = RunCase(comm, rank, n, chunk_bytes, mem,
                                    {coll, t, op, count, in_place, false}, ++seed);
            if (!e.empty()) return e;
          }
      }
  }
  // Random reals: a chunking or ordering difference would change the bits.
  for (sieveDataType_t t : {sieveFloat32, sieveFloat64})
    for (Coll coll : {Coll::kAllReduce, Coll::kReduce, Coll::kReduceScatter})
      for (size_t count : {size_t{999}, size_t{100003}}) {
        std::string e = RunCase(comm, rank, n, chunk_bytes, mem,
                                {coll, t, sieveSum, count, false, true}, ++seed);
        if (!e.empty()) return e;
      }
  return "";
}

// Ternary (with and without a mask, with error feedback) and masked: whole
// buffers, so device and host run the very same algorithm on the same bytes.
std::string CompressedChecks(sieveComm_t comm, int rank, int n, DeviceMemory& mem) {
  const size_t count = 10007;
  std::mt19937 rng(77);  // same mask on every rank
  std::vector<uint8_t> keep(count);
  for (auto& k : keep) k = rng() % 10 < 3;
  sieveMask_t mask = nullptr;
  CHECK_OK(sieveMaskRegister(comm, keep.data(), sieveMaskBytes, count, sieveMaskStrict, &mask),
           "mask register");
  std::vector<float> send(count), host_out(count), dev_out(count);
  float* d_send = static_cast<float*>(mem.Alloc(count * 4));
  float* d_recv = static_cast<float*>(mem.Alloc(count * 4));
  for (int variant = 0; variant < 6; ++variant) {
    FillReal(500 + variant, rank, sieveFloat32, count, send.data());
    sieveTernaryParams_t p = {};
    p.seed = 42;
    p.step = static_cast<uint64_t>(variant);
    p.mask = variant % 3 == 1 ? mask : nullptr;
    p.error_feedback = variant >= 3;
    sieveRedOp_t op = variant % 2 ? sieveAvg : sieveSum;
    mem.Upload(d_send, send.data(), count * 4);
    if (variant % 3 == 2) {
      CHECK_OK(sieveAllReduceMasked(send.data(), host_out.data(), count, sieveFloat32, op, mask,
                                    comm, nullptr), "host masked");
      CHECK_OK(sieveAllReduceMasked(d_send, d_recv, count, sieveFloat32, op, mask, comm,
                                    mem.stream()), "device masked");
    } else {
      CHECK_OK(sieveAllReduceTernary(send.data(), host_out.data(), count, sieveFloat32, op, &p,
                                     comm, nullptr), "host ternary");
      CHECK_OK(sieveAllReduceTernary(d_send, d_recv, count, sieveFloat32, op, &p, comm,
                                     mem.stream()), "device ternary");
    }
    mem.Synchronize();
    mem.Download(dev_out.data(), d_recv, count * 4);
    size_t first = 0;
    size_t bad = CountMismatches(dev_out.data(), host_out.data(), count, 4, &first);
    if (bad != 0)
      return "ternary/masked variant " + std::to_string(variant) + ": " + std::to_string(bad) +
             " elements differ from the host path (first at " + std::to_string(first) + ")";
  }
  CHECK_OK(sieveMaskDeregister(mask), "mask deregister");
  (void)n;
  return "";
}

// Dense ternary on device buffers (abs-max and quantize kernels on the stream,
// only scales and wire staged): equals the host path and the oracle bit for
// bit. Fresh random odd sizes, blocks and seeds per run (rank 0 draws the
// seed, printed on failure), float32/float16/bfloat16, sum/avg, in and out of place.
std::string TernaryDenseChecks(sieveComm_t comm, int rank, int n, DeviceMemory& mem) {
  uint64_t seed = 0;
  if (rank == 0) seed = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  CHECK_OK(sieveBroadcast(&seed, &seed, 1, sieveUint64, 0, comm, nullptr), "seed broadcast");
  std::mt19937_64 rng(seed);  // the same draws on every rank
  int k = 0;
  for (sieveDataType_t t : {sieveFloat32, sieveFloat16, sieveBfloat16})
    for (sieveRedOp_t op : {sieveSum, sieveAvg})
      for (bool in_place : {false, true}) {
        TernaryCase c;
        c.input_seed = seed + static_cast<uint64_t>(k);
        c.nranks = n;
        c.dtype = t;
        c.op = op;
        c.count = k == 0 ? 1 : (rng() % 30000) | 1;  // odd
        c.block = k % 3 == 0 ? 2048 : rng() % 700 + 1;
        c.seed = rng();
        c.step = static_cast<uint64_t>(k++);
        const size_t es = TypeSize(t), bytes = c.count * es;
        std::vector<char> send(bytes), host_out(bytes), dev_out(bytes), junk(bytes, 0x5b);
        FillTernaryInput(c.input_seed, rank, t, c.count, send.data());
        sieveTernaryParams_t p = {};
        p.seed = c.seed;
        p.step = c.step;
        p.block_size = c.block;
        char what[160];
        std::snprintf(what, sizeof what, "dense ternary %s %s count %zu block %zu %s (seed %llu)",
                      TypeName(t), OpName(op), c.count, c.block,
                      in_place ? "in place" : "out of place",
                      static_cast<unsigned long long>(seed));
        CHECK_OK(sieveAllReduceTernary(send.data(), host_out.data(), c.count, t, op, &p, comm,
                                       nullptr), "%s: host", what);
        char* d_send = static_cast<char*>(mem.Alloc(bytes));
        char* d_recv = in_place ? d_send : static_cast<char*>(mem.Alloc(bytes));
        mem.Upload(d_send, send.data(), bytes);
        if (!in_place) mem.Upload(d_recv, junk.data(), bytes);
        CHECK_OK(sieveAllReduceTernary(d_send, d_recv, c.count, t, op, &p, comm, mem.stream()),
                 "%s: device", what);
        mem.Synchronize();
        mem.Download(dev_out.data(), d_recv, bytes);
        size_t first = 0;
        size_t bad = CountMismatches(dev_out.data(), host_out.data(), c.count, es, &first);
        if (bad != 0)
          return std::string(what) + ": " + std::to_string(bad) +
                 " elements differ from the host path (first at " + std::to_string(first) + ")";
        std::vector<char> expect = ExpectedTernary(c);
        bad = CountMismatches(host_out.data(), expect.data(), c.count, es, &first);
        if (bad != 0)
          return std::string(what) + ": " + std::to_string(bad) +
                 " elements differ from the oracle (first at " + std::to_string(first) + ")";
      }
  return "";
}

// The quantized reduce-scatter on device buffers (quantized on the stream, this rank's
// chunk dequantized there, often from inside a block) against the host path, bit for
// bit: L = 1 and 7, float32/bfloat16, sum/avg, random odd counts and blocks, in place
// and not, error feedback over two steps (each path its own residual, from zero).
std::string QuantizedReduceScatterChecks(sieveComm_t comm, int rank, int n, DeviceMemory& mem) {
  std::mt19937_64 rng(77);  // the same draws on every rank
  int k = 0;
  for (int levels : {1, 7})
    for (sieveDataType_t t : {sieveFloat32, sieveBfloat16})
      for (sieveRedOp_t op : {sieveSum, sieveAvg}) {
        const size_t count = (rng() % 9000) | 1, block = k % 2 == 0 ? 2048 : rng() % 700 + 1;
        const bool in_place = k % 2 == 1, feedback = k % 4 == 3;
        const size_t es = TypeSize(t), bytes = count * es, total = bytes * n;
        std::vector<char> send(total), host_out(bytes), dev_out(bytes);
        char* d_send = static_cast<char*>(mem.Alloc(total));
        char* d_recv = in_place ? d_send + rank * bytes : static_cast<char*>(mem.Alloc(bytes));
        for (int step = 0; step < (feedback ? 2 : 1); ++step) {
          FillTernaryInput(500 + 10 * k + step, rank, t, count * n, send.data());
          sieveTernaryParams_t p = {};
          p.seed = 40 + k;
          p.step = step;
          p.block_size = block;
          p.error_feedback = feedback;
          char what[160];
          std::snprintf(what, sizeof what,
                        "quantized reduce-scatter L %d %s %s count %zu block %zu %s step %d",
                        levels, TypeName(t), OpName(op), count, block,
                        in_place ? "in place" : "out of place", step);
          CHECK_OK(sieveReduceScatterQuantized(send.data(), host_out.data(), count, t, op, levels,
                                               &p, comm, nullptr), "%s: host", what);
          mem.Upload(d_send, send.data(), total);
          CHECK_OK(sieveReduceScatterQuantized(d_send, d_recv, count, t, op, levels, &p, comm,
                                               mem.stream()), "%s: device", what);
          mem.Synchronize();
          mem.Download(dev_out.data(), d_recv, bytes);
          size_t first = 0;
          const size_t bad = CountMismatches(dev_out.data(), host_out.data(), count, es, &first);
          if (bad != 0)
            return std::string(what) + ": " + std::to_string(bad) +
                   " elements differ from the host path (first at " + std::to_string(first) + ")";
        }
        ++k;
      }
  return "";
}

// The quantized all-gather on device buffers (encode and decode kernels, only the
// encoded shards staged) against the host path, byte for byte: every float type,
// 8 and 4 bits, odd counts, in place and not.
std::string QuantizedAllGatherChecks(sieveComm_t comm, int rank, int n, DeviceMemory& mem) {
  int k = 0;
  for (sieveDataType_t t : {sieveFloat32, sieveFloat16, sieveBfloat16})
    for (int bits : {8, 4}) {
      const size_t count = 1 + 977 * static_cast<size_t>(k) * (k % 2 + 1), es = TypeSize(t);
      const size_t bytes = count * es, total = bytes * n;
      const bool in_place = k % 2 == 0;
      std::vector<char> send(bytes), host_out(total), dev_out(total);
      FillTernaryInput(900 + k, rank, t, count, send.data());
      char what[120];
      std::snprintf(what, sizeof what, "quantized all-gather %s %d bits count %zu %s",
                    TypeName(t), bits, count, in_place ? "in place" : "out of place");
      CHECK_OK(sieveAllGatherQuantized(send.data(), host_out.data(), count, t, bits, comm,
                                       nullptr), "%s: host", what);
      char* d_recv = static_cast<char*>(mem.Alloc(total));
      char* d_send = in_place ? d_recv + rank * bytes : static_cast<char*>(mem.Alloc(bytes));
      mem.Upload(d_send, send.data(), bytes);
      CHECK_OK(sieveAllGatherQuantized(d_send, d_recv, count, t, bits, comm, mem.stream()),
               "%s: device", what);
      mem.Synchronize();
      mem.Download(dev_out.data(), d_recv, total);
      if (dev_out != host_out) return std::string(what) + ": the device result differs";
      ++k;
    }
  return "";
}

// Masked all-reduce over several dtypes/ops, odd sizes, random masks, in and
// out of place: the device path (pack/unpack kernels, only the packed vector
// staged) equals the host path bit for bit, and both equal the reference
// (the reduction where the mask is set, zero elsewhere, whatever recv held).
std::string MaskedChecks(sieveComm_t comm, int rank, int n, DeviceMemory& mem) {
  struct MaskedCase {
    sieveDataType_t dtype;
    sieveRedOp_t op;
    size_t count;
    int density_pct;
    bool in_place;
  };
  const MaskedCase cases[] = {
      {sieveFloat32, sieveSum, 30011, 30, false}, {sieveFloat64, sieveAvg, 1001, 60, true},
      {sieveInt32, sieveMax, 4099, 10, false},    {sieveFloat16, sieveSum, 2053, 45, true},
      {sieveBfloat16, sieveMin, 777, 50, false},  {sieveInt8, sieveProd, 513, 25, false},
      {sieveUint64, sieveSum, 65, 90, true},      {sieveFloat32, sieveAvg, 12345, 1, false},
  };
  uint64_t seed = 3000;
  for (const MaskedCase& c : cases) {
    ++seed;
    const size_t es = SizeOf(c.dtype), bytes = c.count * es;
    std::mt19937 mask_rng(static_cast<uint32_t>(seed));  // the same mask on every rank
    std::vector<uint8_t> keep(c.count);
    for (auto& k : keep) k = static_cast<int>(mask_rng() % 100) < c.density_pct;
    sieveMask_t mask = nullptr;
    CHECK_OK(sieveMaskRegister(comm, keep.data(), sieveMaskBytes, c.count, sieveMaskStrict, &mask),
             "masked %s: register", TypeName(c.dtype));
    std::vector<char> send(bytes), host_out(bytes), dev_out(bytes), expect(bytes), junk(bytes);
    FillInput(seed, rank, c.dtype, c.op, 0, c.count, send.data());
    ExpectedReduction(seed, n, c.dtype, c.op, 0, c.count, expect.data());
    for (size_t j = 0; j < c.count; ++j)
      if (!keep[j]) std::memset(expect.data() + j * es, 0, es);
    std::mt19937 junk_rng(static_cast<uint32_t>(seed + rank));
    for (auto& b : junk) b = static_cast<char>(junk_rng());
    char* d_send = static_cast<char*>(mem.Alloc(bytes));
    char* d_recv = c.in_place ? d_send : static_cast<char*>(mem.Alloc(bytes));
    mem.Upload(d_send, send.data(), bytes);
    if (!c.in_place) mem.Upload(d_recv, junk.data(), bytes);
    host_out = c.in_place ? send : junk;
    const void* host_in = c.in_place ? host_out.data() : send.data();
    CHECK_OK(sieveAllReduceMasked(host_in, host_out.data(), c.count, c.dtype, c.op, mask, comm,
                                  nullptr), "masked %s host", TypeName(c.dtype));
    CHECK_OK(sieveAllReduceMasked(d_send, d_recv, c.count, c.dtype, c.op, mask, comm,
                                  mem.stream()), "masked %s device", TypeName(c.dtype));
    mem.Synchronize();
    mem.Download(dev_out.data(), d_recv, bytes);
    CHECK_OK(sieveMaskDeregister(mask), "mask deregister");
    size_t first = 0;
    std::string what = std::string("masked ") + TypeName(c.dtype) + " " + OpName(c.op) + " count " +
                       std::to_string(c.count) + (c.in_place ? " in place" : "");
    size_t bad = CountMismatches(dev_out.data(), host_out.data(), c.count, es, &first);
    if (bad != 0)
      return what + ": " + std::to_string(bad) + " elements differ from the host path (first at " +
             std::to_string(first) + ")";
    bad = CountMismatches(host_out.data(), expect.data(), c.count, es, &first);
    if (bad != 0)
      return what + ": " + std::to_string(bad) + " elements differ from the reference (first at " +
             std::to_string(first) + ")";
  }
  return "";
}

// A ring shift in one group on device buffers: rank r sends its block to r+1.
std::string PointToPointChecks(sieveComm_t comm, int rank, int n, DeviceMemory& mem) {
  const size_t count = 30011;
  std::vector<int32_t> mine(count), got(count), expect(count);
  int from = (rank + n - 1) % n;
  FillInput(900, rank, sieveInt32, sieveSum, 0, count, mine.data());
  FillInput(900, from, sieveInt32, sieveSum, 0, count, expect.data());
  int32_t* d_send = static_cast<int32_t*>(mem.Alloc(count * 4));
  int32_t* d_recv = static_cast<int32_t*>(mem.Alloc(count * 4));
  mem.Upload(d_send, mine.data(), count * 4);
  CHECK_OK(sieveGroupStart(), "group start");
  CHECK_OK(sieveSend(d_send, count, sieveInt32, (rank + 1) % n, comm, mem.stream()), "send");
  CHECK_OK(sieveRecv(d_recv, count, sieveInt32, from, comm, mem.stream()), "recv");
  CHECK_OK(sieveGroupEnd(), "group end");
  mem.Synchronize();
  mem.Download(got.data(), d_recv, count * 4);
  size_t first = 0;
  if (CountMismatches(got.data(), expect.data(), count, 4, &first) != 0)
    return "device ring shift: wrong data from rank " + std::to_string(from) + " at " +
           std::to_string(first);
  return "";
}

// Mixed host/device buffers: a clear error, and the communicator still works.
std::string MixedChecks(sieveComm_t comm, DeviceMemory& mem) {
  std::vector<float> host(64, 1.0f);
  void* dev = mem.Alloc(64 * 4);
  sieveResult_t r = sieveAllReduce(host.data(), dev, 64, sieveFloat32, sieveSum, comm,
                                   mem.stream());
  std::string msg = sieveGetLastError(comm);
  if (r != sieveInvalidUsage || msg.find("sendbuff") == std::string::npos ||
      msg.find("host memory") == std::string::npos ||
      msg.find("device memory") == std::string::npos)
    return "mixed buffers: got result " + std::to_string(r) + " \"" + msg + "\"";
  return "";
}

}  // namespace

std::string RunDeviceChecks(sieveComm_t comm, int rank, int nranks, size_t chunk_bytes,
                            DeviceMemory& mem) {
  std::string e = MixedChecks(comm, mem);
  if (e.empty()) e = DenseChecks(comm, rank, nranks, chunk_bytes, mem);
  if (e.empty()) e = CompressedChecks(comm, rank, nranks, mem);
  if (e.empty()) e = TernaryDenseChecks(comm, rank, nranks, mem);
  if (e.empty()) e = QuantizedReduceScatterChecks(comm, rank, nranks, mem);
  if (e.empty()) e = QuantizedAllGatherChecks(comm, rank, nranks, mem);
  if (e.empty()) e = MaskedChecks(comm, rank, nranks, mem);
  if (e.empty()) e = TernaryMaskedFeedbackChecks(comm, rank, nranks, mem);
  if (e.empty()) e = PointToPointChecks(comm, rank, nranks, mem);
  if (e.empty()) e = SubnetChecks(comm, rank, nranks, mem);
  return e;
}

}  // namespace sieve_test
