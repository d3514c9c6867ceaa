// The program model, decoder, runner and oracle of api_sequence.h. The oracle knows sieve.h's
// contract (which arguments are invalid, which must agree across ranks) and the references in
// tests/support (dense, masked, ternary, subnet results, computable on any one rank).
#include "fuzz/api_sequence.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "fuzz/fuzz_check.h"
#include "sieve.h"
#include "support/mask_reference.h"
#include "support/reference.h"
#include "support/subnet_quantized_reference.h"
#include "support/subnet_reference.h"
#include "support/ternary_reference.h"
#include "support/topk_reference.h"

namespace sieve_fuzz {

// ---- names ------------------------------------------------------------------

const char* KindName(Kind kind) {
  static const char* const kNames[] = {
      "AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "SendRecv", "Group",
      "MaskRegister", "Masked", "Ternary", "LayoutEqual", "LayoutRegister", "Subnet", "D2ft",
      "Deregister", "Split", "Query", "ReduceScatterQuantized", "AllGatherQuantized", "TopK"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(Kind::kNumKinds), "");
  return kNames[static_cast<int>(kind)];
}

const char* BadName(Bad bad) {
  static const char* const kNames[] = {
      "none", "count0", "count+1", "countHuge", "dtypeOther", "dtypeInvalid", "opOther",
      "opInvalid", "rootOther", "rootInvalid", "sendNull", "recvNull", "commNull", "inPlace",
      "overlap", "kindOther", "seedOther", "blockOther", "blockHuge", "paramsNull", "bitsOther",
      "policyOther", "handleNull", "outNull"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(Bad::kNumBad), "");
  return kNames[static_cast<int>(bad)];
}

namespace {

using sieve_test::TypeSize;

bool IsDense(Kind k) { return static_cast<int>(k) <= static_cast<int>(Kind::kSendRecv); }
bool UsesOp(Kind k) {
  return k == Kind::kAllReduce || k == Kind::kReduce || k == Kind::kReduceScatter ||
         k == Kind::kMasked || k == Kind::kTernary || k == Kind::kReduceScatterQuantized ||
         k == Kind::kTopK;
}
bool IsSubnet(Kind k) { return k == Kind::kSubnet || k == Kind::kD2ft; }
// The quantized calls' level count as the step's variant picks it (subnet kinds: 0 is dense).
int LevelsOf(const Step& s) {
  static const int kLevels[] = {1, 3, 7, 127};
  static const int kSubnetLevels[] = {0, 1, 3, 7};
  const int pick = (s.variant >> 2) & 3;
  if (IsSubnet(s.kind)) return kSubnetLevels[pick];
  if (s.kind == Kind::kTernary || s.kind == Kind::kReduceScatterQuantized) return kLevels[pick];
  return 0;
}
// Whether the step calls one of the quantized entry points that take `levels`.
bool TakesLevels(const Step& s) {
  return s.kind == Kind::kReduceScatterQuantized ||
         ((s.kind == Kind::kTernary || IsSubnet(s.kind)) && ((s.variant >> 2) & 3) != 0);
}
bool UsesRoot(Kind k) { return k == Kind::kBroadcast || k == Kind::kReduce; }
bool ValidDtype(int d) { return d >= 0 && d < 10; }
bool ValidOp(int op) { return op >= 0 && op < 5; }
size_t SafeTypeSize(int d) { return ValidDtype(d) ? TypeSize(static_cast<sieveDataType_t>(d)) : 1; }
// The datatypes the quantized calls take.
bool IsQuantizable(int d) { return d == sieveFloat32 || d == sieveFloat16 || d == sieveBfloat16; }

// ---- decoding ---------------------------------------------------------------------------------

constexpr size_t kMaxSteps = 10;
constexpr size_t kHugeCount = SIZE_MAX - 6;  // bytes overflow; so do count + 7 and count * n

size_t EffectiveCount(const Step& s, Bad b) {
  switch (b) {
    case Bad::kCountZero: return 0;
    case Bad::kCountPlusOne: return s.count + 1;
    case Bad::kCountHuge: return kHugeCount;
    default: return s.count;
  }
}

Step DecodeStep(sieve_fuzz::Reader& in, int nranks, bool member) {
  Step s;
  uint8_t k = in.Take<uint8_t>();
  s.kind = static_cast<Kind>(k % (member ? 6 : static_cast<int>(Kind::kNumKinds)));
  uint8_t c = in.Take<uint8_t>();
  s.count = (c & 0x80) ? 1 + (c & 0x7f) * 37u : c & 0x3f;  // 0..63, or up to ~4700
  uint8_t t = in.Take<uint8_t>();
  s.dtype = t % 10;
  s.op = (t / 10) % 5;
  s.in_place = (t / 50) & 1;
  uint8_t m = in.Take<uint8_t>();
  s.root = m % nranks;
  s.slot = (m >> 2) & 1;
  s.policy = (m >> 3) & 1;
  s.variant = m >> 4;
  s.seed = 1 + in.Take<uint8_t>();
  uint8_t blk = in.Take<uint8_t>();
  static const size_t kBlocks[] = {0, 1, 3, 7, 16, 64, 2048};
  if (s.kind == Kind::kTernary || s.kind == Kind::kReduceScatterQuantized ||
      (IsSubnet(s.kind) && TakesLevels(s)))
    s.block = kBlocks[blk % 7];
  if (s.kind == Kind::kLayoutEqual) s.block = 1 + blk % 9;
  if (s.kind == Kind::kLayoutRegister) s.block = 1 + blk % 6;
  uint8_t p = in.Take<uint8_t>();
  if ((p & 3) >= 2) {
    Bad b = static_cast<Bad>(in.Take<uint8_t>() % static_cast<int>(Bad::kNumBad));
    if ((p & 3) == 2) {
      s.bad[(p >> 2) % nranks] = b;
    } else {
      for (int r = 0; r < nranks; ++r) s.bad[r] = b;
    }
  }
  if (s.kind == Kind::kGroup)
    for (int i = 0; i < 1 + s.variant % 3; ++i) s.members.push_back(DecodeStep(in, nranks, true));
  return s;
}

}  // namespace

Program Decode(const uint8_t* data, size_t size) {
  sieve_fuzz::Reader in(data, size);
  Program p;
  uint8_t head = in.Take<uint8_t>();
  p.nranks = 2 + (head & 1);
  p.teardown = (head >> 1) % 3;
  p.destroy_in_group = (head >> 3) & 1;
  p.use_after_destroy = (head >> 4) & 1;
  while (in.left() > 0 && p.steps.size() < kMaxSteps) p.steps.push_back(DecodeStep(in, p.nranks, false));
  return p;
}

namespace {

void DescribeStep(const Step& s, int nranks, std::string* out, const char* indent) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "%s%s count=%zu dtype=%d op=%d root=%d in_place=%d seed=%llu slot=%d policy=%d "
                "block=%zu variant=%d bad=[",
                indent, KindName(s.kind), s.count, s.dtype, s.op, s.root, s.in_place,
                static_cast<unsigned long long>(s.seed), s.slot, s.policy, s.block, s.variant);
  *out += line;
  for (int r = 0; r < nranks; ++r) *out += std::string(r ? "," : "") + BadName(s.bad[r]);
  *out += "]\n";
  for (const Step& m : s.members) DescribeStep(m, nranks, out, "      ");
}

}  // namespace

std::string Describe(const Program& p) {
  std::string out = "program: " + std::to_string(p.nranks) + " ranks, teardown " +
                    std::to_string(p.teardown) + (p.destroy_in_group ? ", destroy in group" : "") +
                    (p.use_after_destroy ? ", use after destroy" : "") + "\n";
  for (size_t i = 0; i < p.steps.size(); ++i) {
    out += "  step " + std::to_string(i) + ": ";
    DescribeStep(p.steps[i], p.nranks, &out, "");
  }
  return out;
}

// ---- running -------------------------------------------------------------------------------

namespace {

// One rank's arguments for one call, after its perturbation.
struct Eff {
  Kind kind = Kind::kAllReduce;
  size_t count = 0;
  int dtype = 7, op = 0, root = 0, policy = 0, format = 0;
  bool in_place = false, overlap = false, send_null = false, recv_null = false,
       comm_null = false, params_null = false, handle_null = false, out_null = false,
       bits_other = false;
  uint64_t seed = 0, philox_seed = 0, philox_step = 0;
  size_t block = 0;
  bool takes_levels = false;  // a call with a `levels` argument
  int levels = 0;             // its value (subnet kinds: 0 is the dense call)
  int bits = 8;               // kAllGatherQuantized
  double fraction = 1.0;      // kTopK
  int color = 0, key = 0;
};

Eff Effective(const Step& s, int rank, int nranks) {
  Eff e;
  e.kind = s.kind;
  e.count = EffectiveCount(s, s.bad[rank]);
  e.dtype = s.dtype;
  e.op = s.op;
  e.root = s.root;
  e.in_place = s.in_place;
  e.seed = s.seed;
  e.philox_seed = s.seed * 7919;
  e.philox_step = static_cast<uint64_t>(s.variant);
  e.block = s.block;
  e.policy = s.policy;
  e.format = s.variant & 1;
  e.takes_levels = TakesLevels(s);
  e.levels = LevelsOf(s);
  e.bits = (s.variant & 4) ? 4 : 8;
  static const double kFractions[] = {0.001, 0.25, 0.5, 1.0};
  e.fraction = kFractions[(s.variant >> 2) & 3];
  if ((s.kind == Kind::kTernary || s.kind == Kind::kReduceScatterQuantized ||
       s.kind == Kind::kAllGatherQuantized || s.kind == Kind::kTopK) &&
      (s.variant & 2) == 0) {  // else: raw dtype/op, maybe invalid
    static const int kTypes[] = {sieveFloat32, sieveFloat16, sieveBfloat16};
    e.dtype = kTypes[s.dtype % 3];
    e.op = s.op % 2 ? sieveAvg : sieveSum;
  }
  if ((s.kind == Kind::kSubnet || s.kind == Kind::kD2ft) && (s.variant & 2) == 0) {
    static const int kTypes[] = {sieveFloat32, sieveFloat16, sieveBfloat16, sieveFloat64};
    e.dtype = kTypes[s.dtype % 4];
  }
  if (s.kind == Kind::kSplit) {
    switch (s.variant % 3) {
      case 0: e.color = 0; break;
      case 1: e.color = rank % 2; break;
      default: e.color = rank == 0 ? SIEVE_SPLIT_NOCOLOR : 3; break;
    }
    e.key = (s.variant & 4) ? nranks - rank : 0;
  }
  switch (s.bad[rank]) {
    case Bad::kDtypeOther: e.dtype = (e.dtype + 1) % 10; break;
    case Bad::kDtypeInvalid: e.dtype = (s.seed & 1) ? 10 : -1; e.format = 7; break;
    case Bad::kOpOther: e.op = (e.op + 1) % 5; break;
    case Bad::kOpInvalid: e.op = (s.seed & 1) ? 5 : -7; e.policy = 9; break;
    case Bad::kRootOther:  // and another level count or width: a mismatch
      e.root = (e.root + 1) % nranks;
      e.color = e.color == 0 ? 5 : 0;
      if (e.takes_levels) e.levels = e.levels == 127 ? 63 : e.levels + 2;
      e.bits = 12 - e.bits;
      e.fraction /= 2;
      break;
    case Bad::kRootInvalid:  // and a level count or width out of range
      e.root = (s.seed & 1) ? nranks : -1;
      e.color = -5;
      if (e.takes_levels) e.levels = (s.seed & 1) ? SIEVE_MAX_LEVELS + 1 : 0;
      e.bits = (s.seed & 1) ? 5 : 0;
      e.fraction = (s.seed & 1) ? 1.5 : 0.0;
      break;
    case Bad::kSendNull: e.send_null = true; break;
    case Bad::kRecvNull: e.recv_null = true; break;
    case Bad::kCommNull: e.comm_null = true; break;
    case Bad::kInPlace: e.in_place = !e.in_place; break;
    case Bad::kOverlap: e.overlap = s.kind != Kind::kSendRecv; e.in_place = false; break;
    case Bad::kKindOther:
      if (IsDense(s.kind) && s.kind != Kind::kSendRecv)
        e.kind = static_cast<Kind>((static_cast<int>(s.kind) + 1) % 5);
      break;
    case Bad::kSeedOther: e.philox_seed += 1; break;
    case Bad::kBlockOther: e.block = e.block == 7 ? 3 : 7; break;
    case Bad::kBlockHuge: e.block = SIZE_MAX - s.seed; break;
    case Bad::kParamsNull: e.params_null = true; break;
    case Bad::kBitsOther: e.bits_other = true; break;
    case Bad::kPolicyOther: e.policy ^= 1; break;
    case Bad::kHandleNull: e.handle_null = true; break;
    case Bad::kOutNull: e.out_null = true; break;
    default: break;
  }
  if (e.kind == Kind::kSendRecv) e.in_place = false;  // one buffer sent and received: a race
  return e;
}

struct CallRec {
  std::string name;
  int result = 0;
  std::string thread_msg, comm_msg;
  bool comm_checked = false;  // comm_msg read from a live communicator
};

// What one rank did in one call (or group member) and what it saw.
struct Member {
  Eff eff;
  std::vector<CallRec> calls;
  std::vector<char> send_before, send_after, recv_before, recv_after;
  bool has_send = false, has_recv = false;
  int64_t value = -1;           // queries; split: child rank
  int64_t value2 = -1;          // split: child size; subnet: 1 when it passed a mask
  std::vector<int> peers;       // SendRecv: send peer, recv peer
  // The buffers the call was given: they live until the judge ran (a group writes at GroupEnd).
  std::shared_ptr<std::vector<char>> storage;
  const char* send_ptr = nullptr;
  const char* recv_ptr = nullptr;
  size_t send_bytes = 0, recv_bytes = 0;
  void Snapshot() {
    if (send_ptr) send_after.assign(send_ptr, send_ptr + send_bytes);
    if (recv_ptr) recv_after.assign(recv_ptr, recv_ptr + recv_bytes);
  }
  // Lays out send and receive (in place, overlapping by one element, or apart) in one block.
  void Buffers(size_t sbytes, size_t rbytes, size_t es, bool in_place, bool overlap,
               size_t send_in_recv, size_t recv_in_send, char** send, char** recv) {
    if (in_place) {
      storage = std::make_shared<std::vector<char>>(std::max(sbytes, rbytes), '\x5a');
      char* base = storage->data();
      *send = base + send_in_recv;
      *recv = base + recv_in_send;
    } else if (overlap) {
      storage = std::make_shared<std::vector<char>>(std::max(sbytes, rbytes) + es, '\x5a');
      *send = storage->data();
      *recv = storage->data() + es;
    } else {
      storage = std::make_shared<std::vector<char>>(sbytes + rbytes, '\x5a');
      *send = storage->data();
      *recv = storage->data() + sbytes;
    }
    send_ptr = *send;
    recv_ptr = *recv;
    send_bytes = sbytes;
    recv_bytes = rbytes;
    has_send = has_recv = true;
  }
  bool ok() const {
    return std::all_of(calls.begin(), calls.end(), [](const CallRec& c) { return c.result == 0; });
  }
};

struct RankRec {
  std::vector<Member> members;  // one, or a group's
  bool mask_live[kSlots] = {}, layout_live[kSlots] = {};  // when the step started
  CallRec group_end;
  bool in_group = false;
  bool healthy = true;  // the communicator's async error is success after the step
  // split: the child's all-reduce
  Member child;
  bool has_child = false;
};

// A mask or layout slot of one rank.
struct MaskSlot {
  sieveMask_t handle = nullptr, stale = nullptr;
  size_t count = 0;
  std::vector<uint8_t> agreed;  // one byte per element
};
struct LayoutSlot {
  sieveLayout_t handle = nullptr, stale = nullptr;
  sieve_test::TestLayout layout;
};

struct RankState {
  sieveComm_t comm = nullptr;
  MaskSlot masks[kSlots];
  LayoutSlot layouts[kSlots];
};

class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  // The last thread to arrive runs `last` before anyone leaves.
  void Wait(const std::function<void()>& last) {
    std::unique_lock<std::mutex> lock(mu_);
    uint64_t gen = gen_;
    if (++arrived_ == n_) {
      last();
      arrived_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return gen_ != gen; });
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_, arrived_ = 0;
  uint64_t gen_ = 0;
};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// How long thread `tid` of this process has waited, runnable, for a CPU (ms; the second field of
// its schedstat); 0 where the kernel does not say.
int64_t RunQueueWaitMs(int tid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  unsigned long long run_ns = 0, wait_ns = 0;
  int fields = std::fscanf(f, "%llu %llu", &run_ns, &wait_ns);
  std::fclose(f);
  return fields == 2 ? static_cast<int64_t>(wait_ns / 1000000) : 0;
}

