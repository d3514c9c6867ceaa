// Masked pack (by index and through the bitmap) / gather-reduce / unpack against their scalar references, bit for
// bit, for every datatype, the ops, densities from empty to full and odd sizes
// (word edges included).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu_isa.h"
#include "kernels/masked_pack.h"

namespace sieve::kernels {
namespace {

struct Mask {
  std::vector<uint64_t> bits;
  std::vector<uint32_t> idx;
};

Mask RandomMask(size_t count, double density, uint64_t seed) {
  Mask m;
  m.bits.assign((count + 63) / 64, 0);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t j = 0; j < count; ++j) {
    if (u(rng) >= density) continue;
    m.bits[j / 64] |= uint64_t{1} << (j % 64);
    m.idx.push_back(static_cast<uint32_t>(j));
  }
  return m;
}

std::vector<char> RandomBytes(size_t bytes, uint64_t seed) {
  std::vector<char> out(bytes);
  std::mt19937_64 rng(seed);
  for (char& c : out) c = static_cast<char>(rng() & 0x3f);  // finite floats of every width
  return out;
}

class MaskedPackTest : public ::testing::TestWithParam<std::tuple<int, double, size_t>> {};

TEST_P(MaskedPackTest, PackGatherReduceAndUnpackMatchReference) {
  const DType dtype = static_cast<DType>(std::get<0>(GetParam()));
  const double density = std::get<1>(GetParam());
  const size_t count = std::get<2>(GetParam()), es = DTypeSize(dtype);
  Mask m = RandomMask(count, density, count * 31 + std::get<0>(GetParam()));
  const size_t nnz = m.idx.size();
  std::vector<char> in = RandomBytes(count * es, 1), wire = RandomBytes(nnz * es + 1, 2);
  std::vector<char> got(nnz * es + 1), want(nnz * es + 1);
  MaskedPackReference(es, in.data(), m.idx.data(), nnz, want.data());
  // The pack by index and through the bitmap, on every instruction-set level, writing
  // nothing past nnz.
  for (int isa = 0; isa <= static_cast<int>(DetectedCpuIsa()); ++isa) {
    CapCpuIsa(static_cast<CpuIsa>(isa));
    std::fill(got.begin(), got.end(), 0x6b);
    MaskedPack(es, in.data(), m.idx.data(), nnz, got.data());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), nnz * es)) << "isa " << isa;
    EXPECT_EQ(got[nnz * es], 0x6b) << "pack wrote past nnz";
    std::vector<char> packed(nnz * es + 1, 0x6b);
    EXPECT_EQ(MaskedCompress(es, in.data(), m.bits.data(), count, packed.data()), nnz);
    EXPECT_EQ(0, std::memcmp(packed.data(), want.data(), nnz * es)) << "isa " << isa;
    EXPECT_EQ(packed[nnz * es], 0x6b) << "compress wrote past nnz";
  }
  for (RedOp op : {RedOp::kSum, RedOp::kProd, RedOp::kMax, RedOp::kMin, RedOp::kAvg}) {
    MaskedGatherReduceReference(dtype, op, in.data(), m.idx.data(), wire.data(), want.data(), nnz);
    for (int isa = 0; isa <= static_cast<int>(DetectedCpuIsa()); ++isa) {
      CapCpuIsa(static_cast<CpuIsa>(isa));
      MaskedGatherReduce(dtype, op, in.data(), m.idx.data(), wire.data(), got.data(), nnz);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), nnz * es)) << RedOpName(op) << " isa " << isa;
    }
  }
  CapCpuIsa(CpuIsa::kAvx512);
  std::vector<char> ref(count * es + 1, 0x11);
  MaskedUnpackReference(es, wire.data(), m.bits.data(), count, ref.data());
  // Every instruction-set level this CPU has, bit for bit against the reference.
  for (int isa = 0; isa <= static_cast<int>(DetectedCpuIsa()); ++isa) {
    CapCpuIsa(static_cast<CpuIsa>(isa));
    std::vector<char> out(count * es + 1, 0x77);
    MaskedUnpack(es, wire.data(), m.bits.data(), count, out.data());
    EXPECT_EQ(0, std::memcmp(out.data(), ref.data(), count * es)) << "isa " << isa;
    EXPECT_EQ(out[count * es], 0x77) << "unpack wrote past count";
    // Per packed range (as the last hop delivers segments), in a shuffled order.
    std::mt19937_64 rng(count + 7 * isa);
    std::vector<size_t> cuts = {0, nnz};
    for (int c = 0; c < 5 && nnz > 0; ++c) cuts.push_back(rng() % (nnz + 1));
    std::sort(cuts.begin(), cuts.end());
    std::vector<size_t> order(cuts.size() - 1);
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<char> ranged(count * es + 1, 0x55);
    for (size_t r : order) {
      size_t begin, end;
      MaskedDenseRange(m.idx.data(), nnz, count, cuts[r], cuts[r + 1], &begin, &end);
      MaskedUnpackRange(es, wire.data() + cuts[r] * es, m.bits.data(), begin, end, ranged.data());
    }
    if (nnz == 0) MaskedUnpackRange(es, wire.data(), m.bits.data(), 0, count, ranged.data());
    EXPECT_EQ(0, std::memcmp(ranged.data(), ref.data(), count * es)) << "isa " << isa;
    EXPECT_EQ(ranged[count * es], 0x55) << "range unpack wrote past count";
  }
  CapCpuIsa(CpuIsa::kAvx512);
}

