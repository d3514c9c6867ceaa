// Every ternary CPU kernel on every instruction-set path (pinned one by one)
// against the scalar references: random odd sizes and offsets, every floating
// dtype, dense and gathered (by index alone, or compressed through the mask's
// bitmap), with and without error feedback; ties of the
// 16-bit comparison; resolution below 2^-16; non-finite input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_isa.h"
#include "kernels/masked_pack.h"
#include "kernels/ternary.h"
#include "kernels/ternary_compress.h"
#include "kernels/ternary_simd.h"

namespace sieve::kernels {
namespace {

const DType kTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBfloat16};

// A buffer of `count` elements of dtype holding f (rounded).
std::vector<char> AsDType(DType dtype, const std::vector<float>& f) {
  std::vector<char> out(f.size() * DTypeSize(dtype) + 64);
  for (size_t j = 0; j < f.size(); ++j) {
    if (dtype == DType::kFloat32) {
      std::memcpy(out.data() + 4 * j, &f[j], 4);
    } else {
      uint16_t h = dtype == DType::kFloat16 ? FloatToHalf(f[j]) : FloatToBf16(f[j]);
      std::memcpy(out.data() + 2 * j, &h, 2);
    }
  }
  return out;
}

// Equal bits, or both NaN (CPU paths may differ in a NaN's payload).
bool SameFloat(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0;
}

std::vector<float> RandomValues(size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  std::vector<float> f(count);
  for (float& x : f) x = real(rng);
  for (size_t j = 0; j < count; j += 11) f[j] = 0.0f;
  return f;
}

// An output of `bytes` starting `shift` bytes past a 64-byte boundary, with guard
// bytes on both sides: what the streaming stores' alignment logic must never touch.
class GuardedOutput {
 public:
  GuardedOutput(size_t bytes, size_t shift) : raw_(bytes + 192, kGuard), bytes_(bytes) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(raw_.data()) + 64;
    at_ = static_cast<size_t>((at & ~uintptr_t{63}) - reinterpret_cast<uintptr_t>(raw_.data())) +
          shift;
  }
  char* data() { return raw_.data() + at_; }
  std::vector<char> Bytes() const {
    return std::vector<char>(raw_.begin() + at_, raw_.begin() + at_ + bytes_);
  }
  bool GuardsIntact() const {
    for (size_t i = 0; i < raw_.size(); ++i)
      if ((i < at_ || i >= at_ + bytes_) && raw_[i] != kGuard) return false;
    return true;
  }

 private:
  static constexpr char kGuard = 0x5a;
  std::vector<char> raw_;
  size_t bytes_, at_ = 0;
};

const OutputStores kStores[] = {OutputStores::kCached, OutputStores::kStreaming};

template <typename Fn>
void ForEachIsa(Fn&& fn) {
  for (int isa = 0; isa <= static_cast<int>(DetectedCpuIsa()); ++isa) {
    CapCpuIsa(static_cast<CpuIsa>(isa));
    SCOPED_TRACE("isa " + std::to_string(isa));
    fn();
  }
  CapCpuIsa(CpuIsa::kAvx512);
}

enum Gather { kDense, kByIndex, kByBitmap };

struct Case {
  DType dtype;
  size_t count, block, offset, elems;
  Gather gather;
  bool feedback;
};

// A mask keeping c.count elements (gaps of 1..gap, gap random per case: some
// cases keep whole bitmap words) over the dense length it returns.
size_t MaskFor(const Case& c, std::mt19937_64& rng, std::vector<uint32_t>* idx,
               std::vector<uint64_t>* bits) {
  if (c.gather == kDense) return c.count;
  const uint32_t gaps[] = {1, 2, 3, 40};
  const uint32_t gap = gaps[rng() % 4];
  uint32_t at = static_cast<uint32_t>(rng() % 70);
  for (size_t k = 0; k < c.count; ++k, at += 1 + static_cast<uint32_t>(rng() % gap))
    idx->push_back(at);
  const size_t dense = at + rng() % 5;
  bits->assign((dense + 63) / 64, 0);
  for (uint32_t j : *idx) (*bits)[j / 64] |= uint64_t{1} << (j % 64);
  return dense;
}

const char* GatherName(Gather g) {
  return g == kDense ? "" : g == kByIndex ? " gathered" : " compressed";
}

// Quantization kernels (abs-max, quantize + pack, quantize + add, feedback
// update) on one random case, every path against the references.
void CheckQuantizers(const Case& c, std::mt19937_64& rng) {
  SCOPED_TRACE(std::string(DTypeName(c.dtype)) + " count " + std::to_string(c.count) +
               " block " + std::to_string(c.block) + " offset " + std::to_string(c.offset) +
               GatherName(c.gather) + (c.feedback ? " feedback" : ""));
  std::vector<uint32_t> idx;
  std::vector<uint64_t> bits;
  const size_t dense = MaskFor(c, rng, &idx, &bits);
  std::vector<float> f = RandomValues(dense, rng);
  std::vector<char> data = AsDType(c.dtype, f);
  std::vector<float> residual(c.count);
  for (float& e : residual) e = std::uniform_real_distribution<float>(-0.5f, 0.5f)(rng);
  if (c.feedback && rng() % 2 == 0) {  // a block a NaN scale poisoned at an earlier call
    const size_t b = rng() % ((c.count + c.block - 1) / c.block);
    for (size_t j = b * c.block; j < std::min(c.count, (b + 1) * c.block); ++j)
      residual[j] = std::numeric_limits<float>::quiet_NaN();
  }
  TernarySource src;
  src.dtype = c.dtype;
  src.data = data.data();
  src.idx = c.gather != kDense ? idx.data() : nullptr;
  src.bits = c.gather == kByBitmap ? bits.data() : nullptr;
  src.residual = c.feedback ? residual.data() : nullptr;
  src.block = c.block;
  src.rng = PhiloxStream{rng(), static_cast<uint32_t>(rng() % 9), rng()};
  std::vector<float> scales((c.count + c.block - 1) / c.block), want_scales(scales.size());
  TernaryAbsMaxReference(src, c.count, want_scales.data());
  src.scales = want_scales.data();
  std::vector<int8_t> q(c.elems);
  std::vector<float> want_residual(c.elems);
  TernaryQuantizeReference(src, c.offset, c.elems, q.data(), want_residual.data());
  std::vector<int32_t> q32(q.begin(), q.end());
  std::vector<uint8_t> want_wire(TernaryPackedBytes(c.elems, 2));
  TernaryPackReference(q32.data(), c.elems, 2, want_wire.data());
  // A received wire of partial sums in [-3, 3] (w = 3) to add to.
  std::vector<int32_t> recv(c.elems);
  for (int32_t& v : recv) v = static_cast<int32_t>(rng() % 7) - 3;
  std::vector<uint8_t> recv_wire(TernaryPackedBytes(c.elems, 3));
  TernaryPackReference(recv.data(), c.elems, 3, recv_wire.data());
  ForEachIsa([&] {
    auto expect_residual = [&](const std::vector<float>& got, const char* what) {
      for (size_t i = 0; i < c.elems; ++i)
        ASSERT_TRUE(SameFloat(got[c.offset + i], want_residual[i]))
            << what << " residual " << i << ": " << got[c.offset + i] << " vs " << want_residual[i];
    };
    TernarySource s = src;
    std::vector<float> res = residual;
    if (c.feedback) s.residual = res.data();
    TernaryAbsMax(s, c.count, scales.data());
    for (size_t b = 0; b < scales.size(); ++b)
      ASSERT_TRUE(SameFloat(scales[b], want_scales[b])) << "scale " << b;
    std::vector<uint8_t> wire(want_wire.size() + 1, 0xee);
    TernaryQuantizePack(s, c.offset, c.elems, 2, wire.data());
    ASSERT_TRUE(std::equal(want_wire.begin(), want_wire.end(), wire.begin()));
    ASSERT_EQ(wire.back(), 0xee);  // nothing written past the image
    if (c.feedback) expect_residual(res, "pack");
    res = residual;
    std::vector<int8_t> work(c.elems + 1, 77);
    TernaryQuantizeAdd(s, c.offset, c.elems, recv_wire.data(), 3, TernaryWork::kInt8, work.data());
    for (size_t i = 0; i < c.elems; ++i) ASSERT_EQ(work[i], q[i] + recv[i]) << i;
    ASSERT_EQ(work.back(), 77);
    if (c.feedback) expect_residual(res, "add");
    res = residual;
    std::vector<int16_t> work16(c.elems);
    TernaryQuantizeAdd(s, c.offset, c.elems, nullptr, 2, TernaryWork::kInt16, work16.data());
    for (size_t i = 0; i < c.elems; ++i) ASSERT_EQ(work16[i], q[i]) << i;
    if (c.feedback) expect_residual(res, "add16");
    if (c.feedback || c.gather != kDense || c.offset != 0) return;
    // The split form: the residual holds g + e_prev, `sent` the rounded value.
    std::vector<float> sums(c.count);
    for (size_t j = 0; j < c.count; ++j) sums[j] = f[j];
    std::vector<float> upd = sums;
    TernaryFeedbackUpdate(c.dtype, data.data(), c.count, c.block, want_scales.data(), src.rng,
                          upd.data());
    for (size_t j = 0; j < c.elems; ++j)
      ASSERT_TRUE(SameFloat(upd[j], TernaryFeedbackResidual(sums[j], want_scales[j / c.block], q[j])))
          << "update " << j;
  });
}