constexpr size_t kInitStep = SIZE_MAX;

struct Ctx {
  const Program* program = nullptr;
  int n = 2;
  sieveUniqueId id{};
  Barrier* barrier = nullptr;
  std::vector<RankRec> recs;  // this step's, per rank
  std::vector<std::string> findings;
  bool go = true;
  bool initialized = false;  // init succeeded on every rank
  size_t step = 0;
  // The watchdog: per rank, when its current call started (0: none), which, and the
  // watchdog's lost time then. Lost time: per 20 ms tick, the longest that the watchdog's sleep
  // overran or that a rank's thread waited for a CPU while runnable, i.e. how long this program
  // was starved of CPU (a loaded machine); it extends the limit, so a rank that was not run is
  // not taken for a rank that hangs.
  std::atomic<int64_t> since[kMaxRanks];
  std::atomic<int64_t> lost_at_start[kMaxRanks];
  std::atomic<const char*> what[kMaxRanks];
  std::atomic<int> tid[kMaxRanks];  // each rank's thread (0 until it starts)
  std::atomic<int64_t> lost_ms{0};
  // Every rank's view of the slots' agreed contents (written at the barrier).
  std::vector<uint8_t> mask_bits[kMaxRanks][kSlots];
};

// Runs one API call under the watchdog and records its result and messages.
template <typename F>
CallRec Call(Ctx& ctx, int rank, const char* name, sieveComm_t comm, F&& f) {
  ctx.what[rank].store(name);
  ctx.lost_at_start[rank].store(ctx.lost_ms.load());
  ctx.since[rank].store(NowMs());
  int result = static_cast<int>(f());
  ctx.since[rank].store(0);
  CallRec c;
  c.name = name;
  c.result = result;
  if (result != sieveSuccess && result != sieveInProgress) {
    c.thread_msg = sieveGetLastError(nullptr);
    if (comm != nullptr) {
      c.comm_msg = sieveGetLastError(comm);
      c.comm_checked = true;
    }
  }
  return c;
}

// ---- buffers -------------------------------------------------------------------------------

constexpr size_t kAllocCap = 1 << 16;  // elements; a huge count gets the step's own count

std::vector<char> Sentinel(size_t bytes) { return std::vector<char>(bytes, '\x5a'); }

std::vector<char> Input(uint64_t seed, int rank, int dtype, int op, size_t offset, size_t count) {
  std::vector<char> v(count * SafeTypeSize(dtype));
  if (ValidDtype(dtype) && count > 0)
    sieve_test::FillInput(seed, rank, static_cast<sieveDataType_t>(dtype),
                          static_cast<sieveRedOp_t>(ValidOp(op) ? op : 0), offset, count, v.data());
  return v;
}

size_t AllocCount(const Eff& e, size_t step_count) {
  return e.count > kAllocCap ? std::min(step_count, kAllocCap) : e.count;
}

// ---- dense collectives (single or in a group) ----------------------------------------------

// Issues one dense call on this rank (inside a group when the caller opened one).
Member RunDense(Ctx& ctx, int rank, const Step& s, sieveComm_t comm) {
  const int n = ctx.n;
  Member m;
  m.eff = Effective(s, rank, n);
  const Eff& e = m.eff;
  sieveComm_t c = e.comm_null ? nullptr : comm;
  const size_t es = SafeTypeSize(e.dtype), cnt = AllocCount(e, s.count);
  // Enum values that may be invalid are made at the call, never stored (UBSan checks loads).
  auto dt = [&e] { return static_cast<sieveDataType_t>(e.dtype); };
  auto op = [&e] { return static_cast<sieveRedOp_t>(e.op); };
  // Element blocks of the send and receive sides.
  size_t send_blocks = 1, recv_blocks = 1;
  if (e.kind == Kind::kAllGather) recv_blocks = n;
  if (e.kind == Kind::kReduceScatter) send_blocks = n;
  const int in_op = UsesOp(e.kind) ? e.op : 0;
  char* send = nullptr;
  char* recv = nullptr;
  const size_t send_bytes = cnt * send_blocks * es, recv_bytes = cnt * recv_blocks * es;
  // In place: AllGather's send is the rank's slice of recv, ReduceScatter's recv of send.
  m.Buffers(send_bytes, recv_bytes, es, e.in_place, e.overlap,
            e.kind == Kind::kAllGather ? rank * cnt * es : 0,
            e.kind == Kind::kReduceScatter ? rank * cnt * es : 0, &send, &recv);
  std::vector<char> in = Input(e.seed, rank, e.dtype, in_op, 0, cnt * send_blocks);
  std::copy(in.begin(), in.end(), send);
  m.send_before = in;
  m.recv_before.assign(recv, recv + recv_bytes);
  const void* sp = e.send_null ? nullptr : send;
  void* rp = e.recv_null ? nullptr : recv;
  switch (e.kind) {
    case Kind::kAllReduce:
      m.calls.push_back(Call(ctx, rank, "sieveAllReduce", c, [&] {
        return sieveAllReduce(sp, rp, e.count, dt(), op(), c, nullptr);
      }));
      break;
    case Kind::kBroadcast:
      m.calls.push_back(Call(ctx, rank, "sieveBroadcast", c, [&] {
        return sieveBroadcast(sp, rp, e.count, dt(), e.root, c, nullptr);
      }));
      break;
    case Kind::kReduce:
      m.calls.push_back(Call(ctx, rank, "sieveReduce", c, [&] {
        return sieveReduce(sp, rp, e.count, dt(), op(), e.root, c, nullptr);
      }));
      break;
    case Kind::kAllGather:
      m.calls.push_back(Call(ctx, rank, "sieveAllGather", c, [&] {
        return sieveAllGather(sp, rp, e.count, dt(), c, nullptr);
      }));
      break;
    case Kind::kReduceScatter:
      m.calls.push_back(Call(ctx, rank, "sieveReduceScatter", c, [&] {
        return sieveReduceScatter(sp, rp, e.count, dt(), op(), c, nullptr);
      }));
      break;
    case Kind::kSendRecv: {
      // A ring: send to the next rank (perturbed: another, or none), receive from the previous.
      int next = (rank + 1) % n, prev = (rank + n - 1) % n;
      if (s.bad[rank] == Bad::kRootOther) next = (rank + 2) % n;
      if (s.bad[rank] == Bad::kRootInvalid) next = e.root;
      m.peers = {next, prev};
      // Outside a group the blocking pair could deadlock; inside one this group nests.
      sieveGroupStart();
      m.calls.push_back(Call(ctx, rank, "sieveSend", c, [&] {
        return sieveSend(sp, e.count, dt(), next, c, nullptr);
      }));
      m.calls.push_back(Call(ctx, rank, "sieveRecv", c, [&] {
        return sieveRecv(rp, e.count, dt(), prev, c, nullptr);
      }));
      m.calls.push_back(Call(ctx, rank, "sieveGroupEnd", c, [&] { return sieveGroupEnd(); }));
      break;
    }
    default:
      break;
  }
  m.Snapshot();
  return m;
}

// ---- masks, ternary, layouts ---------------------------------------------------------------

std::vector<uint8_t> MaskOf(const Step& s, const Eff& e, size_t count) {
  std::vector<uint8_t> bytes = sieve_test::RandomMask(s.seed, count, 0.5);
  if (e.bits_other && count > 0) bytes[s.seed % count] ^= 1;
  return bytes;
}

sieve_test::TestLayout LayoutOf(const Step& s, const Eff& e, int rank, int nranks) {
  sieve_test::TestLayout layout;
  if (s.kind == Kind::kLayoutEqual) {
    size_t nsub = s.block;
    if (nsub == 0 || nsub > e.count) return layout;
    size_t len = e.count / nsub;
    for (size_t k = 0; k < nsub; ++k) {
      sieve_test::TestSegment seg;
      seg.offset = k * len;
      seg.length = k + 1 == nsub ? e.count - k * len : len;
      for (int r = 0; r < nranks; ++r) seg.holders.push_back(r);
      layout.push_back(seg);
    }
    return layout;
  }
  std::mt19937_64 rng(s.seed);
  layout = sieve_test::RandomLayout(rng, nranks, static_cast<int>(s.block), 40);
  if (e.bits_other) layout[0].holders = {rank};                        // differs across ranks
  if (s.bad[rank] == Bad::kRootInvalid) layout[0].holders = {nranks};  // not a rank
  return layout;
}