// Unaligned sub-ranges against the range reference (heads and tails of words).
TEST(MaskedUnpackRangeTest, UnalignedRangesMatchReference) {
  std::mt19937_64 rng(5);
  for (double density : {0.0, 0.001, 0.2, 0.5, 0.9, 1.0}) {
    const size_t count = 4099;
    Mask m = RandomMask(count, density, 17);
    for (size_t es : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
      std::vector<char> packed = RandomBytes(m.idx.size() * es + 1, 9);
      for (int t = 0; t < 20; ++t) {
        size_t a = rng() % (count + 1), b = rng() % (count + 1);
        if (a > b) std::swap(a, b);
        size_t first = std::lower_bound(m.idx.begin(), m.idx.end(), a) - m.idx.begin();
        for (int isa = 0; isa <= static_cast<int>(DetectedCpuIsa()); ++isa) {
          CapCpuIsa(static_cast<CpuIsa>(isa));
          std::vector<char> got(count * es, 0x33), want(count * es, 0x33);
          MaskedUnpackRange(es, packed.data() + first * es, m.bits.data(), a, b, got.data());
          MaskedUnpackRangeReference(es, packed.data() + first * es, m.bits.data(), a, b,
                                     want.data());
          ASSERT_EQ(got, want) << density << " " << es << " [" << a << ", " << b << ") " << isa;
        }
      }
    }
  }
  CapCpuIsa(CpuIsa::kAvx512);
}

// The pack by index with indices in any order, repeated, close together or far apart
// (the AVX-512 4-byte path's window, gather and element-by-element cases alike).
TEST(MaskedPackByIndexTest, AnyIndicesMatchReference) {
  const size_t count = 5000;
  std::vector<char> in = RandomBytes(count * 4, 3);
  std::mt19937_64 rng(4);
  for (int shape = 0; shape < 4; ++shape) {
    std::vector<uint32_t> idx;
    for (size_t k = 0; k < 997; ++k) {
      const uint32_t near = static_cast<uint32_t>(k * 3 + rng() % 5);  // groups within 32
      idx.push_back(shape == 0   ? near
                    : shape == 1 ? static_cast<uint32_t>(rng() % count)
                    : shape == 2 ? static_cast<uint32_t>(count - 1 - near % count)
                                 : static_cast<uint32_t>(k % 7 == 0 ? count - 1 : near));
    }
    std::vector<char> want(idx.size() * 4), want_sum(idx.size() * 4);
    const std::vector<char> wire = RandomBytes(idx.size() * 4, 5 + shape);
    MaskedPackReference(4, in.data(), idx.data(), idx.size(), want.data());
    MaskedGatherReduceReference(DType::kFloat32, RedOp::kSum, in.data(), idx.data(), wire.data(),
                                want_sum.data(), idx.size());
    for (int isa = 0; isa <= static_cast<int>(DetectedCpuIsa()); ++isa) {
      CapCpuIsa(static_cast<CpuIsa>(isa));
      std::vector<char> got(idx.size() * 4 + 1, 0x6b);
      MaskedPack(4, in.data(), idx.data(), idx.size(), got.data());
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size()))
          << "shape " << shape << " isa " << isa;
      EXPECT_EQ(got[want.size()], 0x6b);
      std::vector<char> sum(idx.size() * 4 + 1, 0x6b);
      MaskedGatherReduce(DType::kFloat32, RedOp::kSum, in.data(), idx.data(), wire.data(),
                         sum.data(), idx.size());
      EXPECT_EQ(0, std::memcmp(sum.data(), want_sum.data(), want_sum.size()))
          << "gather-sum, shape " << shape << " isa " << isa;
      EXPECT_EQ(sum[want_sum.size()], 0x6b);
    }
    CapCpuIsa(CpuIsa::kAvx512);
  }
}

// The gather's windows read only between a group's smallest and largest index: an input
// whose last element ends a page, with no access behind it, gathered up to that element by
// groups that end there (a wider load would fault), on every instruction-set level.
TEST(MaskedPackByIndexTest, WindowsStopAtTheLastIndex) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* map = static_cast<char*>(
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(map, MAP_FAILED);
  ASSERT_EQ(mprotect(map + page, page, PROT_NONE), 0);
  const size_t count = page / 4;
  float* in = reinterpret_cast<float*>(map);
  for (size_t j = 0; j < count; ++j) in[j] = static_cast<float>(j);
  for (size_t first : {count - 16, count - 9, count - 8, count - 31}) {
    std::vector<uint32_t> idx;  // every position from first to the page's last element
    for (size_t j = first; j < count; ++j) idx.push_back(static_cast<uint32_t>(j));
    std::vector<float> wire(idx.size(), 0.5f), want(idx.size()), got(idx.size());
    MaskedGatherReduceReference(DType::kFloat32, RedOp::kSum, in, idx.data(), wire.data(),
                                want.data(), idx.size());
    for (int isa = 0; isa <= static_cast<int>(DetectedCpuIsa()); ++isa) {
      CapCpuIsa(static_cast<CpuIsa>(isa));
      MaskedPack(4, in, idx.data(), idx.size(), got.data());
      for (size_t k = 0; k < idx.size(); ++k) EXPECT_EQ(got[k], in[idx[k]]) << "isa " << isa;
      MaskedGatherReduce(DType::kFloat32, RedOp::kSum, in, idx.data(), wire.data(), got.data(),
                         idx.size());
      EXPECT_EQ(got, want) << "isa " << isa << " first " << first;
    }
  }
  CapCpuIsa(CpuIsa::kAvx512);
  munmap(map, 2 * page);
}

INSTANTIATE_TEST_SUITE_P(
    Kernels, MaskedPackTest,
    ::testing::Combine(::testing::Range(0, kNumDTypes),
                       ::testing::Values(0.0, 0.001, 0.2, 0.5, 0.9, 1.0),
                       ::testing::Values(size_t{0}, size_t{1}, size_t{63}, size_t{64},
                                         size_t{65}, size_t{10007}, size_t{70001})));

}  // namespace
}  // namespace sieve::kernels