TEST(TernaryIsaTest, QuantizersMatchReferences) {
  std::mt19937_64 rng(5);
  for (DType dtype : kTypes)
    for (Gather gather : {kDense, kByIndex, kByBitmap})
      for (bool feedback : {false, true})
        for (int t = 0; t < 4; ++t) {
          Case c;
          c.dtype = dtype;
          c.count = 1 + rng() % (t == 0 ? 40 : 5000);
          c.block = t == 1 ? 1 + rng() % 9 : (t == 2 ? 2048 : 1 + rng() % 700);
          c.offset = rng() % c.count;
          if (t == 3) c.offset = 0;
          c.elems = c.count - c.offset - rng() % (c.count - c.offset + 1) / 2;
          c.gather = gather;
          c.feedback = feedback;
          CheckQuantizers(c, rng);
          if (HasFatalFailure()) return;
        }
}

// Error feedback's scale is the gradient's (kernels/ternary.h): however large the
// residual, the abs-max is g's alone (the quantizers clip g + e_prev above it, as
// QuantizersMatchReferences checks), and a block whose residual a NaN scale poisoned
// (every element NaN) gets a NaN scale again; on every path, gathered or not.
TEST(TernaryIsaTest, FeedbackScalesAreTheGradients) {
  std::mt19937_64 rng(11);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (DType dtype : kTypes)
    for (Gather gather : {kDense, kByIndex, kByBitmap}) {
      Case c{dtype, 3000 + rng() % 2000, 1 + rng() % 700, 0, 0, gather, true};
      SCOPED_TRACE(std::string(DTypeName(dtype)) + GatherName(gather) + " block " +
                   std::to_string(c.block));
      std::vector<uint32_t> idx;
      std::vector<uint64_t> bits;
      const size_t dense = MaskFor(c, rng, &idx, &bits);
      std::vector<char> data = AsDType(dtype, RandomValues(dense, rng));
      const size_t nblocks = (c.count + c.block - 1) / c.block;
      std::vector<float> residual(c.count);
      for (float& e : residual) e = std::uniform_real_distribution<float>(-1e3f, 1e3f)(rng);
      const size_t poisoned = rng() % nblocks;
      for (size_t j = poisoned * c.block; j < std::min(c.count, (poisoned + 1) * c.block); ++j)
        residual[j] = nan;
      TernarySource src;
      src.dtype = dtype;
      src.data = data.data();
      src.idx = gather != kDense ? idx.data() : nullptr;
      src.bits = gather == kByBitmap ? bits.data() : nullptr;
      src.block = c.block;
      std::vector<float> want(nblocks), got(nblocks);
      TernaryAbsMaxReference(src, c.count, want.data());  // no residual: g alone
      want[poisoned] = nan;
      src.residual = residual.data();
      ForEachIsa([&] {
        TernaryAbsMax(src, c.count, got.data());
        for (size_t b = 0; b < nblocks; ++b)
          ASSERT_TRUE(SameFloat(got[b], want[b]))
              << "scale " << b << ": " << got[b] << " vs " << want[b];
      });
      if (HasFatalFailure()) return;
    }
}

// Blocks longer than the abs-max's runs over the caller's float32 (2^20 elements): the
// max of a block comes from any of its runs, the last block is partial.
TEST(TernaryIsaTest, AbsMaxOfBlocksLongerThanARun) {
  std::mt19937_64 rng(13);
  const size_t block = (size_t{1} << 20) + 77, count = 2 * block + 12345;
  std::vector<float> f = RandomValues(count, rng);
  f[block + (size_t{1} << 20) + 3] = 7.5f;  // block 1's max, in its second run
  f[2 * block + 100] = -6.25f;              // the partial block's
  TernarySource src;
  src.data = f.data();
  src.block = block;
  std::vector<float> want(3), got(3);
  TernaryAbsMaxReference(src, count, want.data());
  ASSERT_EQ(want[1], 7.5f);
  ASSERT_EQ(want[2], 6.25f);
  ForEachIsa([&] {
    TernaryAbsMax(src, count, got.data());
    for (size_t b = 0; b < 3; ++b) ASSERT_TRUE(SameFloat(got[b], want[b])) << b;
  });
}