Member RunMaskRegister(Ctx& ctx, int rank, const Step& s, RankState& st) {
  Member m;
  m.eff = Effective(s, rank, ctx.n);
  const Eff& e = m.eff;
  MaskSlot& slot = st.masks[s.slot];
  if (slot.handle != nullptr) {  // the slot is refilled: free its mask first (local)
    sieveMask_t h = slot.handle;
    m.calls.push_back(Call(ctx, rank, "sieveMaskDeregister", nullptr,
                           [&] { return sieveMaskDeregister(h); }));
    slot.stale = h;
    slot.handle = nullptr;
  }
  std::vector<uint8_t> bytes = MaskOf(s, e, AllocCount(e, s.count));
  std::vector<uint8_t> bits = sieve_test::ToBitmap(bytes);
  const void* p = e.send_null ? nullptr : (e.format == 0 ? bits.data() : bytes.data());
  sieveMask_t handle = nullptr;
  sieveComm_t c = e.comm_null ? nullptr : st.comm;
  m.calls.push_back(Call(ctx, rank, "sieveMaskRegister", c, [&] {
    return sieveMaskRegister(c, p, static_cast<sieveMaskFormat_t>(e.format), e.count,
                             static_cast<sieveMaskPolicy_t>(e.policy),
                             e.out_null ? nullptr : &handle);
  }));
  if (m.calls.back().result == sieveSuccess) {
    slot.handle = handle;
    slot.count = e.count;
    size_t nnz = 0;
    sieveMaskNnz(handle, &nnz);
    m.value = static_cast<int64_t>(nnz);
  }
  return m;
}

Member RunMasked(Ctx& ctx, int rank, const Step& s, RankState& st) {
  Member m;
  m.eff = Effective(s, rank, ctx.n);
  Eff& e = m.eff;
  const MaskSlot& slot = st.masks[s.slot];
  // The registered count, perturbed as the step says.
  Step t = s;
  t.count = slot.handle ? slot.count : s.count;
  e.count = EffectiveCount(t, s.bad[rank]);
  const size_t es = SafeTypeSize(e.dtype), cnt = AllocCount(e, t.count);
  char* send = nullptr;
  char* recv = nullptr;
  m.Buffers(cnt * es, cnt * es, es, e.in_place, e.overlap, 0, 0, &send, &recv);
  std::vector<char> in = Input(e.seed, rank, e.dtype, e.op, 0, cnt);
  std::copy(in.begin(), in.end(), send);
  m.send_before = in;
  m.recv_before.assign(recv, recv + cnt * es);
  sieveComm_t c = e.comm_null ? nullptr : st.comm;
  sieveMask_t h = e.handle_null ? nullptr : slot.handle;
  m.calls.push_back(Call(ctx, rank, "sieveAllReduceMasked", c, [&] {
    return sieveAllReduceMasked(e.send_null ? nullptr : send, e.recv_null ? nullptr : recv,
                                e.count, static_cast<sieveDataType_t>(e.dtype),
                                static_cast<sieveRedOp_t>(e.op), h, c, nullptr);
  }));
  m.Snapshot();
  return m;
}

Member RunTernary(Ctx& ctx, int rank, const Step& s, RankState& st) {
  Member m;
  m.eff = Effective(s, rank, ctx.n);
  Eff& e = m.eff;
  const MaskSlot& slot = st.masks[s.slot];
  const bool masked = (s.variant & 1) && slot.handle != nullptr;
  Step t = s;
  if (masked) t.count = slot.count;
  e.count = EffectiveCount(t, s.bad[rank]);
  const size_t es = SafeTypeSize(e.dtype), cnt = AllocCount(e, t.count);
  char* send = nullptr;
  char* recv = nullptr;
  m.Buffers(cnt * es, cnt * es, es, e.in_place, e.overlap, 0, 0, &send, &recv);
  std::vector<char> in(cnt * es);
  if (IsQuantizable(e.dtype))
    sieve_test::FillTernaryInput(e.seed, rank, static_cast<sieveDataType_t>(e.dtype), cnt,
                                 in.data());
  std::copy(in.begin(), in.end(), send);
  m.send_before = in;
  m.recv_before.assign(recv, recv + cnt * es);
  sieveTernaryParams_t params = sieve_test::TernaryParams(
      e.philox_seed, e.philox_step, e.block,
      masked && !e.handle_null ? slot.handle : nullptr, 0);
  m.value = masked && !e.handle_null;  // whether the call was masked
  sieveComm_t c = e.comm_null ? nullptr : st.comm;
  if (e.takes_levels) {
    m.calls.push_back(Call(ctx, rank, "sieveAllReduceQuantized", c, [&] {
      return sieveAllReduceQuantized(e.send_null ? nullptr : send, e.recv_null ? nullptr : recv,
                                     e.count, static_cast<sieveDataType_t>(e.dtype),
                                     static_cast<sieveRedOp_t>(e.op), e.levels,
                                     e.params_null ? nullptr : &params, c, nullptr);
    }));
  } else {
    m.calls.push_back(Call(ctx, rank, "sieveAllReduceTernary", c, [&] {
      return sieveAllReduceTernary(e.send_null ? nullptr : send, e.recv_null ? nullptr : recv,
                                   e.count, static_cast<sieveDataType_t>(e.dtype),
                                   static_cast<sieveRedOp_t>(e.op),
                                   e.params_null ? nullptr : &params, c, nullptr);
    }));
  }
  m.Snapshot();
  return m;
}

// The buffers of a call on FillTernaryInput data: laid out as Member::Buffers says, sendbuff
// filled (float datatypes), both recorded before the call.
void FillQuantizedBuffers(Member& m, int rank, size_t send_elems, size_t recv_elems,
                          size_t send_in_recv, size_t recv_in_send, char** send, char** recv) {
  const Eff& e = m.eff;
  const size_t es = SafeTypeSize(e.dtype);
  m.Buffers(send_elems * es, recv_elems * es, es, e.in_place, e.overlap, send_in_recv * es,
            recv_in_send * es, send, recv);
  std::vector<char> in(send_elems * es);
  if (IsQuantizable(e.dtype))
    sieve_test::FillTernaryInput(e.seed, rank, static_cast<sieveDataType_t>(e.dtype), send_elems,
                                 in.data());
  std::copy(in.begin(), in.end(), *send);
  m.send_before = in;
  m.recv_before.assign(*recv, *recv + recv_elems * es);
}

// sieveReduceScatterQuantized (unmasked): sendbuff holds nranks blocks of the count; in place,
// recvbuff is this rank's block of it.
Member RunReduceScatterQuantized(Ctx& ctx, int rank, const Step& s, RankState& st) {
  const int n = ctx.n;
  Member m;
  m.eff = Effective(s, rank, n);
  const Eff& e = m.eff;
  const size_t cnt = AllocCount(e, s.count);
  char* send = nullptr;
  char* recv = nullptr;
  FillQuantizedBuffers(m, rank, cnt * n, cnt, 0, rank * cnt, &send, &recv);
  const sieveTernaryParams_t params =
      sieve_test::TernaryParams(e.philox_seed, e.philox_step, e.block, nullptr, 0);
  sieveComm_t c = e.comm_null ? nullptr : st.comm;
  m.calls.push_back(Call(ctx, rank, "sieveReduceScatterQuantized", c, [&] {
    return sieveReduceScatterQuantized(e.send_null ? nullptr : send, e.recv_null ? nullptr : recv,
                                       e.count, static_cast<sieveDataType_t>(e.dtype),
                                       static_cast<sieveRedOp_t>(e.op), e.levels,
                                       e.params_null ? nullptr : &params, c, nullptr);
  }));
  m.Snapshot();
  return m;
}

// sieveAllGatherQuantized: in place, sendbuff is this rank's block of recvbuff.
Member RunAllGatherQuantized(Ctx& ctx, int rank, const Step& s, RankState& st) {
  const int n = ctx.n;
  Member m;
  m.eff = Effective(s, rank, n);
  const Eff& e = m.eff;
  const size_t cnt = AllocCount(e, s.count);
  char* send = nullptr;
  char* recv = nullptr;
  FillQuantizedBuffers(m, rank, cnt, cnt * n, rank * cnt, 0, &send, &recv);
  sieveComm_t c = e.comm_null ? nullptr : st.comm;
  m.calls.push_back(Call(ctx, rank, "sieveAllGatherQuantized", c, [&] {
    return sieveAllGatherQuantized(e.send_null ? nullptr : send, e.recv_null ? nullptr : recv,
                                   e.count, static_cast<sieveDataType_t>(e.dtype), e.bits, c,
                                   nullptr);
  }));
  m.Snapshot();
  return m;
}

// sieveAllReduceTopK without error feedback (a residual keyed by a buffer address could
// outlive the harness's buffer and meet a new one at the same address).
Member RunTopK(Ctx& ctx, int rank, const Step& s, RankState& st) {
  Member m;
  m.eff = Effective(s, rank, ctx.n);
  const Eff& e = m.eff;
  const size_t cnt = AllocCount(e, s.count);
  char* send = nullptr;
  char* recv = nullptr;
  FillQuantizedBuffers(m, rank, cnt, cnt, 0, 0, &send, &recv);
  sieveComm_t c = e.comm_null ? nullptr : st.comm;
  m.calls.push_back(Call(ctx, rank, "sieveAllReduceTopK", c, [&] {
    return sieveAllReduceTopK(e.send_null ? nullptr : send, e.recv_null ? nullptr : recv,
                              e.count, static_cast<sieveDataType_t>(e.dtype),
                              static_cast<sieveRedOp_t>(e.op), e.fraction, 0, c, nullptr);
  }));
  m.Snapshot();
  return m;
}

Member RunLayoutRegister(Ctx& ctx, int rank, const Step& s, RankState& st) {
  Member m;
  m.eff = Effective(s, rank, ctx.n);
  const Eff& e = m.eff;
  LayoutSlot& slot = st.layouts[s.slot];
  if (slot.handle != nullptr) {
    sieveLayout_t h = slot.handle;
    m.calls.push_back(Call(ctx, rank, "sieveLayoutDeregister", nullptr,
                           [&] { return sieveLayoutDeregister(h); }));
    slot.stale = h;
    slot.handle = nullptr;
  }
  sieve_test::TestLayout layout = LayoutOf(s, e, rank, ctx.n);
  sieveLayout_t handle = nullptr;
  sieveComm_t c = e.comm_null ? nullptr : st.comm;
  if (s.kind == Kind::kLayoutEqual) {
    int nsub = static_cast<int>(s.block);
    if (s.bad[rank] == Bad::kOpInvalid) nsub = -1;
    m.calls.push_back(Call(ctx, rank, "sieveLayoutEqualSubnets", c, [&] {
      return sieveLayoutEqualSubnets(c, e.count, nsub, e.out_null ? nullptr : &handle);
    }));
  } else {
    std::vector<sieveSegment_t> segs = sieve_test::ToApi(layout);
    Step t = s;
    t.count = sieve_test::LayoutCount(layout);
    size_t count = EffectiveCount(t, s.bad[rank]);  // else than the layout's: not a partition
    m.eff.count = count;
    m.calls.push_back(Call(ctx, rank, "sieveLayoutRegister", c, [&] {
      return sieveLayoutRegister(c, count, e.send_null ? nullptr : segs.data(),
                                 static_cast<int>(segs.size()), e.out_null ? nullptr : &handle);
    }));
  }
  if (m.calls.back().result == sieveSuccess) {
    slot.handle = handle;
    slot.layout = layout;
    int nseg = -1;
    sieveLayoutNumSegments(handle, &nseg);
    m.value = nseg;
  }
  return m;
}

// Whether a subnet step passes a mask (params->mask): a quantized call with policy 1,
// params given (the D2FT call's params are always given), a mask registered in the slot.
int64_t SubnetMasked(Kind kind, const Eff& e, bool mask_live) {
  return e.takes_levels && e.policy == 1 && mask_live && !(kind == Kind::kSubnet && e.params_null);
}

