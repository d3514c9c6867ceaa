// Every compressed codec with ranks as threads over the loopback transport,
// on n in {1, 2, 3, 5, 7, 8}, at odd element counts, ring and tree, against
// the references of the multi-process tests: masked (every datatype, sum/avg/
// max, densities 0 to 1), OR (the union mask policy), ternary (dense and
// masked, every float type, sum/avg, several block sizes), and the subnet
// codec (SDP layouts and D2FT touched tables).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "support/mask_reference.h"
#include "support/mp_harness.h"
#include "support/reference.h"
#include "support/subnet_reference.h"
#include "support/ternary_reference.h"
#include "support/thread_ranks.h"

namespace sieve_test {
namespace {

// "" when `got` equals `want` over `count` elements of `es` bytes, else what differs.
std::string Compare(const char* what, const void* got, const void* want, size_t count, size_t es) {
  size_t first = 0;
  size_t wrong = CountMismatches(got, want, count, es, &first);
  if (wrong == 0) return "";
  return std::string(what) + ": " + std::to_string(wrong) + " of " + std::to_string(count) +
         " elements wrong, first at " + std::to_string(first);
}

// Prints the first few failures of a rank; returns how many there were.
struct Failures {
  int rank = 0;
  int count = 0;
  void Add(const std::string& e) {
    if (!e.empty() && count++ < 5) std::fprintf(stderr, "rank %d: %s\n", rank, e.c_str());
  }
};

// ---- masked, and OR (the union policy) ---------------------------------

std::string MaskedCase(sieveComm_t comm, int rank, int n, sieveMask_t handle,
                       const std::vector<uint8_t>& mask, sieveDataType_t t, sieveRedOp_t op,
                       bool in_place, uint64_t seed) {
  const size_t count = mask.size(), es = TypeSize(t);
  std::vector<char> send(count * es + 1), recv(count * es + 1, 0x5a), want(count * es + 1);
  char* sendp = in_place ? recv.data() : send.data();
  FillInput(seed, rank, t, op, 0, count, sendp);
  char what[128];
  std::snprintf(what, sizeof(what), "masked %s %s count %zu nnz %zu %s", TypeName(t), OpName(op),
                count, Nnz(mask), in_place ? "in place" : "out of place");
  if (sieveAllReduceMasked(sendp, recv.data(), count, t, op, handle, comm, nullptr) != sieveSuccess)
    return std::string(what) + ": " + sieveGetLastError(comm);
  ExpectedMasked(seed, n, t, op, mask, want.data());
  return Compare(what, recv.data(), want.data(), count, es);
}

int RunMasked(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  Failures bad{rank};
  uint64_t seed = 300 + n;
  const struct {
    size_t count;
    double density;
  } shapes[] = {{0, 0.5}, {1, 1.0}, {1, 0.0}, {7, 0.5}, {1023, 0.2}, {4001, 0.001}, {60001, 0.9}};
  for (const auto& shape : shapes) {
    std::vector<uint8_t> mask = RandomMask(++seed, shape.count, shape.density);
    sieveMask_t handle = nullptr;
    RANK_CHECK(sieveMaskRegister(comm, mask.data(), sieveMaskBytes, shape.count, sieveMaskStrict,
                                 &handle) == sieveSuccess, "register: %s", sieveGetLastError(comm));
    const bool large = shape.count > 10000;
    for (sieveDataType_t t : kAllTypes)
      for (sieveRedOp_t op : {sieveSum, sieveAvg, sieveMax}) {
        if (large && t != sieveFloat32 && t != sieveInt8) continue;
        ++seed;
        bad.Add(MaskedCase(comm, rank, n, handle, mask, t, op, seed % 2 == 0, seed));
      }
    RANK_CHECK(sieveMaskDeregister(handle) == sieveSuccess, "deregister");
  }
  // OR: every rank registers its own mask; the ranks agree on their union.
  for (size_t count : {size_t{1}, size_t{9}, size_t{2049}, size_t{50001}}) {
    const uint64_t base = 700 + count;
    std::vector<uint8_t> mine = RandomMask(base + rank, count, 0.1), all(count, 0);
    for (int r = 0; r < n; ++r) {
      std::vector<uint8_t> m = RandomMask(base + r, count, 0.1);
      for (size_t j = 0; j < count; ++j) all[j] |= m[j];
    }
    std::vector<uint8_t> bits = ToBitmap(mine);
    sieveMask_t handle = nullptr;
    RANK_CHECK(sieveMaskRegister(comm, bits.data(), sieveMaskBitmap, count, sieveMaskUnion,
                                 &handle) == sieveSuccess, "union: %s", sieveGetLastError(comm));
    size_t nnz = 0;
    RANK_CHECK(sieveMaskNnz(handle, &nnz) == sieveSuccess && nnz == Nnz(all),
               "union of %zu elements: nnz %zu, expected %zu", count, nnz, Nnz(all));
    bad.Add(MaskedCase(comm, rank, n, handle, all, sieveFloat64, sieveSum, false, base));
    RANK_CHECK(sieveMaskDeregister(handle) == sieveSuccess, "deregister");
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad.count == 0, "%d masked cases wrong", bad.count);
  return 0;
}

// ---- ternary, dense and masked -------------------------------------------

size_t TernarySize(sieveDataType_t t) { return t == sieveFloat32 ? 4 : 2; }

std::string TernaryCaseRun(sieveComm_t comm, int rank, const TernaryCase& c, sieveMask_t mask,
                           bool in_place) {
  const size_t es = TernarySize(c.dtype), bytes = c.count * es;
  std::vector<char> send(bytes + 1), recv(bytes + 1, 0x5a);
  char* sendp = in_place ? recv.data() : send.data();
  FillTernaryInput(c.input_seed, rank, c.dtype, c.count, sendp);
  sieveTernaryParams_t params = TernaryParams(c.seed, c.step, c.block == 2048 ? 0 : c.block, mask);
  char what[160];
  std::snprintf(what, sizeof(what), "ternary%s %s %s count %zu block %zu %s", mask ? " masked" : "",
                TypeName(c.dtype), OpName(c.op), c.count, c.block,
                in_place ? "in place" : "out of place");
  if (sieveAllReduceTernary(sendp, recv.data(), c.count, c.dtype, c.op, &params, comm, nullptr) !=
      sieveSuccess)
    return std::string(what) + ": " + sieveGetLastError(comm);
  std::vector<char> want = ExpectedTernary(c);
  std::string e = Compare(what, recv.data(), want.data(), c.count, es);
  if (e.empty() && recv[bytes] != 0x5a) e = std::string(what) + ": wrote past the end";
  return e;
}

int RunTernary(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  Failures bad{rank};
  int k = 0;
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1001}, size_t{65537}})
    for (sieveDataType_t t : {sieveFloat32, sieveFloat16, sieveBfloat16})
      for (sieveRedOp_t op : {sieveSum, sieveAvg}) {
        if (count > 10000 && (t == sieveFloat16) != (op == sieveSum)) continue;  // 3 large cases
        TernaryCase c;
        c.input_seed = 11 + k;
        c.nranks = n;
        c.dtype = t;
        c.op = op;
        c.count = count;
        c.block = (k % 3 == 0) ? 2048 : (k % 3 == 1) ? 7 : 100;
        c.seed = 5;
        c.step = k++;
        bad.Add(TernaryCaseRun(comm, rank, c, nullptr, k % 2 == 0));
      }
  // Masked + ternary: only the kept elements are quantized; the rest are 0.
  for (size_t count : {size_t{1}, size_t{13}, size_t{30011}}) {
    std::vector<uint8_t> keep = RandomMask(900 + count, count, 0.6);
    std::vector<bool> kept(keep.begin(), keep.end());
    sieveMask_t mask = nullptr;
    RANK_CHECK(sieveMaskRegister(comm, keep.data(), sieveMaskBytes, count, sieveMaskStrict,
                                 &mask) == sieveSuccess, "%s", sieveGetLastError(comm));
    for (sieveDataType_t t : {sieveFloat32, sieveBfloat16}) {
      TernaryCase c;
      c.input_seed = 41;
      c.nranks = n;
      c.dtype = t;
      c.op = sieveAvg;
      c.count = count;
      c.block = 100;
      c.seed = 9;
      c.step = 3;
      c.kept = &kept;
      bad.Add(TernaryCaseRun(comm, rank, c, mask, false));
    }
    RANK_CHECK(sieveMaskDeregister(mask) == sieveSuccess, "deregister");
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad.count == 0, "%d ternary cases wrong", bad.count);
  return 0;
}