// L > 1 levels: quantize + pack (first hop, TernaryBits(L) bits), quantize + add
// (int8 or int16 work, a received partial sum of one rank) and the residuals, on
// every path against TernaryQuantizeReference's definition; the split feedback
// update too. Scales below the largest |g| of a few blocks hit q = +-L.
void CheckLevels(const Case& c, int levels, std::mt19937_64& rng) {
  SCOPED_TRACE("levels " + std::to_string(levels) + " " + DTypeName(c.dtype) + " count " +
               std::to_string(c.count) + " block " + std::to_string(c.block) + " offset " +
               std::to_string(c.offset) + GatherName(c.gather) +
               (c.feedback ? " feedback" : ""));
  std::vector<uint32_t> idx;
  std::vector<uint64_t> bits;
  const size_t dense = MaskFor(c, rng, &idx, &bits);
  std::vector<float> f = RandomValues(dense, rng);
  std::vector<char> data = AsDType(c.dtype, f);
  std::vector<float> residual(c.count);
  for (float& e : residual) e = std::uniform_real_distribution<float>(-0.5f, 0.5f)(rng);
  TernarySource src;
  src.dtype = c.dtype;
  src.levels = levels;
  src.data = data.data();
  src.idx = c.gather != kDense ? idx.data() : nullptr;
  src.bits = c.gather == kByBitmap ? bits.data() : nullptr;
  src.residual = c.feedback ? residual.data() : nullptr;
  src.block = c.block;
  src.rng = PhiloxStream{rng(), static_cast<uint32_t>(rng() % 9), rng()};
  std::vector<float> scales((c.count + c.block - 1) / c.block);
  TernaryAbsMaxReference(src, c.count, scales.data());
  for (size_t b = 0; b < scales.size(); b += 5) scales[b] *= 0.75f;  // some |g| above s
  src.scales = scales.data();
  std::vector<int8_t> q(c.elems);
  std::vector<float> want_residual(c.elems);
  TernaryQuantizeReference(src, c.offset, c.elems, q.data(), want_residual.data());
  std::vector<int32_t> q32(q.begin(), q.end());
  bool saw_top = false;
  for (int32_t v : q32) {
    ASSERT_LE(std::abs(v), levels);
    saw_top = saw_top || std::abs(v) == levels;
  }
  const int w1 = TernaryBits(levels), w2 = TernaryBits(2 * levels);
  std::vector<uint8_t> want_wire(TernaryPackedBytes(c.elems, w1));
  TernaryPackReference(q32.data(), c.elems, w1, want_wire.data());
  std::vector<int32_t> recv(c.elems);
  for (int32_t& v : recv) v = static_cast<int32_t>(rng() % (2 * levels + 1)) - levels;
  std::vector<uint8_t> recv_wire(TernaryPackedBytes(c.elems, w1));
  TernaryPackReference(recv.data(), c.elems, w1, recv_wire.data());
  const TernaryWork wt = TernaryWorkFor(2, levels);
  ForEachIsa([&] {
    auto expect_residual = [&](const std::vector<float>& got, const char* what) {
      for (size_t i = 0; i < c.elems; ++i)
        ASSERT_TRUE(SameFloat(got[c.offset + i], want_residual[i]))
            << what << " residual " << i << ": " << got[c.offset + i] << " vs " << want_residual[i];
    };
    TernarySource s = src;
    std::vector<float> res = residual;
    if (c.feedback) s.residual = res.data();
    std::vector<uint8_t> wire(want_wire.size() + 1, 0xee);
    TernaryQuantizePack(s, c.offset, c.elems, w1, wire.data());
    ASSERT_TRUE(std::equal(want_wire.begin(), want_wire.end(), wire.begin()));
    ASSERT_EQ(wire.back(), 0xee);
    if (c.feedback) expect_residual(res, "pack");
    res = residual;
    std::vector<int32_t> sums(c.elems + 1, 77);
    if (wt == TernaryWork::kInt8) {
      std::vector<int8_t> work(c.elems + 1, 77);
      TernaryQuantizeAdd(s, c.offset, c.elems, recv_wire.data(), w1, wt, work.data());
      std::copy(work.begin(), work.end(), sums.begin());
    } else {
      std::vector<int16_t> work(c.elems + 1, 77);
      TernaryQuantizeAdd(s, c.offset, c.elems, recv_wire.data(), w1, wt, work.data());
      std::copy(work.begin(), work.end(), sums.begin());
    }
    for (size_t i = 0; i < c.elems; ++i) ASSERT_EQ(sums[i], q[i] + recv[i]) << i;
    ASSERT_EQ(sums.back(), 77);
    if (c.feedback) expect_residual(res, "add");
    res = residual;
    std::vector<int32_t> work32(c.elems);
    TernaryQuantizeAdd(s, c.offset, c.elems, nullptr, w2, TernaryWork::kInt32, work32.data());
    for (size_t i = 0; i < c.elems; ++i) ASSERT_EQ(work32[i], q[i]) << i;
    if (c.feedback) expect_residual(res, "add32");
    if (c.feedback || c.gather != kDense || c.offset != 0) return;
    std::vector<float> upd(c.count);
    for (size_t j = 0; j < c.count; ++j) upd[j] = f[j];
    TernaryFeedbackUpdate(c.dtype, data.data(), c.count, c.block, scales.data(), src.rng,
                          upd.data(), levels);
    for (size_t j = 0; j < c.elems; ++j)
      ASSERT_TRUE(SameFloat(upd[j], f[j] - scales[j / c.block] * static_cast<float>(q[j]) /
                                               static_cast<float>(levels)))
          << "update " << j;
  });
  if (c.elems > 200) {
    EXPECT_TRUE(saw_top) << "no code reached +-L";
  }
}

TEST(TernaryIsaTest, LevelsQuantizersMatchReferences) {
  std::mt19937_64 rng(15);
  for (int levels : {2, 3, 7, 127})
    for (DType dtype : kTypes)
      for (Gather gather : {kDense, kByIndex, kByBitmap})
        for (bool feedback : {false, true})
          for (int t = 0; t < 3; ++t) {
            Case c;
            c.dtype = dtype;
            c.count = 1 + rng() % (t == 0 ? 40 : 3000);
            c.block = t == 1 ? 1 + rng() % 9 : 1 + rng() % 700;
            c.offset = t == 2 ? 0 : rng() % c.count;
            c.elems = c.count - c.offset - rng() % (c.count - c.offset + 1) / 2;
            c.gather = gather;
            c.feedback = feedback;
            CheckLevels(c, levels, rng);
            if (HasFatalFailure()) return;
          }
}

