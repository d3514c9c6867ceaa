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

namespace {

struct Options {
  size_t min_bytes = 32 << 20, max_bytes = 32 << 20, step_bytes = 0;
  double step_factor = 2;
  int iters = 20, warmup = 5, check = 1;
  std::string store, iface;
};

struct Result {
  double time_us = 0, algbw = 0, busbw = 0;
  long long wrong = -1;  // -1: not checked.
};

bool ParseSize(const char* text, size_t* bytes) {
  char* end = nullptr;
  unsigned long long v = strtoull(text, &end, 10);
  if (end == text || text[0] == '-') return false;
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift) ++end;
  *bytes = static_cast<size_t>(v) << shift;
  return *end == '\0';
}

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
  char* end;
  while (ok && (c = getopt_long(argc, argv, "b:e:f:i:n:w:c:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'b':
        ok = ParseSize(optarg, &o->min_bytes);
        break;
      case 'e':
        ok = ParseSize(optarg, &o->max_bytes);
        break;
      case 'i':
        ok = ParseSize(optarg, &o->step_bytes) && o->step_bytes > 0;
        break;
      case 'f':
        o->step_factor = strtod(optarg, &end);
        ok = !*end && o->step_factor > 1;
        break;
      case 'n':
        ok = (o->iters = atoi(optarg)) > 0;
        break;
      case 'w':
        ok = (o->warmup = atoi(optarg)) >= 0;
        break;
      case 'c':
        o->check = atoi(optarg);
        ok = o->check == 0 || o->check == 1;
        break;
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
        ok = false;
        break;
    }
  }
  if (!ok || optind < argc || o->store.empty() || o->min_bytes > o->max_bytes) {
    fprintf(stderr, "gloo-allreduce-perf: bad arguments (--store DIR is required)\n");
    PrintUsage();
    return 2;
  }
  return -1;
}

// Small integers from (rank, index, seed): sums over ranks are exact in float (as in
// mpi-allreduce-perf).
float Input(int rank, size_t i, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull ^ (static_cast<uint64_t>(rank) << 40) ^ i;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return static_cast<float>(static_cast<long>((x ^ (x >> 31)) % 9) - 4);
}

class Bench {
 public:
  Bench(const Options& o, std::shared_ptr<gloo::Context> ctx)
      : o_(o), ctx_(std::move(ctx)), rank_(ctx_->rank), nranks_(ctx_->size) {}

  // Runs the sweep; returns the number of wrong elements over all ranks and sizes.
  long long Sweep() {
    const size_t max_count = o_.max_bytes / sizeof(float) + 1;
    send_.resize(max_count);
    recv_.resize(max_count);
    if (rank_ == 0) PrintHeader();
    long long wrong = 0;
    uint64_t seed = 0;
    for (size_t bytes = o_.min_bytes; bytes <= o_.max_bytes;) {
      const size_t count = bytes / sizeof(float);
      Result out = Measure(count, false, ++seed);
      Result in = Measure(count, true, ++seed);
      wrong += (out.wrong > 0 ? out.wrong : 0) + (in.wrong > 0 ? in.wrong : 0);
      if (rank_ == 0) {
        printf("%12zu  %12zu  %8s  %6s  %6d", count * sizeof(float), count, "float", "sum", -1);
        PrintResult(out);
        PrintResult(in);
        printf("\n");
        fflush(stdout);
      }
      size_t next = o_.step_bytes
                        ? bytes + o_.step_bytes
                        : static_cast<size_t>(static_cast<double>(bytes) * o_.step_factor);
      bytes = next > bytes ? next : bytes + 1;
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

  Result Measure(size_t count, bool in_place, uint64_t seed) {
    Result res;
    float* src = in_place ? recv_.data() : send_.data();
    float* dst = recv_.data();
    Fill(src, count, 0);
    for (int i = 0; i < o_.warmup; ++i) AllReduce(src, dst, count);
    OverRanks<double>(0, &gloo::max<double>);  // Lines the ranks up before the clock starts.
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o_.iters; ++i) AllReduce(src, dst, count);
    std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
    res.time_us = OverRanks<double>(elapsed.count() / o_.iters, &gloo::max<double>);
    res.algbw = res.time_us > 0 ? count * sizeof(float) / res.time_us / 1e3 : 0;
    res.busbw = res.algbw * 2.0 * (nranks_ - 1) / nranks_;
    if (o_.check) {
      memset(dst, 0xff, count * sizeof(float));
      Fill(src, count, seed);
      AllReduce(src, dst, count);
      long long wrong = 0;
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int r = 0; r < nranks_; ++r) want += Input(r, i, seed);
        wrong += dst[i] != want;
      }
      res.wrong = OverRanks<long long>(wrong, &gloo::sum<long long>);
    }
    return res;
  }

  void Fill(float* buf, size_t count, uint64_t seed) const {
    for (size_t i = 0; i < count; ++i) buf[i] = Input(rank_, i, seed);
  }

  void PrintHeader() const {
    printf(
        "#  nranks %d  collective gloo::allreduce(RING)  type float  op sum  root 0  iters %d"
        "  warmup %d  check %d\n",
        nranks_, o_.iters, o_.warmup, o_.check);
    printf("#  size = bytes of each rank's output (= its input); time = max over ranks\n");
    printf("#%74s%31s\n", "out-of-place", "in-place");
    printf("#%11s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
    for (int i = 0; i < 2; ++i) printf("  %7s  %6s  %6s  %6s", "time", "algbw", "busbw", "#wrong");
    printf("\n#%11s  %12s%35s  %6s  %6s", "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)");
    printf("%17s  %6s  %6s\n", "(us)", "(GB/s)", "(GB/s)");
    fflush(stdout);
  }

  static void PrintResult(const Result& r) {
    printf(r.time_us < 1e4 ? "  %7.2f" : r.time_us < 1e5 ? "  %7.1f" : "  %7.0f", r.time_us);
    printf("  %6.2f  %6.2f", r.algbw, r.busbw);
    if (r.wrong < 0)
      printf("  %6s", "N/A");
    else
      printf("  %6lld", r.wrong);
  }

  const Options& o_;
  std::shared_ptr<gloo::Context> ctx_;
  int rank_, nranks_;
  uint32_t tag_ = 0;
  std::vector<float> send_, recv_;
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
    return Bench(o, ctx).Sweep() ? 1 : 0;
  } catch (const std::exception& e) {
    fprintf(stderr, "gloo-allreduce-perf: rank %d: %s\n", rank, e.what());
    return 3;
  }
}