Member RunSubnet(Ctx& ctx, int rank, const Step& s, RankState& st) {
  Member m;
  m.eff = Effective(s, rank, ctx.n);
  Eff& e = m.eff;
  const LayoutSlot& slot = st.layouts[s.slot];
  Step t = s;
  if (slot.handle) t.count = sieve_test::LayoutCount(slot.layout);
  e.count = EffectiveCount(t, s.bad[rank]);
  const size_t es = SafeTypeSize(e.dtype), cnt = AllocCount(e, t.count);
  char* send = nullptr;
  char* recv = nullptr;
  m.Buffers(cnt * es, cnt * es, es, e.in_place, e.overlap, 0, 0, &send, &recv);
  std::vector<char> in = Input(e.seed, rank, e.dtype, sieveSum, 0, cnt);
  if (e.takes_levels && IsQuantizable(e.dtype))  // the quantized reference's inputs
    sieve_test::FillTernaryInput(e.seed, rank, static_cast<sieveDataType_t>(e.dtype), cnt,
                                 in.data());
  std::copy(in.begin(), in.end(), send);
  m.send_before = in;
  m.recv_before.assign(recv, recv + cnt * es);
  sieveComm_t c = e.comm_null ? nullptr : st.comm;
  sieveLayout_t h = e.handle_null ? nullptr : slot.handle;
  // The quantized calls with policy 1 pass the mask of the same slot, when one is
  // registered (for its own count: a count that differs from the layout's is misuse).
  const sieveMask_t mask = st.masks[s.slot].handle;
  m.value2 = SubnetMasked(s.kind, e, mask != nullptr);
  const sieveTernaryParams_t params = sieve_test::TernaryParams(
      e.philox_seed, e.philox_step, e.block, m.value2 == 1 ? mask : nullptr, 0);
  if (s.kind == Kind::kSubnet && e.takes_levels) {
    m.calls.push_back(Call(ctx, rank, "sieveAllReduceSubnetQuantized", c, [&] {
      return sieveAllReduceSubnetQuantized(
          e.send_null ? nullptr : send, e.recv_null ? nullptr : recv, e.count,
          static_cast<sieveDataType_t>(e.dtype), h, e.levels, e.params_null ? nullptr : &params,
          c, nullptr);
    }));
  } else if (s.kind == Kind::kSubnet) {
    m.calls.push_back(Call(ctx, rank, "sieveAllReduceSubnet", c, [&] {
      return sieveAllReduceSubnet(e.send_null ? nullptr : send, e.recv_null ? nullptr : recv,
                                  e.count, static_cast<sieveDataType_t>(e.dtype), h, c, nullptr);
    }));
  } else {
    // Touched bitmaps from the seed (every rank knows every row); bitsOther: a segment this
    // rank does not hold.
    std::mt19937_64 rng(s.seed);
    sieve_test::Touched touched =
        sieve_test::RandomTouched(rng, slot.layout, ctx.n, 0.5);
    if (e.bits_other) {
      for (size_t k = 0; k < slot.layout.size(); ++k) {
        const auto& hs = slot.layout[k].holders;
        if (!std::binary_search(hs.begin(), hs.end(), rank)) {
          touched[rank][k] = 1;
          m.value = static_cast<int64_t>(k);
          break;
        }
      }
    }
    std::vector<unsigned char> row = sieve_test::BitmapRow(touched, rank);
    std::vector<unsigned char> table;
    const bool with_schedule = s.variant & 1;
    if (with_schedule) {
      sieve_test::Touched clean = touched;
      if (e.bits_other && m.value >= 0) clean[rank][static_cast<size_t>(m.value)] = 0;
      table = sieve_test::ScheduleTable(clean);
    }
    if (row.empty()) row.push_back(0);
    if (e.takes_levels) {
      m.calls.push_back(Call(ctx, rank, "sieveAllReduceD2ftQuantized", c, [&] {
        return sieveAllReduceD2ftQuantized(
            e.send_null ? nullptr : send, e.recv_null ? nullptr : recv, e.count,
            static_cast<sieveDataType_t>(e.dtype), h, e.params_null ? nullptr : row.data(),
            with_schedule ? table.data() : nullptr, e.levels, &params, c, nullptr);
      }));
      m.Snapshot();
      return m;
    }
    m.calls.push_back(Call(ctx, rank, "sieveAllReduceD2ft", c, [&] {
      return sieveAllReduceD2ft(e.send_null ? nullptr : send, e.recv_null ? nullptr : recv,
                                e.count, static_cast<sieveDataType_t>(e.dtype), h,
                                e.params_null ? nullptr : row.data(),
                                with_schedule ? table.data() : nullptr, c, nullptr);
    }));
  }
  m.Snapshot();
  return m;
}

Member RunDeregister(Ctx& ctx, int rank, const Step& s, RankState& st) {
  Member m;
  m.eff = Effective(s, rank, ctx.n);
  if ((s.variant & 1) == 0) {
    MaskSlot& slot = st.masks[s.slot];
    sieveMask_t h = m.eff.handle_null ? nullptr : slot.handle ? slot.handle : slot.stale;
    m.value = h != nullptr && h == slot.handle;  // expected to succeed
    m.calls.push_back(Call(ctx, rank, "sieveMaskDeregister", nullptr,
                           [&] { return sieveMaskDeregister(h); }));
    if (m.value == 1) {
      slot.stale = slot.handle;
      slot.handle = nullptr;
    }
  } else {
    LayoutSlot& slot = st.layouts[s.slot];
    sieveLayout_t h = m.eff.handle_null ? nullptr : slot.handle ? slot.handle : slot.stale;
    m.value = h != nullptr && h == slot.handle;
    m.calls.push_back(Call(ctx, rank, "sieveLayoutDeregister", nullptr,
                           [&] { return sieveLayoutDeregister(h); }));
    if (m.value == 1) {
      slot.stale = slot.handle;
      slot.handle = nullptr;
    }
  }
  return m;
}

Member RunQuery(Ctx& ctx, int rank, const Step& s, RankState& st) {
  Member m;
  m.eff = Effective(s, rank, ctx.n);
  const Eff& e = m.eff;
  sieveComm_t c = e.comm_null ? nullptr : st.comm;
  int iv = -1;
  size_t sv = 0;
  sieveCounters_t counters;
  sieveResult_t async = sieveSuccess;
  switch (s.variant % 6) {
    case 0:
      m.calls.push_back(Call(ctx, rank, "sieveCommCount", c,
                             [&] { return sieveCommCount(c, e.out_null ? nullptr : &iv); }));
      m.value = iv;
      break;
    case 1:
      m.calls.push_back(Call(ctx, rank, "sieveCommUserRank", c,
                             [&] { return sieveCommUserRank(c, e.out_null ? nullptr : &iv); }));
      m.value = iv;
      break;
    case 2:
      m.calls.push_back(Call(ctx, rank, "sieveCommGetCounters", c, [&] {
        return sieveCommGetCounters(c, e.out_null ? nullptr : &counters);
      }));
      break;
    case 3:
      m.calls.push_back(Call(ctx, rank, "sieveCommGetAsyncError", c, [&] {
        return sieveCommGetAsyncError(c, e.out_null ? nullptr : &async);
      }));
      m.value = async;
      break;
    case 4: {
      sieveMask_t h = e.handle_null ? nullptr : st.masks[s.slot].handle;
      m.calls.push_back(Call(ctx, rank, "sieveMaskNnz", nullptr,
                             [&] { return sieveMaskNnz(h, e.out_null ? nullptr : &sv); }));
      m.value = static_cast<int64_t>(sv);
      break;
    }
    default: {
      sieveLayout_t h = e.handle_null ? nullptr : st.layouts[s.slot].handle;
      m.calls.push_back(Call(ctx, rank, "sieveLayoutNumSegments", nullptr, [&] {
        return sieveLayoutNumSegments(h, e.out_null ? nullptr : &iv);
      }));
      m.value = iv;
      break;
    }
  }
  return m;
}

// Split, then an all-reduce on the child and its destruction (all inside the step).
void RunSplit(Ctx& ctx, int rank, const Step& s, RankState& st, RankRec* rec) {
  Member m;
  m.eff = Effective(s, rank, ctx.n);
  const Eff& e = m.eff;
  sieveComm_t c = e.comm_null ? nullptr : st.comm;
  sieveComm_t child = nullptr;
  m.calls.push_back(Call(ctx, rank, "sieveCommSplit", c, [&] {
    return sieveCommSplit(c, e.color, e.key, e.out_null ? nullptr : &child);
  }));
  rec->members.push_back(m);
  if (child == nullptr) return;
  Member& cm = rec->child;
  rec->has_child = true;
  int crank = -1, csize = -1;
  sieveCommUserRank(child, &crank);
  sieveCommCount(child, &csize);
  cm.value = crank;
  cm.value2 = csize;
  cm.eff.kind = Kind::kAllReduce;
  cm.eff.count = 7;
  cm.eff.dtype = sieveInt32;
  cm.eff.seed = s.seed + 17;
  std::vector<char> in = Input(cm.eff.seed, crank, sieveInt32, sieveSum, 0, 7);
  std::vector<char> out = Sentinel(in.size());
  cm.calls.push_back(Call(ctx, rank, "sieveAllReduce", child, [&] {
    return sieveAllReduce(in.data(), out.data(), 7, sieveInt32, sieveSum, child, nullptr);
  }));
  cm.recv_after = out;
  cm.has_recv = true;
  cm.calls.push_back(Call(ctx, rank, "sieveCommDestroy", nullptr,
                          [&] { return sieveCommDestroy(child); }));
}

// ---- the oracle ----------------------------------------------------------------------------