// TernaryStage: another rank quantizing this rank's staged values (float32, no mask,
// no residual, this rank's stream) gets this rank's codes bit for bit (and, without
// feedback, its abs-maxes: with it the scale is the gradient's, which the image carries),
// on every path, every dtype, gathered or not, with feedback or not, at 1 and 3 levels,
// non-finite values included; staging reads the residual only, and a range staged at an
// offset is that part of the whole.
TEST(TernaryIsaTest, StagedValuesQuantizeLikeTheSource) {
  std::mt19937_64 rng(25);
  for (int levels : {1, 3})
    for (DType dtype : kTypes)
      for (Gather gather : {kDense, kByIndex})
        for (bool feedback : {false, true}) {
          Case c;
          c.dtype = dtype;
          c.count = 1 + rng() % 3000;
          c.block = 1 + rng() % 300;
          c.gather = gather;
          c.feedback = feedback;
          SCOPED_TRACE(std::string(DTypeName(dtype)) + " count " + std::to_string(c.count) +
                       " block " + std::to_string(c.block) + GatherName(gather) +
                       (feedback ? " feedback" : "") + " levels " + std::to_string(levels));
          std::vector<uint32_t> idx;
          std::vector<uint64_t> bits;
          const size_t dense = MaskFor(c, rng, &idx, &bits);
          std::vector<float> f = RandomValues(dense, rng);
          if (dense > 100) {
            f[rng() % dense] = std::numeric_limits<float>::quiet_NaN();
            f[rng() % dense] = -std::numeric_limits<float>::infinity();
          }
          std::vector<char> data = AsDType(dtype, f);
          std::vector<float> residual(c.count);
          for (float& e : residual) e = std::uniform_real_distribution<float>(-0.5f, 0.5f)(rng);
          TernarySource src;
          src.dtype = dtype;
          src.levels = levels;
          src.data = data.data();
          src.idx = gather == kByIndex ? idx.data() : nullptr;
          src.residual = feedback ? residual.data() : nullptr;
          src.block = c.block;
          src.rng = PhiloxStream{rng(), static_cast<uint32_t>(rng() % 9), rng()};
          const std::vector<float> residual_before = residual;
          std::vector<float> staged(c.count);
          TernaryStage(src, 0, c.count, staged.data());
          ASSERT_EQ(std::memcmp(residual.data(), residual_before.data(), 4 * c.count), 0);
          const size_t off = rng() % c.count;
          std::vector<float> part(c.count - off);
          TernaryStage(src, off, part.size(), part.data());
          for (size_t i = 0; i < part.size(); ++i) ASSERT_TRUE(SameFloat(part[i], staged[off + i]));
          TernarySource as_values;
          as_values.levels = levels;
          as_values.data = staged.data();
          as_values.block = c.block;
          as_values.rng = src.rng;
          const size_t nblocks = (c.count + c.block - 1) / c.block;
          const int w = TernaryBits(levels);
          ForEachIsa([&] {
            std::vector<float> want(nblocks), got(nblocks);
            TernaryAbsMax(src, c.count, want.data());
            TernaryAbsMax(as_values, c.count, got.data());
            for (size_t b = 0; b < nblocks && !feedback; ++b)
              ASSERT_TRUE(SameFloat(got[b], want[b])) << b;
            for (size_t b = 0; b < nblocks; b += 4) want[b] *= 0.75f;  // some |g| above s
            TernarySource s = src, v = as_values;
            std::vector<float> res = residual_before;
            if (feedback) s.residual = res.data();
            s.scales = v.scales = want.data();
            std::vector<uint8_t> want_wire(TernaryPackedBytes(c.count, w)), wire(want_wire.size());
            TernaryQuantizePack(s, 0, c.count, w, want_wire.data());
            TernaryQuantizePack(v, 0, c.count, w, wire.data());
            ASSERT_EQ(wire, want_wire);
          });
          if (HasFatalFailure()) return;
        }
}

TEST(TernaryIsaTest, PackUnpackEveryWidthMatchesReference) {
  std::mt19937_64 rng(6);
  ForEachIsa([&] {
    for (size_t n : {size_t{1}, size_t{9}, size_t{63}, size_t{64}, size_t{65}, size_t{513},
                     size_t{4099}}) {
      for (int w = 2; w <= 8; ++w) {
        const int lim = (1 << (w - 1)) - 1;
        std::vector<int32_t> v(n);
        std::vector<int8_t> work(n);
        for (size_t i = 0; i < n; ++i)
          work[i] = static_cast<int8_t>(v[i] = static_cast<int32_t>(rng() % (2 * lim + 1)) - lim);
        std::vector<uint8_t> want(TernaryPackedBytes(n, w)), got(want.size() + 1, 0xee);
        TernaryPackReference(v.data(), n, w, want.data());
        TernaryPack(TernaryWork::kInt8, work.data(), n, w, got.data());
        ASSERT_TRUE(std::equal(want.begin(), want.end(), got.begin())) << "n " << n << " w " << w;
        ASSERT_EQ(got.back(), 0xee);
        std::vector<int8_t> back(n + 1, 5);
        TernaryUnpack(TernaryWork::kInt8, want.data(), n, w, /*accumulate=*/false, back.data());
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], work[i]) << i << " w " << w;
        TernaryUnpack(TernaryWork::kInt8, want.data(), n, w, /*accumulate=*/true, back.data());
        for (size_t i = 0; i < n; ++i)
          ASSERT_EQ(back[i], static_cast<int8_t>(2 * work[i])) << i << " w " << w;  // wraps as int8
        ASSERT_EQ(back[n], 5);
      }
    }
  });
}

TEST(TernaryIsaTest, UnpackAtAnyElementOfALongerImage) {
  std::mt19937_64 rng(10);
  const size_t total = 1237;
  for (int w : {2, 3, 5, 8}) {
    std::vector<int32_t> v(total);
    for (int32_t& x : v) x = static_cast<int32_t>(rng() % 3) - 1;
    std::vector<uint8_t> wire(TernaryPackedBytes(total, w));
    TernaryPackReference(v.data(), total, w, wire.data());
    ForEachIsa([&] {
      for (int t = 0; t < 20; ++t) {
        const size_t first = rng() % total, elems = rng() % (total - first + 1);
        std::vector<int8_t> work(elems + 1, 1);
        TernaryUnpackAt(TernaryWork::kInt8, wire.data(), first, elems, w, /*accumulate=*/true,
                        work.data());
        for (size_t i = 0; i < elems; ++i) ASSERT_EQ(work[i], 1 + v[first + i]) << first + i;
        ASSERT_EQ(work[elems], 1);
        std::vector<int16_t> w16(elems);
        TernaryUnpackAt(TernaryWork::kInt16, wire.data(), first, elems, w, false, w16.data());
        for (size_t i = 0; i < elems; ++i) ASSERT_EQ(w16[i], v[first + i]) << first + i;
      }
    });
  }
}

