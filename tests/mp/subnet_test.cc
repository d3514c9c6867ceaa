// SDP and D2FT all-reduces on real processes against the formulas (support/
// subnet_reference): random layouts on n in {2, 3, 5, 8} with 1..200 segments
// and single-holder / all-holder / random holder sets, every supported type,
// in place and out of place; random, all-zero and all-one touched tables
// through both schedule paths. Every call runs with the pages it must not
// write read-only (and, out of place, the input pages it must not read
// inaccessible), and the bytes there -- NaN payloads -- are compared after.
// Plus: 50 random layouts on 5 ranks (no deadlock) and bytes per rank.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "support/mp_harness.h"
#include "support/reference.h"
#include "support/subnet_reference.h"

namespace sieve_test {
namespace {

const sieveDataType_t kTypes[] = {sieveFloat32, sieveFloat16, sieveBfloat16, sieveFloat64};

// Page-aligned memory whose pages can be protected one by one.
class PagedBuffer {
 public:
  explicit PagedBuffer(size_t bytes) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    bytes_ = std::max(page_, (bytes + page_ - 1) / page_ * page_);
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }
  ~PagedBuffer() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  char* data() const { return data_; }
  size_t page() const { return page_; }
  size_t pages() const { return bytes_ / page_; }
  void Protect(size_t page, int prot) const { mprotect(data_ + page * page_, page_, prot); }
  void Unprotect() const { mprotect(data_, bytes_, PROT_READ | PROT_WRITE); }