std::string Ranks(const std::vector<int>& rs) {
  std::string out;
  for (int r : rs) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

// Why this rank's call is invalid on its own ("" if it is not), per sieve.h.
std::string LocalInvalid(const Eff& e, const Member& m, int rank, int n, bool slot_live) {
  if (e.comm_null) return "comm NULL";
  const bool dense = IsDense(e.kind);
  const bool sharded =
      e.kind == Kind::kReduceScatterQuantized || e.kind == Kind::kAllGatherQuantized;
  if (dense || sharded || e.kind == Kind::kTopK || e.kind == Kind::kMasked ||
      e.kind == Kind::kTernary ||
      e.kind == Kind::kSubnet || e.kind == Kind::kD2ft) {
    if (!ValidDtype(e.dtype)) return "datatype invalid";
    if (UsesOp(e.kind) && !ValidOp(e.op)) return "op invalid";
    if (UsesRoot(e.kind) && (e.root < 0 || e.root >= n)) return "root invalid";
    if (e.kind == Kind::kSendRecv && (m.peers.empty() || m.peers[0] < 0 || m.peers[0] >= n))
      return "peer invalid";
    size_t blocks = e.kind == Kind::kAllGather || e.kind == Kind::kReduceScatter || sharded ? n : 1;
    if (e.count > 0 && e.count > static_cast<size_t>(INT64_MAX) / blocks / SafeTypeSize(e.dtype))
      return "count overflows";
    bool reads = e.kind != Kind::kBroadcast || rank == e.root;
    bool writes = e.kind != Kind::kReduce || rank == e.root;
    if (e.count > 0 && e.send_null && reads) return "sendbuff NULL";
    if (e.count > 0 && e.recv_null && writes) return "recvbuff NULL";
    // recvbuff = sendbuff + 1 element: overlapping, unless one of them is not used here.
    if (e.overlap && e.count > 1 && reads && writes) return "buffers overlap";
  }
  if (e.kind == Kind::kMasked && (!slot_live || e.handle_null)) return "mask NULL";
  if (e.kind == Kind::kTernary || e.kind == Kind::kReduceScatterQuantized) {
    if (e.params_null) return "params NULL";
    if (!IsQuantizable(e.dtype)) return "ternary datatype";
    if (e.op != sieveSum && e.op != sieveAvg) return "ternary op";
    if (e.block > (size_t{1} << 34)) return "block_size huge";
  }
  if (e.takes_levels && (e.levels < 1 || e.levels > SIEVE_MAX_LEVELS)) return "levels invalid";
  if (e.kind == Kind::kTopK) {
    if (!IsQuantizable(e.dtype)) return "top-k datatype";
    if (e.op != sieveSum && e.op != sieveAvg) return "top-k op";
    if (!(e.fraction > 0 && e.fraction <= 1)) return "fraction invalid";
  }
  if (e.kind == Kind::kAllGatherQuantized) {
    if (!IsQuantizable(e.dtype)) return "all-gather datatype";
    if (e.bits != 4 && e.bits != 8) return "bits invalid";
  }
  if ((e.kind == Kind::kSubnet || e.kind == Kind::kD2ft)) {
    if (!slot_live || e.handle_null) return "layout NULL";
    if (e.dtype != sieveFloat32 && e.dtype != sieveFloat16 && e.dtype != sieveBfloat16 &&
        e.dtype != sieveFloat64)
      return "subnet datatype";
    if (e.takes_levels) {
      if (!IsQuantizable(e.dtype)) return "quantized subnet datatype";
      if (e.kind == Kind::kSubnet && e.params_null) return "params NULL";
      if (e.block > (size_t{1} << 34)) return "block_size huge";
    }
  }
  if (e.kind == Kind::kMaskRegister) {
    if (e.out_null) return "handle NULL";
    if (e.format != 0 && e.format != 1) return "format invalid";
    if (e.policy != 0 && e.policy != 1) return "policy invalid";
    if (e.count > 0 && e.send_null) return "mask NULL";
    if (e.count > kAllocCap) return "count huge";
  }
  if (e.kind == Kind::kLayoutEqual || e.kind == Kind::kLayoutRegister) {
    if (e.out_null) return "layout NULL";
    if (e.kind == Kind::kLayoutRegister && e.send_null) return "segments NULL";
  }
  if (e.kind == Kind::kSplit) {
    if (e.out_null) return "newcomm NULL";
    if (e.color < SIEVE_SPLIT_NOCOLOR) return "color invalid";
  }
  return "";
}

class Judge {
 public:
  Judge(Ctx& ctx, const Step& s) : ctx_(ctx), s_(s), n_(ctx.n) {}

  void Finding(const std::string& what) {
    ctx_.findings.push_back(ctx_.step == kInitStep ? "init: " + what
                                                   : "step " + std::to_string(ctx_.step) + " (" +
                                                         KindName(s_.kind) + "): " + what);
  }

  // A failed call must say so, by its name, in the thread's message and the communicator's.
  void CheckMessages(int rank, const CallRec& c, bool comm_destroyed = false) {
    if (c.result == sieveSuccess || c.result == sieveInProgress) return;
    if (c.thread_msg.rfind(c.name + ":", 0) != 0)
      Finding("rank " + std::to_string(rank) + ": " + c.name + " failed (" +
              std::to_string(c.result) + ") but sieveGetLastError(NULL) says \"" + c.thread_msg +
              "\"");
    if (c.comm_checked && !comm_destroyed &&
        c.comm_msg.find(c.name) == std::string::npos && c.name != "sieveGroupEnd")
      Finding("rank " + std::to_string(rank) + ": " + c.name +
              " failed but sieveGetLastError(comm) still says \"" + c.comm_msg + "\"");
  }

  // Collective calls: every rank's verdict is the same; success only for a valid, consistent
  // call, with the reference's result. `invalid`: why each rank's call is invalid on its own
  // ("" if it is not); `inconsistent`: how the ranks' calls differ ("" if they agree).
  // Returns true when every rank succeeded and outputs should be compared.
  bool Collective(const std::vector<const Member*>& ms, const std::vector<std::string>& invalid,
                  const std::string& inconsistent) {
    std::vector<int> ok, failed;
    for (int r = 0; r < n_; ++r) (ms[r]->ok() ? ok : failed).push_back(r);
    std::string must_fail = inconsistent;
    for (int r = 0; r < n_ && must_fail.empty(); ++r)
      if (!invalid[r].empty()) must_fail = "rank " + std::to_string(r) + ": " + invalid[r];
    for (int r = 0; r < n_; ++r)
      for (const CallRec& c : ms[r]->calls) CheckMessages(r, c);
    if (!ok.empty() && !failed.empty()) {
      std::string why;
      for (int r : failed)
        for (const CallRec& c : ms[r]->calls)
          if (c.result != 0) why += " [rank " + std::to_string(r) + " " + c.name + ": " +
                                    std::to_string(c.result) + " " + c.thread_msg + "]";
      Finding("ranks " + Ranks(ok) + " succeeded, ranks " + Ranks(failed) + " failed" +
              (must_fail.empty() ? "" : " (" + must_fail + ")") + ":" + why);
      return false;
    }
    if (failed.empty()) {
      if (!must_fail.empty()) {
        Finding("succeeded on every rank although " + must_fail);
        return false;
      }
      return true;
    }
    // Every rank failed: a refusal of a valid call is a finding only when deterministic.
    if (must_fail.empty()) {
      bool deterministic = true;
      std::string why;
      for (int r = 0; r < n_; ++r)
        for (const CallRec& c : ms[r]->calls)
          if (c.result != 0) {
            deterministic &= c.result == sieveInvalidArgument || c.result == sieveInvalidUsage;
            why += " [rank " + std::to_string(r) + " " + c.thread_msg + "]";
          }
      if (deterministic) Finding("a valid, consistent call was refused on every rank:" + why);
    }
    return false;
  }

  // Local calls: valid ones succeed, invalid ones fail with a message.
  void Local(int rank, const Member& m, bool should_succeed, const std::string& why_not) {
    for (const CallRec& c : m.calls) {
      CheckMessages(rank, c);
      if (should_succeed && c.result != sieveSuccess)
        Finding("rank " + std::to_string(rank) + ": " + c.name + " failed: " + c.thread_msg);
      if (!should_succeed && c.result == sieveSuccess)
        Finding("rank " + std::to_string(rank) + ": " + c.name + " succeeded although " + why_not);
    }
  }

  void Compare(int rank, const char* what, const std::vector<char>& want,
               const std::vector<char>& got) {
    if (want.size() != got.size()) {
      Finding("rank " + std::to_string(rank) + ": " + what + " has " + std::to_string(got.size()) +
              " bytes, want " + std::to_string(want.size()));
      return;
    }
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < want.size(); ++i)
      if (want[i] != got[i] && wrong++ == 0) first = i;
    if (wrong > 0)
      Finding("rank " + std::to_string(rank) + ": " + what + ": " + std::to_string(wrong) +
              " of " + std::to_string(want.size()) + " bytes wrong (first at byte " +
              std::to_string(first) + ")");
  }

  void SendUntouched(int rank, const Member& m) {
    if (m.eff.in_place || m.eff.overlap || !m.has_send) return;
    Compare(rank, "sendbuff after the call", m.send_before, m.send_after);
  }

 private:
  Ctx& ctx_;
  const Step& s_;
  int n_;
};

std::vector<char> ExpectedDense(const Eff& e, int rank, int n) {
  const auto dt = static_cast<sieveDataType_t>(e.dtype);
  const auto op = static_cast<sieveRedOp_t>(e.op);
  const size_t es = TypeSize(dt), cnt = e.count;
  std::vector<char> out;
  switch (e.kind) {
    case Kind::kAllReduce:
    case Kind::kReduce:
      out.resize(cnt * es);
      if (cnt) sieve_test::ExpectedReduction(e.seed, n, dt, op, 0, cnt, out.data());
      break;
    case Kind::kBroadcast:
      out = Input(e.seed, e.root, e.dtype, 0, 0, cnt);
      break;
    case Kind::kAllGather:
      for (int r = 0; r < n; ++r) {
        std::vector<char> part = Input(e.seed, r, e.dtype, 0, 0, cnt);
        out.insert(out.end(), part.begin(), part.end());
      }
      break;
    case Kind::kReduceScatter:
      out.resize(cnt * es);
      if (cnt) sieve_test::ExpectedReduction(e.seed, n, dt, op, rank * cnt, cnt, out.data());
      break;
    default:
      break;
  }
  return out;
}

// The part of a dense call's arguments that must agree across ranks.
std::string DenseSignature(const Eff& e) {
  std::string sig = std::string(KindName(e.kind)) + " count " + std::to_string(e.count) +
                    " dtype " + std::to_string(e.dtype);
  if (UsesOp(e.kind)) sig += " op " + std::to_string(e.op);
  if (UsesRoot(e.kind)) sig += " root " + std::to_string(e.root);
  return sig;
}

std::string Disagreement(const std::vector<std::string>& sigs) {
  for (size_t r = 1; r < sigs.size(); ++r)
    if (sigs[r] != sigs[0])
      return "rank 0 passed " + sigs[0] + ", rank " + std::to_string(r) + " " + sigs[r];
  return "";
}

// A dense member (single, or in a group whose every rank succeeded): outputs.
void CheckDenseOutputs(Judge& j, const std::vector<const Member*>& ms, int n) {
  for (int r = 0; r < n; ++r) {
    const Member& m = *ms[r];
    const Eff& e = m.eff;
    j.SendUntouched(r, m);
    if (e.count == 0) {
      j.Compare(r, "recvbuff of a count-0 call", m.recv_before, m.recv_after);
      continue;
    }
    std::vector<char> want = ExpectedDense(e, r, n);
    if (e.kind == Kind::kReduce && r != e.root) want = m.recv_before;  // not written
    if (e.recv_null && e.kind == Kind::kReduce && r != e.root) continue;
    if (e.in_place && e.kind == Kind::kAllGather) {
      j.Compare(r, "recvbuff", want, m.recv_after);
      continue;
    }
    j.Compare(r, (std::string(KindName(e.kind)) + " recvbuff").c_str(), want, m.recv_after);
  }
}

// SendRecv: an edge r -> next is clean when next receives from r exactly what r sends.
// Whether every rank sends to the next what the next expects, with valid arguments.
bool RingClean(const std::vector<const Member*>& ms, int n) {
  for (int r = 0; r < n; ++r) {
    const Member& a = *ms[r];
    const Member& b = *ms[(r + 1) % n];
    if (!LocalInvalid(a.eff, a, r, n, true).empty() ||
        a.peers[0] != (r + 1) % n ||
        a.eff.count * SafeTypeSize(a.eff.dtype) != b.eff.count * SafeTypeSize(b.eff.dtype))
      return false;
  }
  return true;
}

// group_ok_all: the enclosing group (if any) succeeded on every rank; others_clean: no other
// member of it was invalid or inconsistent (else the ring fails with the group).
void JudgeSendRecv(Judge& j, const std::vector<const Member*>& ms, int n, bool group_ok_all,
                   bool others_clean, const std::string& group_why = "") {
  auto bytes = [&](const Member& m) { return m.eff.count * SafeTypeSize(m.eff.dtype); };
  // A rank's send and receive are judged apart: a refused receive leaves its send valid.
  std::vector<bool> in_clean(n), out_clean(n), valid(n), send_ok(n), recv_ok(n);
  for (int r = 0; r < n; ++r) {
    valid[r] = LocalInvalid(ms[r]->eff, *ms[r], r, n, true).empty();
    Eff e = ms[r]->eff;
    e.recv_null = false;
    send_ok[r] = LocalInvalid(e, *ms[r], r, n, true).empty();
    e = ms[r]->eff;
    e.send_null = false;
    Member m = *ms[r];
    m.peers[0] = (r + 1) % n;  // the receive does not depend on where this rank sends
    recv_ok[r] = LocalInvalid(e, m, r, n, true).empty();
  }
  for (int r = 0; r < n; ++r) {
    int next = (r + 1) % n;
    bool clean = send_ok[r] && recv_ok[next] && ms[r]->peers[0] == next &&
                 bytes(*ms[r]) == bytes(*ms[next]);
    out_clean[r] = clean;
    in_clean[next] = clean;
  }
  for (int r = 0; r < n; ++r) {
    const Member& m = *ms[r];
    bool ok = m.ok() && group_ok_all;
    for (const CallRec& c : m.calls) j.CheckMessages(r, c);
    if (!in_clean[r] && ok && bytes(m) > 0 && recv_ok[r] && others_clean) {
      // It received although its sender sent something else or nothing.
      int prev = (r + n - 1) % n;
      if (!(ms[prev]->peers[0] == r && send_ok[prev] && bytes(*ms[prev]) == bytes(m)))
        j.Finding("rank " + std::to_string(r) + " received from rank " + std::to_string(prev) +
                  " successfully although that rank sent " +
                  (ms[prev]->peers[0] == r ? std::to_string(bytes(*ms[prev])) + " bytes, not " +
                                                 std::to_string(bytes(m))
                                           : std::string("to rank ") +
                                                 std::to_string(ms[prev]->peers[0])));
    }
    if (ok && in_clean[r]) {
      int prev = (r + n - 1) % n;
      std::vector<char> want = Input(ms[prev]->eff.seed, prev, ms[prev]->eff.dtype, 0, 0,
                                     ms[prev]->eff.count);
      j.Compare(r, "received data", want, m.recv_after);
      j.SendUntouched(r, m);
    }
  }
  if (RingClean(ms, n) && others_clean)
    for (int r = 0; r < n; ++r)
      if (!(ms[r]->ok() && group_ok_all)) {
        std::string why;
        for (const CallRec& c : ms[r]->calls)
          if (c.result != 0) why += " [" + c.name + ": " + c.thread_msg + "]";
        j.Finding("rank " + std::to_string(r) + ": a clean send/recv ring failed" +
                  (why.empty() ? " (at GroupEnd:" + group_why + ")" : why));
      }
}