TEST(TernaryIsaTest, DequantizeMatchesDefinition) {
  std::mt19937_64 rng(7);
  for (DType dtype : kTypes) {
    const size_t es = DTypeSize(dtype);
    for (int t = 0; t < 6; ++t) {
      const size_t count = 1 + rng() % 3000, block = 1 + rng() % 500, offset = rng() % 100;
      std::vector<float> scales((offset + count + block - 1) / block);
      for (float& s : scales) s = std::uniform_real_distribution<float>(0.0f, 3.0f)(rng);
      if (t == 5) scales[0] = std::numeric_limits<float>::quiet_NaN();
      if (t == 4) scales.back() = 3e-38f;  // subnormal results (divisors 4, 2^20 multiply)
      // Even t: a ternary sum's range, [-16, 15] (the AVX-512 table of the values for a
      // divisor that is not a power of two), with one in 40 outside it; odd t: any sum.
      std::vector<int8_t> sums(count);
      for (int8_t& v : sums)
        v = static_cast<int8_t>(t % 2 == 1 || rng() % 40 == 0 ? rng() % 255 - 127
                                                              : rng() % 32 - 16);
      for (int divisor : {1, 7, 3, 4, 1 << 20}) {
        std::vector<float> want_f(count);
        for (size_t i = 0; i < count; ++i)
          want_f[i] = TernaryDequantizeOne(sums[i], scales[(offset + i) / block], divisor);
        std::vector<char> want = AsDType(dtype, want_f);
        want.resize(count * es);
        ForEachIsa([&] {
          // Streaming stores from the first vector-aligned element of each scale block's
          // run, whatever the output's (element-aligned) start.
          for (OutputStores stores : kStores)
            for (size_t shift : {size_t{0}, es, 5 * es, size_t{60}}) {
              GuardedOutput got(count * es, shift);
              TernaryDequantizeRange(dtype, TernaryWork::kInt8, sums.data(), offset, count, block,
                                     scales.data(), divisor, got.data(), stores);
              ASSERT_TRUE(got.GuardsIntact()) << "shift " << shift;
              ASSERT_EQ(got.Bytes(), want)
                  << DTypeName(dtype) << " divisor " << divisor << " shift " << shift << " stores "
                  << static_cast<int>(stores);
            }
        });
      }
    }
  }
}

// The one-shot's fused decode against the reference and against today's sequence
// (unpack the first image, add the others, dequantize): n images of random codes in
// [-L, L] (and all +L / all -L, the extremes of the sums), random odd sizes,
// ranges starting inside a block and crossing block boundaries, unaligned images.
TEST(TernaryIsaTest, GatherSumAndDecodeMatchReferenceAndUnfusedSequence) {
  std::mt19937_64 rng(9);
  for (int levels : {1, 7})
    for (int n : {2, 3, 4, 8, 127}) {
      const int w = TernaryBits(levels);
      const TernaryWork wt = TernaryWorkFor(n, levels);
      for (DType dtype : kTypes)
        for (int t = 0; t < 4; ++t) {
          const size_t es = DTypeSize(dtype);
          const size_t elems = t == 0 ? 1 + rng() % 200 : 1 + 2 * (rng() % 3000);
          const size_t block = t == 3 ? 2048 : 1 + rng() % 700, offset = rng() % 1000;
          std::vector<float> scales((offset + elems + block - 1) / block);
          for (float& s : scales) s = std::uniform_real_distribution<float>(0.0f, 3.0f)(rng);
          std::vector<std::vector<uint8_t>> images(n);
          std::vector<const void*> wires(n);
          for (int r = 0; r < n; ++r) {
            std::vector<int32_t> q(elems);
            for (size_t i = 0; i < elems; ++i)
              q[i] = t == 1 ? (i % 2 == 0 ? levels : -levels)
                            : static_cast<int32_t>(rng() % (2 * levels + 1)) - levels;
            images[r].assign(TernaryPackedBytes(elems, w) + 3, 0);
            TernaryPackReference(q.data(), elems, w, images[r].data() + r % 3);
            wires[r] = images[r].data() + r % 3;
          }
          for (int divisor : {1, levels, n * levels}) {
            std::vector<char> want(elems * es);
            TernaryGatherDecodeReference(dtype, wires.data(), n, w, offset, elems, block,
                                         scales.data(), divisor, want.data());
            ForEachIsa([&] {
              std::vector<char> sums(elems * static_cast<size_t>(wt));
              for (int r = 0; r < n; ++r) TernaryUnpack(wt, wires[r], elems, w, r > 0, sums.data());
              std::vector<char> gathered(elems * static_cast<size_t>(wt) + 1, 0x5a);
              TernaryGatherSum(wt, wires.data(), n, w, elems, gathered.data());
              ASSERT_EQ(gathered.back(), 0x5a);
              gathered.pop_back();
              ASSERT_EQ(gathered, sums) << "sums: n " << n << " L " << levels << " elems " << elems;
              std::vector<char> today(elems * es);
              TernaryDequantizeRange(dtype, wt, sums.data(), offset, elems, block, scales.data(),
                                     divisor, today.data());
              std::vector<char> got(elems * es + 1, 0x5a);
              TernaryGatherDecode(dtype, wt, wires.data(), n, w, offset, elems, block,
                                  scales.data(), divisor, got.data());
              ASSERT_EQ(got.back(), 0x5a);
              got.pop_back();
              ASSERT_EQ(got, want) << DTypeName(dtype) << " n " << n << " L " << levels << " elems "
                                   << elems << " divisor " << divisor;
              ASSERT_EQ(got, today) << DTypeName(dtype) << " n " << n << " L " << levels;
              GuardedOutput streamed(elems * es, t * es);
              TernaryGatherDecode(dtype, wt, wires.data(), n, w, offset, elems, block,
                                  scales.data(), divisor, streamed.data(),
                                  OutputStores::kStreaming);
              ASSERT_TRUE(streamed.GuardsIntact());
              ASSERT_EQ(streamed.Bytes(), want) << DTypeName(dtype) << " streamed, n " << n;
            });
          }
        }
    }
}

TEST(TernaryIsaTest, DequantizeScatterMatchesReference) {
  std::mt19937_64 rng(8);
  for (DType dtype : kTypes)
    for (double density : {0.0, 0.01, 0.3, 0.5, 0.97, 1.0}) {
      const size_t count = 1 + rng() % 4000, es = DTypeSize(dtype);
      std::vector<uint32_t> idx;
      std::vector<uint64_t> bits((count + 63) / 64);
      for (size_t j = 0; j < count; ++j)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < density) {
          idx.push_back(static_cast<uint32_t>(j));
          bits[j / 64] |= uint64_t{1} << (j % 64);
        }
      const size_t nnz = idx.size(), block = 1 + rng() % 100;
      std::vector<float> scales(nnz / block + 2);
      for (float& s : scales) s = std::uniform_real_distribution<float>(0.0f, 3.0f)(rng);
      if (density == 0.5) scales[0] = 3e-38f;  // subnormal results (divisors 4, 2^20 multiply)
      std::vector<int32_t> sums32(nnz + 1);
      std::vector<int8_t> sums8(nnz + 1);
      for (size_t k = 0; k < nnz; ++k) sums8[k] = static_cast<int8_t>(sums32[k] = rng() % 9 - 4);
      const size_t a = nnz == 0 ? 0 : rng() % nnz, b = a + (nnz == a ? 0 : rng() % (nnz - a + 1));
      const size_t begin = a == 0 ? 0 : idx[a - 1] + 1, end = b == nnz ? count : idx[b - 1] + 1;
      if (a == b && a != 0 && b != nnz) continue;
      for (int divisor : {1, 3, 4, 1 << 20}) {
        std::vector<char> want(count * es, 0x5a);
        TernaryDequantizeScatterReference(dtype, sums32.data() + a, a, block, scales.data(),
                                          divisor, bits.data(), begin, end, want.data());
        ForEachIsa([&] {
          // Streaming stores where the buffer is 64-byte aligned (shift 0), else none.
          for (OutputStores stores : kStores)
            for (size_t shift : {size_t{0}, es, size_t{16}}) {
              GuardedOutput got(count * es, shift);
              std::memset(got.data(), 0x5a, count * es);
              TernaryDequantizeScatter(dtype, TernaryWork::kInt8, sums8.data() + a, a, block,
                                       scales.data(), divisor, bits.data(), begin, end, got.data(),
                                       stores);
              ASSERT_TRUE(got.GuardsIntact()) << "shift " << shift;
              ASSERT_EQ(got.Bytes(), want)
                  << DTypeName(dtype) << " density " << density << " divisor " << divisor
                  << " shift " << shift << " stores " << static_cast<int>(stores);
            }
        });
      }
    }
}