// ---- subnet: SDP layouts and D2FT ----------------------------------------

std::string SubnetCase(sieveComm_t comm, int rank, int n, const TestLayout& layout,
                       sieveLayout_t handle, const Touched* touched, sieveDataType_t t,
                       bool in_place, uint64_t seed) {
  const size_t count = LayoutCount(layout), es = TypeSize(t);
  std::vector<char> send(count * es), recv(count * es);
  FillInput(seed + 1, rank, t, sieveSum, 0, count, recv.data());  // what unheld segments keep
  char* sendp = in_place ? recv.data() : send.data();
  if (!in_place) FillInput(seed, rank, t, sieveSum, 0, count, sendp);
  for (const TestSegment& s : layout)  // in place: the input is on the segments held only
    if (in_place && std::binary_search(s.holders.begin(), s.holders.end(), rank))
      FillInput(seed, rank, t, sieveSum, s.offset, s.length, sendp + s.offset * es);
  const std::vector<char> before = recv;
  char what[128];
  std::snprintf(what, sizeof(what), "%s %s %zu segments, %zu elements %s",
                touched ? "d2ft" : "sdp", TypeName(t), layout.size(), count,
                in_place ? "in place" : "out of place");
  sieveResult_t res;
  if (touched == nullptr) {
    res = sieveAllReduceSubnet(sendp, recv.data(), count, t, handle, comm, nullptr);
  } else {
    std::vector<unsigned char> row = BitmapRow(*touched, rank);
    res = sieveAllReduceD2ft(sendp, recv.data(), count, t, handle, row.data(), nullptr, comm,
                             nullptr);
  }
  if (res != sieveSuccess) return std::string(what) + ": " + sieveGetLastError(comm);
  std::vector<char> want(count * es);
  ExpectedSubnet(seed, n, rank, t, layout, touched, before.data(), want.data());
  return Compare(what, recv.data(), want.data(), count, es);
}