void JudgeDenseStep(Ctx& ctx, const Step& s) {
  Judge j(ctx, s);
  const int n = ctx.n;
  std::vector<const Member*> ms;
  for (int r = 0; r < n; ++r) ms.push_back(&ctx.recs[r].members[0]);
  if (s.kind == Kind::kSendRecv) {
    JudgeSendRecv(j, ms, n, true, true);
    return;
  }
  std::vector<std::string> invalid(n), sigs(n);
  for (int r = 0; r < n; ++r) {
    invalid[r] = LocalInvalid(ms[r]->eff, *ms[r], r, n, true);
    sigs[r] = DenseSignature(ms[r]->eff);
  }
  if (j.Collective(ms, invalid, Disagreement(sigs))) CheckDenseOutputs(j, ms, n);
}

void JudgeGroup(Ctx& ctx, const Step& s) {
  Judge j(ctx, s);
  const int n = ctx.n;
  // Per rank: every call of the group (members and GroupEnd) succeeded.
  std::vector<int> ok, failed;
  for (int r = 0; r < n; ++r) {
    bool all = ctx.recs[r].group_end.result == sieveSuccess;
    for (const Member& m : ctx.recs[r].members) all &= m.ok();
    (all ? ok : failed).push_back(r);
    j.CheckMessages(r, ctx.recs[r].group_end);
    for (const Member& m : ctx.recs[r].members)
      for (const CallRec& c : m.calls) j.CheckMessages(r, c);
  }
  bool has_p2p = false, must_fail = false;
  std::string why, group_why;
  for (int r = 0; r < n; ++r)
    if (ctx.recs[r].group_end.result != sieveSuccess)
      group_why += " [rank " + std::to_string(r) + " " + ctx.recs[r].group_end.thread_msg + "]";
  for (size_t i = 0; i < s.members.size(); ++i) {
    std::vector<std::string> sigs(n);
    for (int r = 0; r < n; ++r) {
      const Member& m = ctx.recs[r].members[i];
      has_p2p |= m.eff.kind == Kind::kSendRecv;
      std::string inv = LocalInvalid(m.eff, m, r, n, true);
      if (!inv.empty() && why.empty()) why = "member " + std::to_string(i) + " rank " +
                                             std::to_string(r) + ": " + inv;
      must_fail |= !inv.empty();
      sigs[r] = DenseSignature(m.eff);
    }
    if (ctx.recs[0].members[i].eff.kind != Kind::kSendRecv) {
      std::string d = Disagreement(sigs);
      if (!d.empty() && why.empty()) why = "member " + std::to_string(i) + ": " + d;
      must_fail |= !d.empty();
    }
  }
  if (has_p2p) {  // point-to-point has no agreement: judge its edges, outputs of clean ones
    // Sends and receives between a pair match in order across the group's members, so one
    // member's mismatch can shift another's: then none has to succeed.
    bool rings_clean = true;
    for (size_t i = 0; i < s.members.size(); ++i) {
      std::vector<const Member*> ms;
      for (int r = 0; r < n; ++r) ms.push_back(&ctx.recs[r].members[i]);
      if (ms[0]->eff.kind == Kind::kSendRecv) rings_clean &= RingClean(ms, n);
    }
    for (size_t i = 0; i < s.members.size(); ++i) {
      std::vector<const Member*> ms;
      for (int r = 0; r < n; ++r) ms.push_back(&ctx.recs[r].members[i]);
      if (ms[0]->eff.kind == Kind::kSendRecv)
        JudgeSendRecv(j, ms, n, failed.empty(), !must_fail && rings_clean, group_why);
      else if (failed.empty() && !must_fail)
        CheckDenseOutputs(j, ms, n);
    }
    return;
  }
  if (!ok.empty() && !failed.empty()) {
    j.Finding("group: ranks " + Ranks(ok) + " succeeded, ranks " + Ranks(failed) + " failed");
    return;
  }
  if (failed.empty()) {
    if (must_fail) {
      j.Finding("group succeeded on every rank although " + why);
      return;
    }
    for (size_t i = 0; i < s.members.size(); ++i) {
      std::vector<const Member*> ms;
      for (int r = 0; r < n; ++r) ms.push_back(&ctx.recs[r].members[i]);
      CheckDenseOutputs(j, ms, n);
    }
  }
}

void JudgeMaskRegister(Ctx& ctx, const Step& s) {
  Judge j(ctx, s);
  const int n = ctx.n;
  std::vector<const Member*> ms;
  std::vector<std::string> invalid(n), sigs(n);
  std::vector<std::vector<uint8_t>> masks(n);
  for (int r = 0; r < n; ++r) {
    const Member& m = ctx.recs[r].members[0];
    ms.push_back(&m);
    invalid[r] = LocalInvalid(m.eff, m, r, n, true);
    sigs[r] = "count " + std::to_string(m.eff.count) + " policy " + std::to_string(m.eff.policy);
    if (invalid[r].empty()) masks[r] = MaskOf(s, m.eff, m.eff.count);
  }
  std::string inconsistent = Disagreement(sigs);
  bool strict = ms[0]->eff.policy == sieveMaskStrict;
  if (inconsistent.empty() && strict)
    for (int r = 1; r < n; ++r)
      if (invalid[0].empty() && invalid[r].empty() && masks[r] != masks[0] && inconsistent.empty())
        inconsistent = "strict masks differ on ranks 0 and " + std::to_string(r);
  if (!j.Collective(ms, invalid, inconsistent)) {
    for (int r = 0; r < n; ++r) ctx.mask_bits[r][s.slot].clear();
    return;
  }
  std::vector<uint8_t> agreed = masks[0];
  for (int r = 1; r < n; ++r)
    for (size_t i = 0; i < agreed.size(); ++i) agreed[i] |= masks[r][i];
  size_t nnz = sieve_test::Nnz(agreed);
  for (int r = 0; r < n; ++r) {
    if (ms[r]->value != static_cast<int64_t>(nnz))
      j.Finding("rank " + std::to_string(r) + ": agreed mask has " + std::to_string(ms[r]->value) +
                " kept elements, want " + std::to_string(nnz));
    ctx.mask_bits[r][s.slot] = agreed;
  }
}

void JudgeMasked(Ctx& ctx, const Step& s) {
  Judge j(ctx, s);
  const int n = ctx.n;
  std::vector<const Member*> ms;
  std::vector<std::string> invalid(n), sigs(n);
  for (int r = 0; r < n; ++r) {
    const Member& m = ctx.recs[r].members[0];
    ms.push_back(&m);
    const std::vector<uint8_t>& agreed = ctx.mask_bits[r][s.slot];
    invalid[r] = LocalInvalid(m.eff, m, r, n, ctx.recs[r].mask_live[s.slot]);
    if (invalid[r].empty() && m.eff.count != agreed.size())
      invalid[r] = "count differs from the mask's";
    sigs[r] = DenseSignature(m.eff);
  }
  if (!j.Collective(ms, invalid, Disagreement(sigs))) return;
  for (int r = 0; r < n; ++r) {
    const Eff& e = ms[r]->eff;
    std::vector<char> want(e.count * TypeSize(static_cast<sieveDataType_t>(e.dtype)));
    sieve_test::ExpectedMasked(e.seed, n, static_cast<sieveDataType_t>(e.dtype),
                               static_cast<sieveRedOp_t>(e.op), ctx.mask_bits[r][s.slot],
                               want.data());
    j.Compare(r, "masked recvbuff", want, ms[r]->recv_after);
    j.SendUntouched(r, *ms[r]);
  }
}

void JudgeTernary(Ctx& ctx, const Step& s) {
  Judge j(ctx, s);
  const int n = ctx.n;
  std::vector<const Member*> ms;
  std::vector<std::string> invalid(n), sigs(n);
  for (int r = 0; r < n; ++r) {
    const Member& m = ctx.recs[r].members[0];
    ms.push_back(&m);
    const Eff& e = m.eff;
    const std::vector<uint8_t>& agreed = ctx.mask_bits[r][s.slot];
    invalid[r] = LocalInvalid(e, m, r, n, true);
    if (invalid[r].empty() && m.value == 1 && e.count != agreed.size())
      invalid[r] = "count differs from the mask's";
    size_t block = e.block == 0 ? 2048 : e.block;
    sigs[r] = DenseSignature(e) + " seed " + std::to_string(e.philox_seed) + " step " +
              std::to_string(e.philox_step) + " block " + std::to_string(block) + " masked " +
              std::to_string(m.value) +
              (e.takes_levels ? " levels " + std::to_string(e.levels) : std::string());
  }
  if (!j.Collective(ms, invalid, Disagreement(sigs))) return;
  const Eff& e = ms[0]->eff;
  if (e.count == 0) return;
  std::vector<bool> kept;
  sieve_test::TernaryCase tc;
  tc.input_seed = e.seed;
  tc.nranks = n;
  tc.dtype = static_cast<sieveDataType_t>(e.dtype);
  tc.op = static_cast<sieveRedOp_t>(e.op);
  tc.count = e.count;
  tc.block = e.block == 0 ? 2048 : e.block;
  tc.seed = e.philox_seed;
  tc.step = e.philox_step;
  tc.levels = e.takes_levels ? e.levels : 1;
  if (ms[0]->value == 1) {
    for (uint8_t b : ctx.mask_bits[0][s.slot]) kept.push_back(b != 0);
    tc.kept = &kept;
  }
  std::vector<char> want = sieve_test::ExpectedTernary(tc);
  for (int r = 0; r < n; ++r) {
    j.Compare(r, "ternary recvbuff", want, ms[r]->recv_after);
    j.SendUntouched(r, *ms[r]);
  }
}

// The sharded collectives: the arguments that must agree, and a count-0 call leaves recvbuff be.
std::string ShardedSignature(const Eff& e) {
  return DenseSignature(e) + (e.kind == Kind::kAllGatherQuantized
                                  ? " bits " + std::to_string(e.bits)
                                  : " levels " + std::to_string(e.levels) + " seed " +
                                        std::to_string(e.philox_seed) + " step " +
                                        std::to_string(e.philox_step) + " block " +
                                        std::to_string(e.block == 0 ? 2048 : e.block));
}

std::vector<const Member*> JudgeShardedCall(Judge& j, Ctx& ctx, bool* judge_outputs) {
  const int n = ctx.n;
  std::vector<const Member*> ms;
  std::vector<std::string> invalid(n), sigs(n);
  for (int r = 0; r < n; ++r) {
    ms.push_back(&ctx.recs[r].members[0]);
    invalid[r] = LocalInvalid(ms[r]->eff, *ms[r], r, n, true);
    sigs[r] = ShardedSignature(ms[r]->eff);
  }
  *judge_outputs = j.Collective(ms, invalid, Disagreement(sigs));
  if (*judge_outputs && ms[0]->eff.count == 0) {
    for (int r = 0; r < n; ++r)
      j.Compare(r, "recvbuff of a count-0 call", ms[r]->recv_before, ms[r]->recv_after);
    *judge_outputs = false;
  }
  return ms;
}

// Each rank's block of sieveAllReduceQuantized of the whole sendbuffs, bit for bit.
void JudgeReduceScatterQuantized(Ctx& ctx, const Step& s) {
  Judge j(ctx, s);
  bool outputs = false;
  std::vector<const Member*> ms = JudgeShardedCall(j, ctx, &outputs);
  if (!outputs) return;
  const Eff& e = ms[0]->eff;
  sieve_test::TernaryCase tc;
  tc.input_seed = e.seed;
  tc.nranks = ctx.n;
  tc.dtype = static_cast<sieveDataType_t>(e.dtype);
  tc.op = static_cast<sieveRedOp_t>(e.op);
  tc.count = e.count * ctx.n;
  tc.block = e.block == 0 ? 2048 : e.block;
  tc.seed = e.philox_seed;
  tc.step = e.philox_step;
  tc.levels = e.levels;
  const std::vector<char> whole = sieve_test::ExpectedTernary(tc);
  const size_t bytes = e.count * TypeSize(tc.dtype);
  for (int r = 0; r < ctx.n; ++r) {
    std::vector<char> want(whole.begin() + r * bytes, whole.begin() + (r + 1) * bytes);
    j.Compare(r, "quantized reduce-scatter recvbuff", want, ms[r]->recv_after);
    j.SendUntouched(r, *ms[r]);
  }
}