// The fused gather + abs-max of the masked call against the references one
// after the other: odd sizes over several of its steps, blocks smaller and
// larger than a step, masks of every density, every dtype, with and without
// feedback, non-finite elements in some blocks (their parts must combine).
TEST(TernaryIsaTest, CompressAbsMaxMatchesCompressThenAbsMax) {
  std::mt19937_64 rng(12);
  const float inf = std::numeric_limits<float>::infinity();
  for (DType dtype : kTypes)
    for (double density : {0.0, 0.01, 0.3, 0.5, 0.97, 1.0})
      for (bool feedback : {false, true}) {
        const size_t count = 1 + rng() % 20000, es = DTypeSize(dtype);
        const size_t blocks[] = {1, 7, 300, 2048, 5001};
        const size_t block = blocks[rng() % 5];
        SCOPED_TRACE(std::string(DTypeName(dtype)) + " count " + std::to_string(count) +
                     " block " + std::to_string(block) + " density " + std::to_string(density) +
                     (feedback ? " feedback" : ""));
        std::vector<uint32_t> idx;
        std::vector<uint64_t> bits((count + 63) / 64);
        for (size_t j = 0; j < count; ++j)
          if (std::uniform_real_distribution<double>(0, 1)(rng) < density) {
            idx.push_back(static_cast<uint32_t>(j));
            bits[j / 64] |= uint64_t{1} << (j % 64);
          }
        const size_t nnz = idx.size();
        std::vector<float> f = RandomValues(count, rng);
        if (count > 5000) f[4321] = inf, f[count - 1] = -inf;
        if (count > 9000) f[8765] = std::numeric_limits<float>::quiet_NaN();
        std::vector<char> data = AsDType(dtype, f);
        std::vector<float> residual(nnz);
        for (float& e : residual) e = std::uniform_real_distribution<float>(-0.5f, 0.5f)(rng);
        std::vector<char> want_packed(nnz * es + 1);
        MaskedPackReference(es, data.data(), idx.data(), nnz, want_packed.data());
        TernarySource packed = TernarySourceOf(dtype, want_packed.data(), nullptr, block, nullptr);
        if (feedback) packed.residual = residual.data();
        const size_t nblocks = (nnz + block - 1) / block;
        std::vector<float> want_scales(nblocks);
        TernaryAbsMaxReference(packed, nnz, want_scales.data());
        TernarySource src = TernarySourceOf(dtype, data.data(), nullptr, block, nullptr);
        if (feedback) src.residual = residual.data();
        ForEachIsa([&] {
          std::vector<char> got_packed(nnz * es + 1, 0x3c);
          std::vector<float> scales(nblocks + 1, -1.0f);
          ASSERT_EQ(TernaryCompressAbsMax(src, bits.data(), count, got_packed.data(),
                                          scales.data()),
                    nnz);
          ASSERT_EQ(std::memcmp(got_packed.data(), want_packed.data(), nnz * es), 0);
          ASSERT_EQ(got_packed.back(), 0x3c);  // nothing written past the packed vector
          for (size_t b = 0; b < nblocks; ++b)
            ASSERT_TRUE(SameFloat(scales[b], want_scales[b]))
                << "scale " << b << ": " << scales[b] << " vs " << want_scales[b];
          ASSERT_EQ(scales[nblocks], -1.0f);
        });
        // The same pass in parts, as the scale pieces ask for it (block ends, rising):
        // each part packs at least what it was asked for, the blocks wholly below
        // what it packed are final, and the parts add up to the same bits.
        ForEachIsa([&] {
          std::vector<char> got_packed(nnz * es + 1, 0x3c);
          std::vector<float> scales(nblocks + 1, -1.0f);
          TernaryCompressor gather(src, bits.data(), count, got_packed.data(), scales.data());
          size_t end = 0;
          while (!gather.done()) {
            end = std::min(nnz, end + block * (1 + rng() % 3));
            const size_t made = gather.Through(end);
            ASSERT_GE(made, end);
            ASSERT_LE(made, nnz);
            for (size_t b = 0; b < made / block; ++b)
              ASSERT_TRUE(SameFloat(scales[b], want_scales[b]))
                  << "after " << made << ", scale " << b;
            if (made == nnz && end == nnz) break;
          }
          ASSERT_EQ(gather.Through(nnz), nnz);
          ASSERT_EQ(std::memcmp(got_packed.data(), want_packed.data(), nnz * es), 0);
          ASSERT_EQ(got_packed.back(), 0x3c);
          for (size_t b = 0; b < nblocks; ++b)
            ASSERT_TRUE(SameFloat(scales[b], want_scales[b])) << "scale " << b;
          ASSERT_EQ(scales[nblocks], -1.0f);
        });
      }
}

// Elements whose 16 bits tie with their level (x = h + f, 0 < f < 1): the
// refinement decides, on every path exactly as the 32-bit reference does.
TEST(TernaryIsaTest, TiesAreRefinedLikeTheReference) {
  std::mt19937_64 rng(9);
  const size_t count = 3001;
  const PhiloxStream stream{rng(), 2, rng()};
  std::vector<float> f(count);
  for (size_t j = 0; j < count; ++j) {
    const uint32_t h = PhiloxHalf(PhiloxOct(stream, j >> 3), j);
    // x = |g| / 1 * 2^16 = h + frac: frac of 8 bits (exact), sometimes 1/2.
    const float frac = j % 3 == 0 ? 0.5f : static_cast<float>(1 + rng() % 255) / 256.0f;
    f[j] = (static_cast<float>(h) + frac) / 65536.0f * (j % 2 == 0 ? 1.0f : -1.0f);
  }
  std::vector<float> scales((count + 99) / 100, 1.0f);
  const TernarySource src = TernarySourceOf(DType::kFloat32, f.data(), nullptr, 100, scales.data(),
                                            stream);
  std::vector<int8_t> q(count);
  TernaryQuantizeReference(src, 0, count, q.data());
  int kept = 0;
  for (int8_t v : q) kept += v != 0;
  EXPECT_GT(kept, 300);  // both outcomes occur
  EXPECT_LT(kept, 2700);
  ForEachIsa([&] {
    std::vector<int8_t> work(count);
    TernaryQuantizeAdd(src, 0, count, nullptr, 2, TernaryWork::kInt8, work.data());
    for (size_t j = 0; j < count; ++j) ASSERT_EQ(work[j], q[j]) << j;
  });
}

