// gloo-allreduce-perf: Gloo's ring all-reduce (gloo::allreduce, Algorithm::RING, float sum,
// the algorithm PyTorch's gloo backend runs) over its TCP transport, with the size sweep
// and the columns of mpi-allreduce-perf, so the tables line up with sieve-perf's.
//
// One process per rank: RANK and WORLD_SIZE from the environment (torchrun-style, as
// sieve-testbed run sets them); ranks meet through a file-system store (--store DIR, shared
// by all ranks and empty at start); --iface (default SIEVE_SOCKET_IFNAME, else lo) is the
// interface Gloo's TCP pairs bind to.
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "gloo/allreduce.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/transport/tcp/device.h"
#include "peer_perf.h"

namespace {

struct Options {
  PeerSweep sweep = PeerSweepDefaults();
  std::string store, iface;
};

void PrintUsage() {
  printf(
      "Usage: RANK=r WORLD_SIZE=n gloo-allreduce-perf --store DIR [--iface IF] [-b 32M] [-e 32M]\n"
      "       [-f 2 | -i BYTES] [-n 20] [-w 5] [-c 1]   (Gloo ring all-reduce, float, sum)\n");
}

// Returns -1 to go on, else the exit code.
int ParseArgs(int argc, char** argv, Options* o) {
  static const option kLong[] = {{"store", required_argument, nullptr, 'S'},
                                 {"iface", required_argument, nullptr, 'I'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  const char* env_if = getenv("SIEVE_SOCKET_IFNAME");
  o->iface = env_if && *env_if ? env_if : "lo";
  if (!o->iface.empty() && o->iface[0] == '=') o->iface.erase(0, 1);
  bool ok = true;
  int c;
  while (ok && (c = getopt_long(argc, argv, "b:e:f:i:n:w:c:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'S':
        o->store = optarg;
        break;
      case 'I':
        o->iface = optarg;
        break;
      case 'h':
        PrintUsage();
        return 0;
      default:
        ok = PeerSweepOption(c, optarg, &o->sweep) == 1;
        break;
    }
  }
  if (!ok || optind < argc || o->store.empty() || o->sweep.min_bytes > o->sweep.max_bytes) {
    fprintf(stderr, "gloo-allreduce-perf: bad arguments (--store DIR is required)\n");
    PrintUsage();
    return 2;
  }
  return -1;
}

class Bench {
 public:
  Bench(const PeerSweep& o, std::shared_ptr<gloo::Context> ctx)
      : o_(o), ctx_(std::move(ctx)), rank_(ctx_->rank), nranks_(ctx_->size) {}

  // Runs the sweep; returns the number of wrong elements over all ranks and sizes.
  long long Sweep() {
    const size_t max_count = o_.max_bytes / sizeof(float) + 1;
    send_ = PeerBufferOf<float>(max_count * sizeof(float));
    recv_ = PeerBufferOf<float>(max_count * sizeof(float));
    if (rank_ == 0) PrintHeader();
    long long wrong = 0;
    uint64_t seed = 0;
    for (size_t bytes = o_.min_bytes; bytes <= o_.max_bytes;) {
      const size_t count = bytes / sizeof(float);
      PeerResult out = Measure(count, false, ++seed);
      PeerResult in = Measure(count, true, ++seed);
      wrong += (out.wrong > 0 ? out.wrong : 0) + (in.wrong > 0 ? in.wrong : 0);
      if (rank_ == 0) PeerPrintRow(count, &out, &in);
      bytes = PeerNextBytes(&o_, bytes);
    }
    if (rank_ == 0) printf("# Out of bounds values : %lld %s\n#\n", wrong, wrong ? "FAILED" : "OK");
    return wrong;
  }

 private:
  using ReduceFn = void (*)(void*, const void*, const void*, size_t);

  void AllReduce(float* in, float* out, size_t count) {
    gloo::AllreduceOptions opts(ctx_);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    if (in != out) opts.setInput(in, count);
    opts.setOutput(out, count);
    opts.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
    opts.setTag(tag_++);
    gloo::allreduce(opts);
  }

  template <typename T>
  T OverRanks(T v, ReduceFn fn) {
    gloo::AllreduceOptions opts(ctx_);
    opts.setOutput(&v, 1);
    opts.setReduceFunction(fn);
    opts.setTag(tag_++);
    gloo::allreduce(opts);
    return v;
  }

  PeerResult Measure(size_t count, bool in_place, uint64_t seed) {
    PeerResult res = {0, 0, 0, -1};
    float* src = in_place ? recv_.get() : send_.get();
    float* dst = recv_.get();
    PeerFill(src, count, rank_, 0);
    for (int i = 0; i < o_.warmup; ++i) AllReduce(src, dst, count);
    OverRanks<double>(0, &gloo::max<double>);  // Lines the ranks up before the clock starts.
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o_.iters; ++i) AllReduce(src, dst, count);
    std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
    res.time_us = OverRanks<double>(elapsed.count() / o_.iters, &gloo::max<double>);
    PeerSetBandwidth(&res, count, nranks_);
    if (o_.check) {
      memset(dst, 0xff, count * sizeof(float));
      PeerFill(src, count, rank_, seed);
      AllReduce(src, dst, count);
      long long wrong = PeerCountWrong(dst, count, nranks_, seed);
      res.wrong = OverRanks<long long>(wrong, &gloo::sum<long long>);
    }
    return res;
  }

  void PrintHeader() const {
    printf(
        "#  nranks %d  collective gloo::allreduce(RING)  type float  op sum  root 0  iters %d"
        "  warmup %d  check %d\n",
        nranks_, o_.iters, o_.warmup, o_.check);
    printf("#  size = bytes of each rank's output (= its input); time = max over ranks\n");
    PeerPrintColumns();
  }

  const PeerSweep& o_;
  std::shared_ptr<gloo::Context> ctx_;
  int rank_, nranks_;
  uint32_t tag_ = 0;
  PeerBuffer<float> send_, recv_;
};

int EnvInt(const char* name, int fallback) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  int rc = ParseArgs(argc, argv, &o);
  if (rc >= 0) return rc;
  const int rank = EnvInt("RANK", EnvInt("SIEVE_RANK", -1));
  const int size = EnvInt("WORLD_SIZE", EnvInt("SIEVE_NRANKS", -1));
  if (rank < 0 || size < 1 || rank >= size) {
    fprintf(stderr, "gloo-allreduce-perf: set RANK and WORLD_SIZE (0 <= RANK < WORLD_SIZE)\n");
    return 2;
  }
  try {
    gloo::transport::tcp::attr attr;
    attr.iface = o.iface;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(o.store);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
    // A 256 MiB all-reduce at 100 Mbit/s takes ~40 s; Gloo's default timeout is 30 s.
    ctx->setTimeout(std::chrono::seconds(EnvInt("GLOO_PERF_TIMEOUT_S", 900)));
    ctx->connectFullMesh(store, device);
    return Bench(o.sweep, ctx).Sweep() ? 1 : 0;
  } catch (const std::exception& e) {
    fprintf(stderr, "gloo-allreduce-perf: rank %d: %s\n", rank, e.what());
    return 3;
  }
}