int RunSubnet(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  Failures bad{rank};
  std::mt19937_64 rng(50 + n);  // the same layouts on every rank
  uint64_t seed = 60 + n;
  for (int li = 0; li < 4; ++li) {
    const int segments = li == 0 ? 1 : li == 1 ? 3 : li == 2 ? 40 : 7;
    const size_t longest = li == 3 ? 9001 : li == 0 ? 1 : 33;  // odd lengths, one large layout
    TestLayout layout = RandomLayout(rng, n, segments, longest);
    std::vector<sieveSegment_t> segs = ToApi(layout);
    sieveLayout_t handle = nullptr;
    RANK_CHECK(sieveLayoutRegister(comm, LayoutCount(layout), segs.data(),
                                   static_cast<int>(segs.size()), &handle) == sieveSuccess,
               "register: %s", sieveGetLastError(comm));
    Touched half = RandomTouched(rng, layout, n, 0.5);
    for (sieveDataType_t t : {sieveFloat32, sieveFloat16, sieveBfloat16, sieveFloat64}) {
      ++seed;
      bad.Add(SubnetCase(comm, rank, n, layout, handle, nullptr, t, seed % 2 == 0, seed));
      bad.Add(SubnetCase(comm, rank, n, layout, handle, &half, t, seed % 2 == 1, seed));
    }
    RANK_CHECK(sieveLayoutDeregister(handle) == sieveSuccess, "deregister");
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad.count == 0, "%d subnet cases wrong", bad.count);
  return 0;
}

RankSpec Spec(int n, const std::string& algo) {
  RankSpec spec;
  spec.nranks = n;
  spec.kill_after_s = 120;
  spec.env = {{"SIEVE_TIMEOUT", "30"}, {"SIEVE_SEGMENT_BYTES", "32k"}, {"SIEVE_ALGO", algo}};
  return spec;
}

class LoopbackCodecTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  RankSpec spec() const { return Spec(std::get<1>(GetParam()), std::get<0>(GetParam())); }
};

TEST_P(LoopbackCodecTest, MaskedAndUnionMatchTheReference) {
  EXPECT_EQ(RunThreadRanks(spec(), RunMasked), "");
}
TEST_P(LoopbackCodecTest, TernaryDenseAndMaskedMatchTheReferenceBitForBit) {
  EXPECT_EQ(RunThreadRanks(spec(), RunTernary), "");
}
TEST_P(LoopbackCodecTest, SubnetSdpAndD2ftMatchTheFormula) {
  EXPECT_EQ(RunThreadRanks(spec(), RunSubnet), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, LoopbackCodecTest,
                         ::testing::Combine(::testing::Values(std::string("RING"), std::string("TREE")),
                                            ::testing::Values(1, 2, 3, 5, 7, 8)));

}  // namespace
}  // namespace sieve_test