// Ties at L = 4 levels: with the scale 4, y = |g| exactly, set to base + (h + frac) / 2^16
// (base 0..3, frac of 6 bits: 24 significant bits), so x = h + frac is a tie for every
// element; codes and wire as the reference's, with scale blocks inside a batch (100) and
// spanning several (2048).
TEST(TernaryIsaTest, LevelsTiesAreRefinedLikeTheReference) {
  std::mt19937_64 rng(13);
  const size_t count = 3001;
  const int levels = 4, w = TernaryBits(levels);
  const PhiloxStream stream{rng(), 1, rng()};
  std::vector<float> f(count);
  for (size_t j = 0; j < count; ++j) {
    const uint32_t h = PhiloxHalf(PhiloxOct(stream, j >> 3), j);
    const float frac = static_cast<float>(1 + rng() % 63) / 64.0f;
    const float base = static_cast<float>(rng() % levels);
    f[j] = (base + (static_cast<float>(h) + frac) / 65536.0f) * (j % 2 == 0 ? 1.0f : -1.0f);
  }
  for (size_t block : {size_t{100}, size_t{2048}}) {
    SCOPED_TRACE("block " + std::to_string(block));
    std::vector<float> scales((count + block - 1) / block, 4.0f);
    TernarySource src =
        TernarySourceOf(DType::kFloat32, f.data(), nullptr, block, scales.data(), stream);
    src.levels = levels;
    std::vector<int8_t> q(count);
    TernaryQuantizeReference(src, 0, count, q.data());
    int up = 0;
    for (size_t j = 0; j < count; ++j) up += std::abs(q[j]) > std::fabs(f[j]);  // base + 1
    EXPECT_GT(up, 300);  // both outcomes occur
    EXPECT_LT(up, 2700);
    std::vector<int32_t> q32(q.begin(), q.end());
    std::vector<uint8_t> want_wire(TernaryPackedBytes(count, w));
    TernaryPackReference(q32.data(), count, w, want_wire.data());
    ForEachIsa([&] {
      std::vector<int8_t> work(count);
      TernaryQuantizeAdd(src, 0, count, nullptr, w, TernaryWork::kInt8, work.data());
      for (size_t j = 0; j < count; ++j) ASSERT_EQ(work[j], q[j]) << j;
      std::vector<uint8_t> wire(want_wire.size());
      TernaryQuantizePack(src, 0, count, w, wire.data());
      ASSERT_EQ(wire, want_wire);
    });
  }
}

// The same ties with error feedback (g + e_prev ties, quantize + pack and + add
// rewriting the residuals in their pass): codes and residuals as the reference's,
// with scale blocks inside a batch (100) and spanning several (2048).
TEST(TernaryIsaTest, TiesWithFeedbackUpdateResidualsLikeTheReference) {
  std::mt19937_64 rng(11);
  const size_t count = 3001;
  const PhiloxStream stream{rng(), 3, rng()};
  std::vector<float> g(count), e(count);
  for (size_t j = 0; j < count; ++j) {
    const uint32_t h = PhiloxHalf(PhiloxOct(stream, j >> 3), j);
    const float frac = j % 3 == 0 ? 0.5f : static_cast<float>(1 + rng() % 255) / 256.0f;
    const float sum = (static_cast<float>(h) + frac) / 65536.0f * (j % 2 == 0 ? 1.0f : -1.0f);
    g[j] = sum * 0.75f;  // g + e_prev = sum exactly
    e[j] = sum * 0.25f;
  }
  for (size_t block : {size_t{100}, size_t{2048}}) {
    SCOPED_TRACE("block " + std::to_string(block));
    std::vector<float> scales((count + block - 1) / block, 1.0f);
    TernarySource src =
        TernarySourceOf(DType::kFloat32, g.data(), nullptr, block, scales.data(), stream);
    src.residual = e.data();
    std::vector<int8_t> q(count);
    std::vector<float> want(count);
    TernaryQuantizeReference(src, 0, count, q.data(), want.data());
    int kept = 0;
    for (int8_t v : q) kept += v != 0;
    EXPECT_GT(kept, 300);
    EXPECT_LT(kept, 2700);
    ForEachIsa([&] {
      std::vector<float> res = e;
      TernarySource s = src;
      s.residual = res.data();
      std::vector<int8_t> work(count);
      TernaryQuantizeAdd(s, 0, count, nullptr, 2, TernaryWork::kInt8, work.data());
      for (size_t j = 0; j < count; ++j) {
        ASSERT_EQ(work[j], q[j]) << j;
        ASSERT_TRUE(SameFloat(res[j], want[j])) << j << ": " << res[j] << " vs " << want[j];
      }
      res = e;
      std::vector<uint8_t> wire(TernaryPackedBytes(count, 2));
      TernaryQuantizePack(s, 0, count, 2, wire.data());
      std::vector<int32_t> got(count);
      TernaryUnpackReference(wire.data(), count, 2, got.data());
      for (size_t j = 0; j < count; ++j) {
        ASSERT_EQ(got[j], q[j]) << j;
        ASSERT_TRUE(SameFloat(res[j], want[j])) << j << ": " << res[j] << " vs " << want[j];
      }
    });
  }
}