// Every rank's recvbuff the same bytes, each element within sieve.h's bound of what its owner
// sent (the quantizer is checked exactly by its unit tests; here: the collective around it).
void JudgeAllGatherQuantized(Ctx& ctx, const Step& s) {
  Judge j(ctx, s);
  bool outputs = false;
  std::vector<const Member*> ms = JudgeShardedCall(j, ctx, &outputs);
  if (!outputs) return;
  const Eff& e = ms[0]->eff;
  const auto dt = static_cast<sieveDataType_t>(e.dtype);
  const size_t count = e.count, es = TypeSize(dt), block = SIEVE_ALLGATHER_QUANT_BLOCK;
  for (int r = 1; r < ctx.n; ++r)
    j.Compare(r, "quantized all-gather recvbuff (against rank 0's)", ms[0]->recv_after,
              ms[r]->recv_after);
  if (ms[0]->recv_after.size() != count * ctx.n * es) return;
  for (int q = 0; q < ctx.n; ++q) {
    std::vector<char> shard(count * es);
    sieve_test::FillTernaryInput(e.seed, q, dt, count, shard.data());
    for (size_t b = 0; b < count; b += block) {
      const size_t end = std::min(count, b + block);
      float m = 0.0f;
      for (size_t i = b; i < end; ++i)
        m = std::fmax(m, std::fabs(sieve_test::LoadWidened(dt, shard.data(), i)));
      for (size_t i = b; i < end; ++i) {
        const double x = sieve_test::LoadWidened(dt, shard.data(), i);
        const double got = sieve_test::LoadWidened(dt, ms[0]->recv_after.data(), q * count + i);
        if (!(std::fabs(got - x) <= sieve_test::QuantizedGatherBound(dt, e.bits, m, x))) {
          j.Finding("quantized all-gather: rank " + std::to_string(q) + "'s element " +
                    std::to_string(i) + " came back as " + std::to_string(got) + ", sent " +
                    std::to_string(x) + " (outside the bound)");
          return;
        }
      }
    }
  }
  for (int r = 0; r < ctx.n; ++r) j.SendUntouched(r, *ms[r]);
}

void JudgeTopK(Ctx& ctx, const Step& s) {
  Judge j(ctx, s);
  const int n = ctx.n;
  std::vector<const Member*> ms;
  std::vector<std::string> invalid(n), sigs(n);
  for (int r = 0; r < n; ++r) {
    ms.push_back(&ctx.recs[r].members[0]);
    invalid[r] = LocalInvalid(ms[r]->eff, *ms[r], r, n, true);
    char fraction[48];  // " fraction " and up to 24 characters of %.17g
    std::snprintf(fraction, sizeof(fraction), " fraction %.17g", ms[r]->eff.fraction);
    sigs[r] = DenseSignature(ms[r]->eff) + fraction;
  }
  if (!j.Collective(ms, invalid, Disagreement(sigs))) return;
  const Eff& e = ms[0]->eff;
  const auto dt = static_cast<sieveDataType_t>(e.dtype);
  const size_t bytes = e.count * TypeSize(dt);
  std::vector<char> want;
  if (e.count > 0) {
    std::vector<std::vector<uint8_t>> inputs(n, std::vector<uint8_t>(bytes));
    for (int r = 0; r < n; ++r) sieve_test::FillTernaryInput(e.seed, r, dt, e.count, inputs[r].data());
    std::vector<std::vector<float>> no_feedback;
    const std::vector<uint8_t> all = sieve_test::ExpectedTopK(
        inputs, dt, static_cast<sieveRedOp_t>(e.op), e.count, e.fraction, &no_feedback);
    want.assign(all.begin(), all.begin() + bytes);
  }
  for (int r = 0; r < n; ++r) {
    j.Compare(r, "top-k recvbuff", e.count > 0 ? want : ms[r]->recv_before, ms[r]->recv_after);
    j.SendUntouched(r, *ms[r]);
  }
}

void JudgeLayoutRegister(Ctx& ctx, const Step& s, std::vector<sieve_test::TestLayout>* layouts) {
  Judge j(ctx, s);
  const int n = ctx.n;
  std::vector<const Member*> ms;
  std::vector<std::string> invalid(n), sigs(n);
  for (int r = 0; r < n; ++r) {
    const Member& m = ctx.recs[r].members[0];
    ms.push_back(&m);
    invalid[r] = LocalInvalid(m.eff, m, r, n, true);
    sieve_test::TestLayout lay = LayoutOf(s, m.eff, r, n);
    if (invalid[r].empty()) {
      if (lay.empty()) invalid[r] = "nsubnets not in 1..count";
      if (s.kind == Kind::kLayoutEqual && s.bad[r] == Bad::kOpInvalid) invalid[r] = "nsubnets -1";
      if (s.kind == Kind::kLayoutRegister && m.eff.count != sieve_test::LayoutCount(lay))
        invalid[r] = "segments do not partition count";
      for (const auto& seg : lay)
        for (int h : seg.holders)
          if (h < 0 || h >= n) invalid[r] = "holder not a rank";
    }
    std::string sig = "count " + std::to_string(m.eff.count);
    for (const auto& seg : lay) {
      sig += " [" + std::to_string(seg.offset) + "+" + std::to_string(seg.length);
      for (int h : seg.holders) sig += " " + std::to_string(h);
      sig += "]";
    }
    sigs[r] = sig;
    (*layouts)[r] = lay;
  }
  if (!j.Collective(ms, invalid, Disagreement(sigs))) return;
  for (int r = 0; r < n; ++r)
    if (ms[r]->value != static_cast<int64_t>((*layouts)[r].size()))
      j.Finding("rank " + std::to_string(r) + ": layout has " + std::to_string(ms[r]->value) +
                " segments, want " + std::to_string((*layouts)[r].size()));
}

void JudgeSubnet(Ctx& ctx, const Step& s, const std::vector<bool>& live,
                 const std::vector<sieve_test::TestLayout>& layouts) {
  Judge j(ctx, s);
  const int n = ctx.n;
  std::vector<const Member*> ms;
  std::vector<std::string> invalid(n), sigs(n);
  std::mt19937_64 rng(s.seed);
  sieve_test::Touched touched;
  if (live[0]) touched = sieve_test::RandomTouched(rng, layouts[0], n, 0.5);
  for (int r = 0; r < n; ++r) {
    const Member& m = ctx.recs[r].members[0];
    ms.push_back(&m);
    invalid[r] = LocalInvalid(m.eff, m, r, n, live[r]);
    if (invalid[r].empty() && m.eff.count != sieve_test::LayoutCount(layouts[r]))
      invalid[r] = "count differs from the layout's";
    if (invalid[r].empty() && m.value2 == 1 && m.eff.count != ctx.mask_bits[r][s.slot].size())
      invalid[r] = "count differs from the mask's";
    if (invalid[r].empty() && s.kind == Kind::kD2ft) {
      if (m.eff.params_null && !(s.variant & 1)) invalid[r] = "touched NULL without a schedule";
      if (m.eff.bits_other && m.value >= 0)
        invalid[r] = "touched a segment it does not hold (" + std::to_string(m.value) + ")";
    }
    sigs[r] = DenseSignature(m.eff) +
              (s.kind == Kind::kD2ft ? " schedule " + std::to_string(s.variant & 1)
                                     : std::string()) +
              (m.eff.takes_levels ? " levels " + std::to_string(m.eff.levels) + " seed " +
                                        std::to_string(m.eff.philox_seed) + " block " +
                                        std::to_string(m.eff.block) + " masked " +
                                        std::to_string(m.value2)
                                  : std::string());
  }
  if (!j.Collective(ms, invalid, Disagreement(sigs))) return;
  for (int r = 0; r < n; ++r) {
    const Eff& e = ms[r]->eff;
    std::vector<char> want(ms[r]->recv_before.size());
    const char* before = e.in_place ? ms[r]->send_before.data() : ms[r]->recv_before.data();
    const sieve_test::Touched* t = s.kind == Kind::kD2ft ? &touched : nullptr;
    if (e.takes_levels) {
      sieve_test::TernaryCase tc;
      tc.input_seed = e.seed;
      tc.nranks = n;
      tc.dtype = static_cast<sieveDataType_t>(e.dtype);
      tc.levels = e.levels;
      tc.block = e.block == 0 ? 2048 : e.block;
      tc.seed = e.philox_seed;
      tc.step = e.philox_step;
      std::vector<bool> kept;
      if (ms[r]->value2 == 1)
        for (uint8_t b : ctx.mask_bits[r][s.slot]) kept.push_back(b != 0);
      sieve_test::ExpectedSubnetQuantized(tc, layouts[r], t, r, before, want.data(),
                                          ms[r]->value2 == 1 ? &kept : nullptr);
    } else {
      sieve_test::ExpectedSubnet(e.seed, n, r, static_cast<sieveDataType_t>(e.dtype), layouts[r],
                                 t, before, want.data());
    }
    j.Compare(r, "subnet recvbuff", want, ms[r]->recv_after);
    j.SendUntouched(r, *ms[r]);
  }
}

void JudgeSplit(Ctx& ctx, const Step& s) {
  Judge j(ctx, s);
  const int n = ctx.n;
  std::vector<const Member*> ms;
  std::vector<std::string> invalid(n);
  for (int r = 0; r < n; ++r) {
    ms.push_back(&ctx.recs[r].members[0]);
    invalid[r] = LocalInvalid(ms[r]->eff, *ms[r], r, n, true);
  }
  bool any_invalid = false;
  for (const std::string& why : invalid) any_invalid |= !why.empty();
  if (any_invalid) {  // the colour exchange on the parent cannot complete: fails everywhere
    j.Collective(ms, invalid, "");
    return;
  }
  // Each new communicator is created by its members alone: their verdicts agree (a rank of
  // another colour, or SIEVE_SPLIT_NOCOLOR, may succeed while a creation fails, e.g. when its
  // bootstrap times out).
  for (int r = 0; r < n; ++r) {
    for (const CallRec& c : ms[r]->calls) j.CheckMessages(r, c);
    for (int q = r + 1; q < n; ++q)
      if (ms[q]->eff.color == ms[r]->eff.color && ms[q]->ok() != ms[r]->ok())
        j.Finding("ranks " + std::to_string(r) + " and " + std::to_string(q) + " (colour " +
                  std::to_string(ms[r]->eff.color) + ") disagree: " +
                  (ms[r]->ok() ? ms[q] : ms[r])->calls[0].thread_msg);
  }
  // The children: members by colour, ordered by key then parent rank.
  for (int r = 0; r < n; ++r) {
    if (!ms[r]->ok()) continue;
    const Eff& e = ms[r]->eff;
    const RankRec& rec = ctx.recs[r];
    if (e.color == SIEVE_SPLIT_NOCOLOR) {
      if (rec.has_child) j.Finding("rank " + std::to_string(r) + ": NOCOLOR gave a communicator");
      continue;
    }
    std::vector<std::pair<int, int>> members;  // (key, parent rank)
    for (int q = 0; q < n; ++q)
      if (ms[q]->eff.color == e.color) members.push_back({ms[q]->eff.key, q});
    std::sort(members.begin(), members.end());
    int want_rank = 0;
    while (members[want_rank].second != r) ++want_rank;
    const int size = static_cast<int>(members.size());
    if (!rec.has_child) {
      j.Finding("rank " + std::to_string(r) + ": no communicator from its split");
      continue;
    }
    if (rec.child.value != want_rank || rec.child.value2 != size)
      j.Finding("rank " + std::to_string(r) + ": child rank " + std::to_string(rec.child.value) +
                " of " + std::to_string(rec.child.value2) + ", want " + std::to_string(want_rank) +
                " of " + std::to_string(size));
    for (const CallRec& c : rec.child.calls) {
      j.CheckMessages(r, c, c.name == "sieveCommDestroy");
      if (c.result != sieveSuccess)
        j.Finding("rank " + std::to_string(r) + ": on the child, " + c.name + " failed: " +
                  c.thread_msg);
    }
    if (rec.child.calls.size() > 0 && rec.child.calls[0].result == sieveSuccess) {
      std::vector<char> want(7 * 4);
      sieve_test::ExpectedReduction(rec.child.eff.seed, size, sieveInt32, sieveSum, 0, 7,
                                    want.data());
      j.Compare(r, "child all-reduce", want, rec.child.recv_after);
    }
  }
}