 private:
  char* data_ = nullptr;
  size_t bytes_ = 0;
  size_t page_ = 4096;
};

// NaN bit patterns with payloads, different per element.
void FillNaN(sieveDataType_t dtype, char* p, size_t count, uint64_t salt) {
  const size_t es = TypeSize(dtype);
  for (size_t i = 0; i < count; ++i) {
    uint64_t payload = (salt * 0x9e3779b97f4a7c15ull + i) | 1;
    if (es == 8) {
      uint64_t v = 0x7ff0000000000000ull | (payload & 0x000fffffffffffffull);
      std::memcpy(p + i * es, &v, 8);
    } else if (es == 4) {
      uint32_t v = 0x7f800000u | static_cast<uint32_t>(payload & 0x7fffffu);
      std::memcpy(p + i * es, &v, 4);
    } else {
      uint16_t v =
          dtype == sieveFloat16 ? 0x7c00u | (payload & 0x3ffu) : 0x7f80u | (payload & 0x7fu);
      std::memcpy(p + i * es, &v, 2);
    }
  }
}

struct Case {
  sieveDataType_t dtype = sieveFloat32;
  bool in_place = false;
  const Touched* touched = nullptr;  // nullptr: SDP
  bool schedule = false;             // D2FT: pass the whole table instead of the bitmap
  uint64_t seed = 1;
};

bool Holds(const TestSegment& s, int rank) {
  return std::binary_search(s.holders.begin(), s.holders.end(), rank);
}

// Runs one call on protected pages; returns the wrong elements, or -1.
long RunCase(sieveComm_t comm, int rank, int n, sieveLayout_t handle, const TestLayout& layout,
             const Case& c) {
  const size_t count = LayoutCount(layout), es = TypeSize(c.dtype);
  PagedBuffer send(count * es), recv(count * es);
  if (send.data() == nullptr || recv.data() == nullptr) return -1;
  char* sendp = c.in_place ? recv.data() : send.data();
  // What the call may write (`written`) and read (`read`) on this rank, per element.
  std::vector<uint8_t> written(recv.pages() * recv.page() / es, 0), read(written.size(), 0);
  for (size_t k = 0; k < layout.size(); ++k) {
    std::vector<int> t = Contributors(layout, c.touched, k);
    bool w = Holds(layout[k], rank) && !t.empty();
    bool rd = std::binary_search(t.begin(), t.end(), rank);
    for (size_t i = layout[k].offset; i < layout[k].offset + layout[k].length; ++i) {
      written[i] = w;
      read[i] = rd;
    }
  }
  FillNaN(c.dtype, recv.data(), count, c.seed + 7);
  FillInput(c.seed, rank, c.dtype, sieveSum, 0, count, sendp);
  for (size_t i = 0; i < count; ++i)  // input nobody may read: NaN, so a read would show
    if (!read[i]) FillNaN(c.dtype, sendp + i * es, 1, c.seed + i);
  std::vector<char> before(recv.data(), recv.data() + count * es);

  const size_t per_page = recv.page() / es;
  for (size_t pg = 0; pg < recv.pages(); ++pg) {
    auto all = [&](const std::vector<uint8_t>& v, uint8_t value) {
      for (size_t i = pg * per_page; i < (pg + 1) * per_page; ++i)
        if (v[i] != value) return false;
      return true;
    };
    if (all(written, 0)) recv.Protect(pg, PROT_READ);
    if (!c.in_place && all(read, 0)) send.Protect(pg, PROT_NONE);
  }
  sieveResult_t res;
  if (c.touched == nullptr) {
    res = sieveAllReduceSubnet(sendp, recv.data(), count, c.dtype, handle, comm, nullptr);
  } else {
    std::vector<unsigned char> row = BitmapRow(*c.touched, rank);
    std::vector<unsigned char> table = ScheduleTable(*c.touched);
    res = sieveAllReduceD2ft(sendp, recv.data(), count, c.dtype, handle,
                             c.schedule ? nullptr : row.data(), c.schedule ? table.data() : nullptr,
                             comm, nullptr);
  }
  recv.Unprotect();
  send.Unprotect();
  if (res != sieveSuccess) {
    std::fprintf(stderr, "rank %d: %s: %s\n", rank, TypeName(c.dtype), sieveGetLastError(comm));
    return -1;
  }
  std::vector<char> expected(count * es);
  ExpectedSubnet(c.seed, n, rank, c.dtype, layout, c.touched, before.data(), expected.data());
  size_t first = 0;
  size_t wrong = CountMismatches(recv.data(), expected.data(), count, es, &first);
  if (wrong > 0)
    std::fprintf(stderr, "rank %d: %s %s %s, %zu segments: %zu of %zu wrong (first at %zu)\n", rank,
                 c.touched ? "d2ft" : "sdp", TypeName(c.dtype),
                 c.in_place ? "in-place" : "out-of-place", layout.size(), wrong, count, first);
  return static_cast<long>(wrong);
}

// Registers `layout`: as segments, or (from_matrix) through an element-level
// SDP mask matrix, which merges runs of equal holder sets.
sieveLayout_t Register(sieveComm_t comm, int n, const TestLayout& layout, bool from_matrix) {
  sieveLayout_t handle = nullptr;
  const size_t count = LayoutCount(layout);
  sieveResult_t res;
  if (from_matrix) {
    std::vector<unsigned char> matrix(static_cast<size_t>(n) * count, 0);
    for (const TestSegment& s : layout)
      for (int r : s.holders)
        std::memset(&matrix[static_cast<size_t>(r) * count + s.offset], 1, s.length);
    res = sieveLayoutFromMaskMatrix(comm, matrix.data(), count, 1, count, &handle);
  } else {
    std::vector<sieveSegment_t> segs = ToApi(layout);
    res = sieveLayoutRegister(comm, count, segs.data(), static_cast<int>(segs.size()), &handle);
  }
  if (res != sieveSuccess) std::fprintf(stderr, "register: %s\n", sieveGetLastError(comm));
  return res == sieveSuccess ? handle : nullptr;
}

// Layout sizes: the first has 1 segment, the second 200, the rest 1..200.
int SegmentsFor(int i, std::mt19937_64& rng) { return i == 0 ? 1 : i == 1 ? 200 : 1 + rng() % 200; }

int RunSdpSweep(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  std::mt19937_64 rng(100 + n);  // the same on every rank
  long bad = 0;
  uint64_t seed = 1000 * n;
  const int layouts = n >= 5 ? 4 : 5;
  for (int li = 0; li < layouts; ++li) {
    TestLayout layout = RandomLayout(rng, n, SegmentsFor(li, rng), li == 1 ? 9 : 40);
    sieveLayout_t handle = Register(comm, n, layout, li % 3 == 2);
    RANK_CHECK(handle != nullptr, "layout %d", li);
    int nseg = 0;
    RANK_CHECK(sieveLayoutNumSegments(handle, &nseg) == sieveSuccess &&
                   (li % 3 == 2 ? nseg <= static_cast<int>(layout.size())
                                : nseg == static_cast<int>(layout.size())),
               "nsegments %d of %zu", nseg, layout.size());
    for (sieveDataType_t dtype : kTypes)
      for (bool in_place : {false, true})
        bad +=
            RunCase(comm, rank, n, handle, layout, {dtype, in_place, nullptr, false, ++seed}) != 0;
    RANK_CHECK(sieveLayoutDeregister(handle) == sieveSuccess, "deregister");
  }
  sieveCounters_t c{};
  RANK_CHECK(sieveCommGetCounters(comm, &c) == sieveSuccess, "counters");
  RANK_CHECK(c.subnet_collectives == static_cast<uint64_t>(layouts) * 8, "subnet_collectives %llu",
             (unsigned long long)c.subnet_collectives);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%ld cases wrong", bad);
  return 0;
}

class SdpSweepTest : public ::testing::TestWithParam<int> {};

TEST_P(SdpSweepTest, RandomLayoutsEveryTypeBothPlacementsMatchFormula) {
  RankSpec spec;
  spec.nranks = GetParam();
  spec.kill_after_s = 150;
  spec.env = {{"SIEVE_TIMEOUT", "30"}, {"SIEVE_SEGMENT_BYTES", "1k"}};
  EXPECT_EQ(RunRanks(spec, RunSdpSweep), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, SdpSweepTest, ::testing::Values(2, 3, 5, 8));

TestLayout EqualSubnetLayout(size_t count, int nsubnets, int n) {
  TestLayout layout(static_cast<size_t>(nsubnets));
  const size_t size = count / nsubnets;
  for (int k = 0; k < nsubnets; ++k) {
    layout[k].offset = size * k;
    layout[k].length = k + 1 == nsubnets ? count - size * k : size;
    for (int r = 0; r < n; ++r) layout[k].holders.push_back(r);
  }
  return layout;
}

int RunD2ftSweep(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  std::mt19937_64 rng(200 + n);
  long bad = 0;
  uint64_t seed = 2000 * n;
  int calls = 0;
  for (int li = 0; li < 4; ++li) {
    TestLayout layout;
    sieveLayout_t handle = nullptr;
    if (li == 0) {  // the usual D2FT layout: equal subnets held by everyone
      const size_t count = 3001;
      const int k = 37;
      layout = EqualSubnetLayout(count, k, n);
      RANK_CHECK(sieveLayoutEqualSubnets(comm, count, k, &handle) == sieveSuccess, "%s",
                 sieveGetLastError(comm));
    } else {
      layout = RandomLayout(rng, n, SegmentsFor(li, rng), 30);
      handle = Register(comm, n, layout, false);
      RANK_CHECK(handle != nullptr, "layout %d", li);
    }
    Touched none = UniformTouched(layout, n, false), all = UniformTouched(layout, n, true);
    Touched half = RandomTouched(rng, layout, n, 0.5), sparse = RandomTouched(rng, layout, n, 0.2);
    const Touched* tables[] = {&none, &all, &half, &sparse, &half};  // `half` twice: cached plan
    int t = 0;
    for (const Touched* touched : tables) {
      for (bool schedule : {false, true}) {
        sieveDataType_t dtype = kTypes[(t + li) % 4];
        bool in_place = (t + li) % 2 == 0;
        bad += RunCase(comm, rank, n, handle, layout,
                       {dtype, in_place, touched, schedule, ++seed}) != 0;
        ++calls;
      }
      ++t;
    }
    RANK_CHECK(sieveLayoutDeregister(handle) == sieveSuccess, "deregister");
  }
  sieveCounters_t c{};
  RANK_CHECK(sieveCommGetCounters(comm, &c) == sieveSuccess, "counters");
  RANK_CHECK(c.subnet_collectives == static_cast<uint64_t>(calls), "subnet_collectives %llu",
             (unsigned long long)c.subnet_collectives);
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%ld cases wrong", bad);
  return 0;
}

class D2ftSweepTest : public ::testing::TestWithParam<int> {};

TEST_P(D2ftSweepTest, RandomAllZeroAllOneTablesBothPathsMatchFormula) {
  RankSpec spec;
  spec.nranks = GetParam();
  spec.kill_after_s = 150;
  spec.env = {{"SIEVE_TIMEOUT", "30"}, {"SIEVE_SEGMENT_BYTES", "1k"}};
  EXPECT_EQ(RunRanks(spec, RunD2ftSweep), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, D2ftSweepTest, ::testing::Values(2, 3, 5, 8));

// Segments of whole pages, so that every page a rank must not write is
// read-only during the call (it would fault otherwise).
int RunPageLayout(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  const size_t per_page = static_cast<size_t>(sysconf(_SC_PAGESIZE)) / 8;  // float64 elements
  const std::vector<std::vector<int>> holders = {{0}, {0, 1, 2}, {1, 2}, {2}, {0, 1}, {0, 2}, {1}};
  TestLayout layout;
  size_t offset = 0;
  for (size_t k = 0; k < holders.size(); ++k) {
    size_t length = per_page * (1 + k % 2);
    layout.push_back({offset, length, holders[k]});
    offset += length;
  }
  sieveLayout_t handle = Register(comm, n, layout, false);
  RANK_CHECK(handle != nullptr, "register");
  // D2FT: segment 1 touched by rank 1 only, segment 4 by nobody, the rest by every holder.
  Touched touched = UniformTouched(layout, n, true);
  for (int r = 0; r < n; ++r) {
    touched[r][4] = 0;
    if (r != 1) touched[r][1] = 0;
  }
  long bad = 0;
  uint64_t seed = 77;
  for (sieveDataType_t dtype : kTypes)
    for (bool in_place : {false, true}) {
      bad += RunCase(comm, rank, n, handle, layout, {dtype, in_place, nullptr, false, ++seed}) != 0;
      bad += RunCase(comm, rank, n, handle, layout,
                     {dtype, in_place, &touched, in_place, ++seed}) != 0;
    }
  RANK_CHECK(sieveLayoutDeregister(handle) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%ld cases wrong", bad);
  return 0;
}

TEST(SubnetNotWrittenTest, PagesOutsideTheRanksSegmentsStayReadOnlyAndUnchanged) {
  RankSpec spec;
  spec.nranks = 3;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "20"}};
  EXPECT_EQ(RunRanks(spec, RunPageLayout), "");
}

// 50 random layouts on 5 ranks, one SDP and one D2FT call each: every call
// completes (the harness kills hung ranks) and matches the formula.
int RunManyLayouts(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  std::mt19937_64 rng(4242);
  long bad = 0;
  uint64_t seed = 5000;
  for (int li = 0; li < 50; ++li) {
    TestLayout layout = RandomLayout(rng, n, 1 + rng() % 200, 1 + rng() % 64);
    Touched touched = RandomTouched(rng, layout, n, 0.5);
    sieveLayout_t handle = Register(comm, n, layout, false);
    RANK_CHECK(handle != nullptr, "layout %d", li);
    bad += RunCase(comm, rank, n, handle, layout,
                   {sieveFloat32, li % 2 == 0, nullptr, false, ++seed}) != 0;
    bad += RunCase(comm, rank, n, handle, layout,
                   {sieveFloat32, li % 2 == 1, &touched, li % 3 == 0, ++seed}) != 0;
    RANK_CHECK(sieveLayoutDeregister(handle) == sieveSuccess, "deregister");
  }
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  RANK_CHECK(bad == 0, "%ld cases wrong", bad);
  return 0;
}

TEST(SubnetNoDeadlockTest, FiftyRandomLayoutsOnFiveRanksComplete) {
  RankSpec spec;
  spec.nranks = 5;
  spec.kill_after_s = 120;
  spec.env = {{"SIEVE_TIMEOUT", "30"}, {"SIEVE_SEGMENT_BYTES", "512"}};
  EXPECT_EQ(RunRanks(spec, RunManyLayouts), "");
}

// Every group's exchange as the direct one (SIEVE_ALGO=direct): the same
// formulas, and interleaved groups of random layouts never deadlock.
TEST(SubnetDirectTest, RandomLayoutsMatchFormula) {
  RankSpec spec;
  spec.nranks = 5;
  spec.kill_after_s = 150;
  spec.env = {{"SIEVE_TIMEOUT", "30"}, {"SIEVE_SEGMENT_BYTES", "1k"}, {"SIEVE_ALGO", "direct"}};
  EXPECT_EQ(RunRanks(spec, RunSdpSweep), "");
}

TEST(SubnetDirectTest, FiftyRandomLayoutsComplete) {
  RankSpec spec;
  spec.nranks = 5;
  spec.kill_after_s = 120;
  spec.env = {{"SIEVE_TIMEOUT", "30"}, {"SIEVE_SEGMENT_BYTES", "512"}, {"SIEVE_ALGO", "direct"}};
  EXPECT_EQ(RunRanks(spec, RunManyLayouts), "");
}

// Ring bytes of one rank at position p of a ring of k over S elements: it
// sends every chunk but its own and its successor's, receives every chunk but
// its own and its predecessor's (as the dense ring).
struct Bytes {
  uint64_t sent = 0, received = 0;
};
Bytes RingBytes(size_t S, int k, int p) {
  if (k < 2) return {};
  auto chunk = [&](int c) { return S * (c + 1) / k - S * c / k; };
  return {2 * S - chunk(p) - chunk((p + 1) % k), 2 * S - chunk(p) - chunk((p + k - 1) % k)};
}

// Expected elements per rank of one call: rings among each distinct
// (contributors, receivers) pair, plus each contributor's chunk to every receiver.
Bytes ExpectedElements(const TestLayout& layout, const Touched* touched, int rank) {
  std::vector<std::pair<std::pair<std::vector<int>, std::vector<int>>, size_t>> groups;
  for (size_t k = 0; k < layout.size(); ++k) {
    std::vector<int> t = Contributors(layout, touched, k), q;
    if (t.empty()) continue;
    for (int r : layout[k].holders)
      if (!std::binary_search(t.begin(), t.end(), r)) q.push_back(r);
    auto key = std::make_pair(t, q);
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == key; });
    if (it == groups.end()) groups.push_back({key, 0}), it = groups.end() - 1;
    it->second += layout[k].length;
  }
  Bytes b;
  for (auto& g : groups) {
    const std::vector<int>& t = g.first.first;
    const std::vector<int>& q = g.first.second;
    const size_t S = g.second;
    const int k = static_cast<int>(t.size());
    auto pos = std::lower_bound(t.begin(), t.end(), rank);
    if (pos != t.end() && *pos == rank) {
      int p = static_cast<int>(pos - t.begin());
      Bytes ring = RingBytes(S, k, p);
      b.sent += ring.sent + (S * (p + 1) / k - S * p / k) * q.size();
      b.received += ring.received;
    } else if (std::binary_search(q.begin(), q.end(), rank)) {
      b.received += S;
    }
  }
  return b;
}