// The wide policies find x's integer part without a division (batch::ReciprocalLevel):
// values within a few ulps of every integer level, on either side of h and h + 1, under
// scales with random and extreme significands, at the edges of the usable range (2^-100,
// 2^100) and just past them (where the kernels divide), plus zeros of both signs,
// subnormals, NaN, infinities and values far above the scale. Codes, wire and residuals
// (error feedback: g + e_prev = the value) as the reference's.
TEST(TernaryIsaTest, LevelsWithoutDivisionMatchTheReferenceAtEveryEdge) {
  std::mt19937_64 rng(17);
  const size_t count = 4099;
  const PhiloxStream stream{rng(), 5, rng()};
  std::vector<float> scales;
  for (float s : {1.0f, 0.75f, 0x1.fffffep-1f, 0x1p-100f, 0x1.000002p-100f, 0x1.fffffep-101f,
                  0x1p100f, 0x1.fffffep99f, 0x1.000002p100f, 3.0e-3f, 6.1e4f})
    scales.push_back(s);
  for (int r = 0; r < 40; ++r) {
    const uint32_t bits =
        (static_cast<uint32_t>(rng() % 200 + 27) << 23) | static_cast<uint32_t>(rng() & 0x7fffff);
    float s;
    std::memcpy(&s, &bits, 4);
    scales.push_back(s);
  }
  const float specials[] = {0.0f,
                            -0.0f,
                            1e-45f,
                            -1e-40f,
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()};
  for (float s : scales) {
    SCOPED_TRACE("scale " + std::to_string(s));
    std::vector<float> f(count);
    for (size_t j = 0; j < count; ++j) {
      const double h = PhiloxHalf(PhiloxOct(stream, j >> 3), j);
      const double level = h + static_cast<double>(rng() % 4) - 1.0;  // h - 1 .. h + 2
      float v = static_cast<float>(static_cast<double>(s) * level / 65536.0);
      for (int ulps = static_cast<int>(rng() % 7) - 3; ulps != 0; ulps += ulps > 0 ? -1 : 1)
        v = std::nextafter(v, ulps > 0 ? 3.0f * s : 0.0f);
      if (j % 97 == 0) v = specials[(j / 97) % 7];
      if (j % 89 == 0) v = s * (j % 3 == 0 ? 2.5f : 1.0f);  // above the scale, at it
      f[j] = j % 2 == 0 ? v : -v;
    }
    // Error feedback: the value split in two, g + e_prev exact.
    std::vector<float> g(count), e(count);
    for (size_t j = 0; j < count; ++j) {
      g[j] = std::isfinite(f[j]) ? f[j] * 0.75f : f[j];
      e[j] = std::isfinite(f[j]) ? f[j] * 0.25f : 0.0f;
    }
    for (size_t block : {size_t{100}, size_t{2048}}) {
      SCOPED_TRACE("block " + std::to_string(block));
      std::vector<float> sc((count + block - 1) / block, s);
      const TernarySource src =
          TernarySourceOf(DType::kFloat32, f.data(), nullptr, block, sc.data(), stream);
      std::vector<int8_t> q(count);
      TernaryQuantizeReference(src, 0, count, q.data());
      TernarySource fb =
          TernarySourceOf(DType::kFloat32, g.data(), nullptr, block, sc.data(), stream);
      fb.residual = e.data();
      std::vector<int8_t> qf(count);
      std::vector<float> want(count);
      TernaryQuantizeReference(fb, 0, count, qf.data(), want.data());
      ForEachIsa([&] {
        std::vector<int8_t> work(count);
        TernaryQuantizeAdd(src, 0, count, nullptr, 2, TernaryWork::kInt8, work.data());
        for (size_t j = 0; j < count; ++j) ASSERT_EQ(work[j], q[j]) << j << ": " << f[j];
        std::vector<uint8_t> wire(TernaryPackedBytes(count, 2));
        TernaryQuantizePack(src, 0, count, 2, wire.data());
        std::vector<int32_t> got(count);
        TernaryUnpackReference(wire.data(), count, 2, got.data());
        for (size_t j = 0; j < count; ++j) ASSERT_EQ(got[j], q[j]) << j << ": " << f[j];
        std::vector<float> res = e;
        TernarySource s2 = fb;
        s2.residual = res.data();
        TernaryQuantizePack(s2, 0, count, 2, wire.data());
        TernaryUnpackReference(wire.data(), count, 2, got.data());
        for (size_t j = 0; j < count; ++j) {
          ASSERT_EQ(got[j], qf[j]) << j << ": " << f[j];
          ASSERT_TRUE(SameFloat(res[j], want[j])) << j << ": " << res[j] << " vs " << want[j];
        }
      });
    }
  }
}

// p = 2^-17 (x = 1/2): only the refinement can keep an element, with
// probability 1/2; a 16-bit comparison alone gives 0 or 2^-16.
TEST(TernaryIsaTest, ResolutionBelowSixteenBitsIsUnbiased) {
  const size_t count = size_t{1} << 23;
  std::vector<float> g(count, 1.0f / 131072.0f);
  std::vector<float> scales(count / 2048, 1.0f);
  std::vector<uint8_t> wire(TernaryPackedBytes(count, 2));
  TernaryQuantizePack(DType::kFloat32, g.data(), 0, count, 2048, scales.data(),
                      PhiloxStream{77, 1, 3}, 2, wire.data());
  size_t kept = 0;
  for (uint8_t b : wire) kept += static_cast<size_t>(__builtin_popcount(b & 0x55));
  // Expected 2^23 * 2^-17 = 64, standard deviation 8.
  EXPECT_GT(kept, 24u);
  EXPECT_LT(kept, 104u);
}

// The generators sieve-bench-kernels times alone (the AVX2 and AVX-512 Philox32,
// 32 octs a batch) give PhiloxOct's words, oct-major, from an odd first oct.
TEST(TernaryIsaTest, BenchmarkedPhiloxWordsArePhiloxOct) {
  const PhiloxStream rng{0x0123456789abcdefull, 3, (uint64_t{5} << 32) | 7};
  const uint64_t oct0 = 1001;
  const size_t batches = 3;
  const struct {
    CpuIsa isa;
    void (*words_of)(const PhiloxStream&, uint64_t, size_t, uint32_t*);
  } paths[] = {{CpuIsa::kAvx2, simd::PhiloxWordsAvx2}, {CpuIsa::kAvx512, simd::PhiloxWordsAvx512}};
  for (const auto& path : paths) {
    if (DetectedCpuIsa() < path.isa) continue;
    SCOPED_TRACE("isa " + std::to_string(static_cast<int>(path.isa)));
    std::vector<uint32_t> words(128 * batches);
    path.words_of(rng, oct0, batches, words.data());
    for (size_t oct = 0; oct < 32 * batches; ++oct) {
      const Philox4 want = PhiloxOct(rng, oct0 + oct);
      for (int i = 0; i < 4; ++i) ASSERT_EQ(words[4 * oct + i], want.v[i]) << "oct " << oct;
    }
  }
}

// Non-finite input: the block's scale is NaN (a NaN and an infinity alike),
// whichever path, dtype, gather or feedback; other blocks are unaffected.
TEST(TernaryIsaTest, NonFiniteInputPoisonsItsBlock) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (DType dtype : kTypes)
    for (float bad : {nan, inf, -inf})
      for (bool feedback : {false, true}) {
        const size_t count = 1000, block = 100;
        std::vector<float> f(count);
        for (size_t j = 0; j < count; ++j) f[j] = static_cast<float>(j % 17) / 8.0f - 1.0f;
        f[123] = bad;  // block 1
        f[999] = bad;  // block 9 (the last)
        std::vector<char> data = AsDType(dtype, f);
        std::vector<float> residual(count, 0.25f);
        TernarySource src = TernarySourceOf(dtype, data.data(), nullptr, block, nullptr);
        if (feedback) src.residual = residual.data();
        ForEachIsa([&] {
          std::vector<float> scales(count / block);
          TernaryAbsMax(src, count, scales.data());
          for (size_t b = 0; b < scales.size(); ++b)
            ASSERT_EQ(std::isnan(scales[b]), b == 1 || b == 9) << b << " " << DTypeName(dtype);
          // The residuals of a poisoned block become NaN, the others stay finite.
          if (!feedback) return;
          std::vector<float> res = residual;
          TernarySource s = src;
          s.residual = res.data();
          s.scales = scales.data();
          std::vector<uint8_t> wire(TernaryPackedBytes(count, 2));
          TernaryQuantizePack(s, 0, count, 2, wire.data());
          for (size_t j = 0; j < count; ++j)
            ASSERT_EQ(std::isnan(res[j]), j / block == 1 || j / block == 9) << j;
        });
      }
}

}  // namespace
}  // namespace sieve::kernels