void JudgeLocal(Ctx& ctx, const Step& s) {
  Judge j(ctx, s);
  for (int r = 0; r < ctx.n; ++r) {
    const Member& m = ctx.recs[r].members[0];
    const Eff& e = m.eff;
    if (s.kind == Kind::kDeregister) {
      j.Local(r, m, m.value == 1, "the handle was not live");
      if (m.value == 1 && (s.variant & 1) == 0) ctx.mask_bits[r][s.slot].clear();
      continue;
    }
    int which = s.variant % 6;
    bool comm_query = which < 4;
    std::string why;
    if (e.out_null) why = "its output pointer was NULL";
    if (comm_query && e.comm_null) why = "comm was NULL";
    if (which == 4 && (e.handle_null || !ctx.recs[r].mask_live[s.slot])) why = "mask NULL";
    if (which == 5 && (e.handle_null || !ctx.recs[r].layout_live[s.slot])) why = "layout NULL";
    j.Local(r, m, why.empty(), why);
    if (!why.empty() || m.calls[0].result != sieveSuccess) continue;
    int64_t want = -1;
    if (which == 0) want = ctx.n;
    if (which == 1) want = r;
    if (which == 3) want = sieveSuccess;
    if (which == 4) want = static_cast<int64_t>(sieve_test::Nnz(ctx.mask_bits[r][s.slot]));
    if (want >= 0 && m.value != want)
      j.Finding("rank " + std::to_string(r) + ": " + m.calls[0].name + " gave " +
                std::to_string(m.value) + ", want " + std::to_string(want));
  }
}

// ---- the rank threads ----------------------------------------------------------------------

// The judges' model of the slots' layouts (per slot, per rank), kept across steps.
struct Shared {
  std::vector<sieve_test::TestLayout> layouts[kSlots];
};

void RankMain(Ctx& ctx, Shared& shared, int rank) {
  ctx.tid[rank].store(static_cast<int>(syscall(SYS_gettid)));
  const Program& p = *ctx.program;
  RankState st;
  CallRec init = Call(ctx, rank, "sieveCommInitRank", nullptr,
                      [&] { return sieveCommInitRank(&st.comm, ctx.n, ctx.id, rank); });
  ctx.recs[rank] = RankRec();
  ctx.recs[rank].members.push_back(Member());
  ctx.recs[rank].members[0].calls.push_back(init);
  ctx.barrier->Wait([&] {
    // Init may fail on every rank (the bootstrap root gives up after SIEVE_TIMEOUT, which a
    // loaded machine can exceed before UCX is up), but not on some ranks only.
    std::vector<const Member*> ms;
    for (int r = 0; r < ctx.n; ++r) {
      ms.push_back(&ctx.recs[r].members[0]);
      ctx.go &= ms.back()->ok();
    }
    Step init_step;
    ctx.step = kInitStep;
    Judge(ctx, init_step).Collective(ms, std::vector<std::string>(ctx.n), "");
    ctx.initialized = ctx.go;
  });
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (!ctx.go) break;
    const Step& s = p.steps[i];
    RankRec rec;
    for (int k = 0; k < kSlots; ++k) {
      rec.mask_live[k] = st.masks[k].handle != nullptr;
      rec.layout_live[k] = st.layouts[k].handle != nullptr;
    }
    switch (s.kind) {
      case Kind::kGroup: {
        rec.in_group = true;
        sieveGroupStart();
        for (const Step& m : s.members) rec.members.push_back(RunDense(ctx, rank, m, st.comm));
        rec.group_end = Call(ctx, rank, "sieveGroupEnd", st.comm, [] { return sieveGroupEnd(); });
        for (Member& m : rec.members) m.Snapshot();  // a group writes its outputs at GroupEnd
        break;
      }
      case Kind::kMaskRegister: rec.members.push_back(RunMaskRegister(ctx, rank, s, st)); break;
      case Kind::kMasked: rec.members.push_back(RunMasked(ctx, rank, s, st)); break;
      case Kind::kTernary: rec.members.push_back(RunTernary(ctx, rank, s, st)); break;
      case Kind::kLayoutEqual:
      case Kind::kLayoutRegister: rec.members.push_back(RunLayoutRegister(ctx, rank, s, st)); break;
      case Kind::kSubnet:
      case Kind::kD2ft: rec.members.push_back(RunSubnet(ctx, rank, s, st)); break;
      case Kind::kDeregister: rec.members.push_back(RunDeregister(ctx, rank, s, st)); break;
      case Kind::kQuery: rec.members.push_back(RunQuery(ctx, rank, s, st)); break;
      case Kind::kSplit: RunSplit(ctx, rank, s, st, &rec); break;
      case Kind::kReduceScatterQuantized:
        rec.members.push_back(RunReduceScatterQuantized(ctx, rank, s, st));
        break;
      case Kind::kAllGatherQuantized:
        rec.members.push_back(RunAllGatherQuantized(ctx, rank, s, st));
        break;
      case Kind::kTopK: rec.members.push_back(RunTopK(ctx, rank, s, st)); break;
      default: rec.members.push_back(RunDense(ctx, rank, s, st.comm)); break;
    }
    sieveResult_t async = sieveInternalError;
    rec.healthy = sieveCommGetAsyncError(st.comm, &async) == sieveSuccess && async == sieveSuccess;
    ctx.recs[rank] = std::move(rec);
    ctx.barrier->Wait([&] {
      ctx.step = i;
      switch (s.kind) {
        case Kind::kGroup: JudgeGroup(ctx, s); break;
        case Kind::kMaskRegister: JudgeMaskRegister(ctx, s); break;
        case Kind::kMasked: JudgeMasked(ctx, s); break;
        case Kind::kTernary: JudgeTernary(ctx, s); break;
        case Kind::kLayoutEqual:
        case Kind::kLayoutRegister: {
          std::vector<sieve_test::TestLayout> lays(ctx.n);
          JudgeLayoutRegister(ctx, s, &lays);
          shared.layouts[s.slot] = lays;
          break;
        }
        case Kind::kSubnet:
        case Kind::kD2ft: {
          std::vector<bool> live(ctx.n);
          std::vector<sieve_test::TestLayout> lays(ctx.n);
          for (int r = 0; r < ctx.n; ++r) {
            live[r] = ctx.recs[r].layout_live[s.slot];
            if (static_cast<int>(shared.layouts[s.slot].size()) == ctx.n)
              lays[r] = shared.layouts[s.slot][r];
          }
          JudgeSubnet(ctx, s, live, lays);
          break;
        }
        case Kind::kDeregister:
        case Kind::kQuery: JudgeLocal(ctx, s); break;
        case Kind::kSplit: JudgeSplit(ctx, s); break;
        case Kind::kReduceScatterQuantized: JudgeReduceScatterQuantized(ctx, s); break;
        case Kind::kAllGatherQuantized: JudgeAllGatherQuantized(ctx, s); break;
        case Kind::kTopK: JudgeTopK(ctx, s); break;
        default: JudgeDenseStep(ctx, s); break;
      }
      for (int r = 0; r < ctx.n; ++r) ctx.go &= ctx.recs[r].healthy;
      ctx.go &= ctx.findings.empty();
    });
  }
  if (st.comm == nullptr) {  // init failed (on every rank, or that is a finding already)
    ctx.barrier->Wait([] {});
    return;
  }
  // Teardown: free what is registered (local, must succeed), then destroy or abort.
  std::vector<CallRec> frees;
  for (int k = 0; k < kSlots; ++k) {
    if (sieveMask_t h = st.masks[k].handle)
      frees.push_back(Call(ctx, rank, "sieveMaskDeregister", nullptr,
                           [&] { return sieveMaskDeregister(h); }));
    if (sieveLayout_t h = st.layouts[k].handle)
      frees.push_back(Call(ctx, rank, "sieveLayoutDeregister", nullptr,
                           [&] { return sieveLayoutDeregister(h); }));
  }
  if (p.destroy_in_group && ctx.go) {
    int x[4] = {1, 2, 3, 4};
    sieveGroupStart();
    Call(ctx, rank, "sieveAllReduce", st.comm,
         [&] { return sieveAllReduce(x, x, 4, sieveInt32, sieveSum, st.comm, nullptr); });
    Call(ctx, rank, "sieveCommDestroy", nullptr, [&] { return sieveCommDestroy(st.comm); });
    Call(ctx, rank, "sieveGroupEnd", nullptr, [] { return sieveGroupEnd(); });
    return;
  }
  bool abort = p.teardown == 1 || (p.teardown == 2 && rank == 0);
  CallRec end = abort ? Call(ctx, rank, "sieveCommAbort", nullptr,
                             [&] { return sieveCommAbort(st.comm); })
                      : Call(ctx, rank, "sieveCommDestroy", nullptr,
                             [&] { return sieveCommDestroy(st.comm); });
  CallRec after;
  if (p.use_after_destroy)
    after = Call(ctx, rank, "sieveCommCount", nullptr, [&] {
      int v = 0;
      return sieveCommCount(st.comm, &v);
    });
  ctx.barrier->Wait([&] {});
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  for (const CallRec& f : frees)
    if (f.result != sieveSuccess)
      ctx.findings.push_back("rank " + std::to_string(rank) + ": " + f.name + " failed: " +
                             f.thread_msg);
  if (end.result != sieveSuccess)
    ctx.findings.push_back("rank " + std::to_string(rank) + ": " + end.name + " failed: " +
                           end.thread_msg);
  if (p.use_after_destroy && after.result == sieveSuccess)
    ctx.findings.push_back("rank " + std::to_string(rank) +
                           ": sieveCommCount on a destroyed communicator succeeded");
}

double TimeoutSeconds() {
  const char* t = std::getenv("SIEVE_TIMEOUT");
  double v = t ? std::atof(t) : 0;
  return v > 0 ? v : 60;
}

}  // namespace

std::vector<std::string> Run(const Program& program, bool* tested) {
  // Once, before any thread of ours reads the environment (setenv races with getenv).
  static std::once_flag env_once;
  std::call_once(env_once, [] {
    setenv("SIEVE_TIMEOUT", "1", 0);
    setenv("SIEVE_SOCKET_IFNAME", "lo", 0);
    setenv("UCX_NET_DEVICES", "lo", 0);
    setenv("SIEVE_DEBUG", "NONE", 0);  // every refusal would log a WARN line
    // A handshake may not outlast SIEVE_TIMEOUT (init must return within it + 2 s too).
    setenv("SIEVE_BOOTSTRAP_HANDSHAKE_TIMEOUT", "1", 0);
  });
  const double limit_s = TimeoutSeconds() + 2;
  Ctx ctx;
  ctx.program = &program;
  ctx.n = program.nranks;
  ctx.recs.resize(ctx.n);
  Barrier barrier(ctx.n);
  ctx.barrier = &barrier;
  for (int r = 0; r < kMaxRanks; ++r) {
    ctx.since[r].store(0);
    ctx.lost_at_start[r].store(0);
    ctx.what[r].store("");
    ctx.tid[r].store(0);
  }
  if (sieveGetUniqueId(&ctx.id) != sieveSuccess)
    return {std::string("sieveGetUniqueId failed: ") + sieveGetLastError(nullptr)};
  Shared shared;
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    int64_t last = NowMs();
    int64_t waited[kMaxRanks] = {};  // each rank thread's run-queue wait at the last tick
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      int64_t now = NowMs();
      int64_t lost = std::max<int64_t>(0, now - last - 25);
      for (int r = 0; r < ctx.n; ++r) {
        const int tid = ctx.tid[r].load();
        if (tid == 0) continue;
        const int64_t w = RunQueueWaitMs(tid);
        if (waited[r] != 0) lost = std::max(lost, w - waited[r]);
        waited[r] = w;
      }
      ctx.lost_ms += lost;
      last = now;
      for (int r = 0; r < ctx.n; ++r) {
        int64_t since = ctx.since[r].load();
        int64_t lost = ctx.lost_ms.load() - ctx.lost_at_start[r].load();
        if (since != 0 && now - since > static_cast<int64_t>(limit_s * 1000) + lost) {
          std::fprintf(stderr,
                       "HANG: rank %d has been in %s for %.1f s (SIEVE_TIMEOUT + 2 s = %.1f s, "
                       "plus %.1f s this process was starved of CPU)\n%s",
                       r, ctx.what[r].load(), (now - since) / 1000.0, limit_s, lost / 1000.0,
                       Describe(program).c_str());
          std::abort();
        }
      }
    }
  });
  std::vector<std::thread> ranks;
  for (int r = 0; r < ctx.n; ++r)
    ranks.emplace_back([&ctx, &shared, r] { RankMain(ctx, shared, r); });
  for (std::thread& t : ranks) t.join();
  done.store(true);
  watchdog.join();
  if (tested != nullptr) *tested = ctx.initialized;
  return ctx.findings;
}

}  // namespace sieve_fuzz