// Bytes per rank from the counters, per call: exactly the ring formula over
// the groups the rank belongs to, and within the stated bound
//   sent_r <= 2 * (bytes of the segments r holds with at least one other holder)
// (SDP; 0 for a rank that shares nothing). D2FT adds the bitmap all-gather,
// (n-1) * ceil(K/8) bytes.
int RunTraffic(int rank, int n, const sieveUniqueId& id) {
  sieveComm_t comm = nullptr;
  RANK_CHECK(InitComm(rank, n, id, &comm) == 0, "%s", sieveGetLastError(nullptr));
  std::mt19937_64 rng(31337);
  TestLayout layout = RandomLayout(rng, n, 150, 2000);
  for (TestSegment& s : layout)  // rank n-1 shares nothing: it holds segments alone or not at all
    if (s.holders.size() > 1 && std::binary_search(s.holders.begin(), s.holders.end(), n - 1))
      s.holders.pop_back();
  const size_t count = LayoutCount(layout);
  sieveLayout_t handle = Register(comm, n, layout, false);
  RANK_CHECK(handle != nullptr, "register");
  std::vector<float> data(count);
  FillInput(9, rank, sieveFloat32, sieveSum, 0, count, data.data());
  Touched touched = RandomTouched(rng, layout, n, 0.5);
  std::vector<unsigned char> row = BitmapRow(touched, rank);
  for (int d2ft = 0; d2ft < 2; ++d2ft) {
    sieveCounters_t before{}, after{};
    RANK_CHECK(sieveCommGetCounters(comm, &before) == sieveSuccess, "counters");
    sieveResult_t res = d2ft ? sieveAllReduceD2ft(data.data(), data.data(), count, sieveFloat32,
                                                  handle, row.data(), nullptr, comm, nullptr)
                             : sieveAllReduceSubnet(data.data(), data.data(), count, sieveFloat32,
                                                    handle, comm, nullptr);
    RANK_CHECK(res == sieveSuccess, "%s", sieveGetLastError(comm));
    RANK_CHECK(sieveCommGetCounters(comm, &after) == sieveSuccess, "counters");
    Bytes want = ExpectedElements(layout, d2ft ? &touched : nullptr, rank);
    uint64_t extra = d2ft ? static_cast<uint64_t>(n - 1) * row.size() : 0;
    uint64_t sent = after.bytes_sent - before.bytes_sent;
    uint64_t received = after.bytes_received - before.bytes_received;
    RANK_CHECK(sent == want.sent * 4 + extra && received == want.received * 4 + extra,
               "%s: sent %llu received %llu, expected %llu and %llu", d2ft ? "d2ft" : "sdp",
               (unsigned long long)sent, (unsigned long long)received,
               (unsigned long long)(want.sent * 4 + extra),
               (unsigned long long)(want.received * 4 + extra));
    if (!d2ft) {
      uint64_t shared = 0;
      for (const TestSegment& s : layout)
        if (s.holders.size() > 1 && std::binary_search(s.holders.begin(), s.holders.end(), rank))
          shared += s.length * 4;
      RANK_CHECK(sent <= 2 * shared && received <= 2 * shared, "sent %llu > 2 x %llu",
                 (unsigned long long)sent, (unsigned long long)shared);
      if (rank == n - 1) RANK_CHECK(sent == 0 && received == 0, "rank sharing nothing moved bytes");
    }
  }
  RANK_CHECK(sieveLayoutDeregister(handle) == sieveSuccess, "deregister");
  RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
  return 0;
}

class SubnetTrafficTest : public ::testing::TestWithParam<int> {};

TEST_P(SubnetTrafficTest, BytesPerRankFollowTheRanksCoverage) {
  RankSpec spec;
  spec.nranks = GetParam();
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "20"}};
  EXPECT_EQ(RunRanks(spec, RunTraffic), "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, SubnetTrafficTest, ::testing::Values(3, 5));

}  // namespace
}  // namespace sieve_test
