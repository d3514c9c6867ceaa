// The AVX2 policy of ternary_batch.h (eight float32 lanes; F16C for float16)
// and the AVX2 entry points of ternary_simd.h. Compiled for baseline x86-64:
// only these functions carry the avx2 target, and callers dispatch at run time.
#include "kernels/ternary_simd.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "kernels/ternary_batch.h"
#include "kernels/ternary_levels_x86.h"

#define SIEVE_AVX2_FN __attribute__((target("avx2,f16c,popcnt,pclmul"), flatten))
#define SIEVE_AVX2 inline __attribute__((target("avx2,f16c,popcnt,pclmul")))

namespace sieve::kernels::simd {

namespace {

// hi/lo halves of the 64-bit products a[l] * m (m the same in every lane).
SIEVE_AVX2 void MulHiLo(__m256i a, __m256i m, __m256i* hi, __m256i* lo) {
  __m256i even = _mm256_mul_epu32(a, m);                        // lanes 0, 2, 4, 6
  __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);  // lanes 1, 3, 5, 7
  *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// 32 bytes, byte b = -1 where bit b of `bits` is set, else 0.
SIEVE_AVX2 __m256i BitsToBytes(uint32_t bits) {
  const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                          2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i select = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), spread);
  return _mm256_cmpeq_epi8(_mm256_and_si256(v, select), select);
}

// Eight int32 lanes, lane i = -1 where bit i of `bits` is set, else 0.
SIEVE_AVX2 __m256i BitsToLanes(uint32_t bits) {
  const __m256i select = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  __m256i v = _mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits)), select);
  return _mm256_cmpeq_epi32(v, select);
}

// float32 -> float16 bits as FloatToHalf (vcvtps2ph rounds to nearest even like it;
// NaNs differ in payload, so a vector holding one converts element by element).
// stream: a non-temporal store (out aligned to 16 bytes).
SIEVE_AVX2 void StoreHalf8(uint16_t* out, __m256 v, bool stream = false) {
  if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) == 0) {
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    if (stream) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(out), h);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), h);
    }
    return;
  }
  alignas(32) float f[8];
  _mm256_store_ps(f, v);
  for (int k = 0; k < 8; ++k) out[k] = FloatToHalf(f[k]);
}

// float32 bits -> bfloat16 bits as FloatToBf16 (round to nearest even; NaN quieted),
// in the low halves of the 32-bit lanes.
SIEVE_AVX2 __m256i Bf16Bits(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i one = _mm256_set1_epi32(1);
  __m256i r = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)),
                               _mm256_and_si256(_mm256_srli_epi32(x, 16), one));
  r = _mm256_srli_epi32(r, 16);
  const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(r, nan, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

SIEVE_AVX2 void StoreBf16x8(uint16_t* out, __m256 v, bool stream = false) {
  const __m256i b = Bf16Bits(v);
  const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
  if (stream) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(out), packed);
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), packed);
  }
}

template <class L>
SIEVE_AVX2 __m256 Load8(const void* p, size_t j) {
  if (std::is_same<L, TernaryF16>::value)
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + j)));
  if (std::is_same<L, TernaryBf16>::value)
    return _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_cvtepu16_epi32(_mm_loadu_si128(
            reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + j))),
        16));
  return _mm256_loadu_ps(static_cast<const float*>(p) + j);
}

// L::Round, eight at a time (NaN stays NaN; its payload does not matter here:
// a NaN quantizes to 0 against any scale, and its scale is NaN).
template <class L>
SIEVE_AVX2 __m256 Round8(__m256 v) {
  if (std::is_same<L, TernaryF16>::value)
    return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  if (std::is_same<L, TernaryBf16>::value)
    return _mm256_castsi256_ps(_mm256_slli_epi32(Bf16Bits(v), 16));
  return v;
}

// Philox4x32-10 of octs oct0 .. oct0 + 8V - 1 into words (oct-major, as PhiloxOct), eight
// octs per vector. As in the AVX-512 twin, V groups run as V independent chains interleaved
// round by round: one chain's round waits on its multiplies' latency, V of them fill it
// (V = 4 makes Philox32 1.6x as fast as four groups one after another on an AMD EPYC, 1.15x
// V = 2: docs/bench/kernels.md).
template <int V>
SIEVE_AVX2 void PhiloxChains(const PhiloxStream& rng, uint64_t oct0, uint32_t* words) {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(kPhiloxMul0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(kPhiloxMul1));
  // Rounds 1 and 2 from the stream's head (PhiloxFromHead): one multiply each.
  const PhiloxHead head = PhiloxHeadOf(rng);
  const __m256i round1_x2 = _mm256_set1_epi32(static_cast<int>(head.round1_x2));
  const __m256i round2_x0 = _mm256_set1_epi32(static_cast<int>(head.round2_x0));
  const __m256i round2_x2 = _mm256_set1_epi32(static_cast<int>(head.round2_x2));
  __m256i c0[V], c1[V], c2[V], c3[V];
  for (int v = 0; v < V; ++v) {
    // Counter word 0 is lo32(oct) (< 2^31): a 32-bit add wraps exactly like the cast.
    const __m256i ctr =
        _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(oct0) + 8u * v)),
                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256i hi0, lo0, hi1, lo1;
    MulHiLo(ctr, m0, &hi0, &lo0);
    MulHiLo(_mm256_xor_si256(hi0, round1_x2), m1, &hi1, &lo1);
    c0[v] = _mm256_xor_si256(hi1, round2_x0);
    c1[v] = lo1;
    c2[v] = _mm256_xor_si256(lo0, round2_x2);
    c3[v] = _mm256_set1_epi32(static_cast<int>(head.round2_w3));
  }
  uint32_t k0 = head.k0, k1 = head.k1;
  for (int round = 0; round < kPhiloxTailRounds; ++round) {
    if (round > 0) {
      k0 += kPhiloxBump0;
      k1 += kPhiloxBump1;
    }
    const __m256i key0 = _mm256_set1_epi32(static_cast<int>(k0));
    const __m256i key1 = _mm256_set1_epi32(static_cast<int>(k1));
    for (int v = 0; v < V; ++v) {
      __m256i hi0, lo0, hi1, lo1;
      MulHiLo(c0[v], m0, &hi0, &lo0);
      MulHiLo(c2[v], m1, &hi1, &lo1);
      c0[v] = _mm256_xor_si256(_mm256_xor_si256(hi1, c1[v]), key0);
      c1[v] = lo1;
      c2[v] = _mm256_xor_si256(_mm256_xor_si256(hi0, c3[v]), key1);
      c3[v] = lo0;
    }
  }
  for (int v = 0; v < V; ++v) {
    // Transpose the four word vectors (lane l = oct l) into oct-major order.
    __m256i t0 = _mm256_unpacklo_epi32(c0[v], c1[v]), t1 = _mm256_unpackhi_epi32(c0[v], c1[v]);
    __m256i t2 = _mm256_unpacklo_epi32(c2[v], c3[v]), t3 = _mm256_unpackhi_epi32(c2[v], c3[v]);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    __m256i* out = reinterpret_cast<__m256i*>(words + 32 * v);
    _mm256_storeu_si256(out + 0, _mm256_permute2x128_si256(u0, u1, 0x20));  // octs 0, 1
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(u2, u3, 0x20));  // octs 2, 3
    _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(u0, u1, 0x31));  // octs 4, 5
    _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(u2, u3, 0x31));  // octs 6, 7
  }
}

// Sixteen values at one scale (batch::ReciprocalLevel), g0 the first eight: t as uint16
// lanes in element order (packus saturates: t >= 2^16 reads 65535, a NaN's INT_MIN reads 0;
// where that changes h < t, h is t or t + 1 and the element lands in maybe), then
// notkeep = !(h < t) and maybe = (h - t <= 1: h is t or t + 1, or h < t).
SIEVE_AVX2 void Level16(__m256 g0, __m256 g1, __m256 lo, __m256 cap, const uint16_t* h,
                        __m256i* notkeep, __m256i* maybe) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256i t0 =
      _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_min_ps(cap, _mm256_and_ps(g0, abs_mask)), lo));
  const __m256i t1 =
      _mm256_cvttps_epi32(_mm256_mul_ps(_mm256_min_ps(cap, _mm256_and_ps(g1, abs_mask)), lo));
  // packus interleaves 128-bit halves (t0 0-3, t1 0-3 | t0 4-7, t1 4-7): the permute
  // restores element order.
  const __m256i t = _mm256_permute4x64_epi64(_mm256_packus_epi32(t0, t1), 0xD8);
  const __m256i hv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h));
  const __m256i zero = _mm256_setzero_si256();
  *notkeep = _mm256_cmpeq_epi16(_mm256_subs_epu16(t, hv), zero);
  *maybe = _mm256_cmpeq_epi16(
      _mm256_and_si256(_mm256_subs_epu16(hv, t), _mm256_set1_epi16(static_cast<short>(0xfffe))),
      zero);
}

// Bit i: the top bit of 16-bit lane i % 16 of (i < 16 ? a : b).
SIEVE_AVX2 uint32_t TopBits32(__m256i a, __m256i b) {
  // packs interleaves 128-bit halves (a 0-7, b 0-7 | a 8-15, b 8-15): the permute
  // restores element order.
  return static_cast<uint32_t>(
      _mm256_movemask_epi8(_mm256_permute4x64_epi64(_mm256_packs_epi16(a, b), 0xD8)));
}

// The sign bits of 32 floats, g[0] lane 0 first.
SIEVE_AVX2 uint32_t SignBits32(const __m256 (&g)[4]) {
  uint32_t bits = 0;
  for (int v = 0; v < 4; ++v) bits |= static_cast<uint32_t>(_mm256_movemask_ps(g[v])) << (8 * v);
  return bits;
}

// Half `half` of a chunk's keep, neg and maybe words from its 32 elements: Level16's
// notkeep and maybe of two sixteens, and the values (their sign bits).
SIEVE_AVX2 void PutHalf(int half, const __m256i (&notkeep)[2], const __m256i (&maybe)[2],
                        const __m256 (&g)[4], uint64_t* keep, uint64_t* neg, uint64_t* mb) {
  const int shift = 32 * half;
  *keep |= static_cast<uint64_t>(~TopBits32(notkeep[0], notkeep[1])) << shift;
  *mb |= static_cast<uint64_t>(TopBits32(maybe[0], maybe[1])) << shift;
  *neg |= static_cast<uint64_t>(SignBits32(g)) << shift;
}

// AddUnpack's byte shuffle and multipliers for a width w: field i of a group of eight starts
// at bit i * w; its 16-bit window (bytes bit / 8 and, if it spills over, the next) times
// 2^(16 - w - bit % 8) puts the field at the top.
struct UnpackTable {
  alignas(16) int8_t shuf[16];
  alignas(16) int16_t mul[8];
};
constexpr UnpackTable MakeUnpackTable(int w) {
  UnpackTable t{};
  for (int i = 0; i < 8; ++i) {
    const int bit = i * w, off = bit % 8;
    t.shuf[2 * i] = static_cast<int8_t>(bit / 8);
    t.shuf[2 * i + 1] = off + w > 8 ? static_cast<int8_t>(bit / 8 + 1) : int8_t{-128};
    t.mul[i] = static_cast<int16_t>(1 << (16 - w - off));
  }
  return t;
}
constexpr std::array<UnpackTable, 8> kUnpackTables =
    batch::PerWireWidth<UnpackTable>(MakeUnpackTable);

// The chunk loop of the division-free masks (MasksByReciprocal and its feedback twin):
// sixteen values at a time from `values` (Load: their two vectors; Coded: whatever follows
// once Level16 has said which are not kept), the words through PutHalf.
template <class Values>
SIEVE_AVX2 void ReciprocalChunks(Values& values, const batch::ReciprocalLevel& level,
                                 const uint16_t* h, int n64, uint64_t* keep, uint64_t* neg,
                                 uint64_t* maybe) {
  const __m256 lo = _mm256_set1_ps(level.lo), cap = _mm256_set1_ps(level.cap);
  for (int c = 0; c < n64; ++c) {
    uint64_t k = 0, n = 0, m = 0;
    for (int half = 0; half < 2; ++half) {
      __m256 gv[4];
      __m256i nk[2], mb[2];
      for (int v = 0; v < 2; ++v) {
        const int i = 64 * c + 32 * half + 16 * v;
        values.Load(i, &gv[2 * v]);
        Level16(gv[2 * v], gv[2 * v + 1], lo, cap, h + i, &nk[v], &mb[v]);
        values.Coded(i, &gv[2 * v], nk[v]);
      }
      PutHalf(half, nk, mb, gv, &k, &n, &m);
    }
    keep[c] = k, neg[c] = n, maybe[c] = m;
  }
}

// ReciprocalChunks' values: the batch's float32 in place (staged or the caller's).
struct StagedSixteens {
  const float* g;
  SIEVE_AVX2 void Load(int i, __m256* two) const {
    batch::PrefetchPast(g + i, kPrefetchBytes);
    two[0] = _mm256_loadu_ps(g + i), two[1] = _mm256_loadu_ps(g + i + 8);
  }
  SIEVE_AVX2 void Coded(int, const __m256*, __m256i) const {}
};

// ReciprocalChunks' values with error feedback: Round(g + e_prev) of element j0 + i on, and
// once coded each residual rewritten as sum - s * q with its coarse code.
template <class L>
struct FeedbackSixteens {
  SIEVE_AVX2 FeedbackSixteens(const void* data, float* res, uint64_t j0, float s)
      : data(data), res(res), j0(j0), sv(_mm256_set1_ps(s)) {}
  SIEVE_AVX2 void Load(int i, __m256* two) {
    float* r = res + j0 + static_cast<uint64_t>(i);
    batch::PrefetchPast(r, kPrefetchBytes);  // a line each
    batch::PrefetchPast(data, (j0 + static_cast<uint64_t>(i) + batch::kPrefetchAhead) * L::kBytes);
    for (int e = 0; e < 2; ++e) {
      sum[e] = _mm256_add_ps(Load8<L>(data, j0 + static_cast<uint64_t>(i + 8 * e)),
                             _mm256_loadu_ps(r + 8 * e));
      two[e] = Round8<L>(sum[e]);
    }
  }
  SIEVE_AVX2 void Coded(int i, const __m256* two, __m256i not_kept16) {
    float* r = res + j0 + static_cast<uint64_t>(i);
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    // q = +-1 where kept (a kept value is nonzero: its sign bit is g < 0), else 0.
    const __m256i not_kept[2] = {_mm256_cvtepi16_epi32(_mm256_castsi256_si128(not_kept16)),
                                 _mm256_cvtepi16_epi32(_mm256_extracti128_si256(not_kept16, 1))};
    for (int e = 0; e < 2; ++e) {
      const __m256 q = _mm256_andnot_ps(_mm256_castsi256_ps(not_kept[e]),
                                        _mm256_or_ps(one, _mm256_and_ps(two[e], sign)));
      _mm256_storeu_ps(r + 8 * e, _mm256_sub_ps(sum[e], _mm256_mul_ps(sv, q)));
    }
  }

  const void* data;
  float* res;
  uint64_t j0;
  __m256 sv;
  __m256 sum[2];  // Load's g + e_prev, for Coded
};

struct Avx2Ops {
  // Masks without a division (ternary_batch.h): MasksByReciprocal, MasksFeedbackByReciprocal.
  static constexpr bool kReciprocalMasks = true;
  SIEVE_AVX2 static void Philox8(const PhiloxStream& rng, uint64_t oct0, uint32_t* words) {
    PhiloxChains<1>(rng, oct0, words);
  }
  // Four groups of eight as four chains.
  SIEVE_AVX2 static void Philox32(const PhiloxStream& rng, uint64_t oct0, uint32_t* words) {
    PhiloxChains<4>(rng, oct0, words);
  }

  template <class L>
  SIEVE_AVX2 static void Stage(const TernarySource& src, uint64_t j0, int n, float* g,
                               float* sum) {
    int k = 0;
    if (src.idx == nullptr) {
      for (; k + 8 <= n; k += 8) {
        if (k % 16 == 0) {  // one request per 64 bytes of float32
          batch::PrefetchPast(src.data,
                              (j0 + static_cast<uint64_t>(k) + batch::kPrefetchAhead) * L::kBytes);
          if (src.residual != nullptr) batch::PrefetchPast(src.residual + j0 + k, kPrefetchBytes);
        }
        __m256 v = Load8<L>(src.data, j0 + static_cast<uint64_t>(k));
        if (src.residual != nullptr) {
          v = _mm256_add_ps(v, _mm256_loadu_ps(src.residual + j0 + k));
          _mm256_storeu_ps(sum + k, v);
          v = Round8<L>(v);
        }
        _mm256_storeu_ps(g + k, v);
      }
    } else {
      // The mask's gather, asking for the values kPrefetchAhead dense positions past the
      // current one (idx ascends) once per eight, and for the residual (by element) ahead.
      for (; k + 8 <= n; k += 8) {
        const uint64_t j = j0 + static_cast<uint64_t>(k);
        batch::PrefetchPast(src.data, (src.idx[j] + batch::kPrefetchAhead) * L::kBytes);
        if (src.residual != nullptr && k % 16 == 0)
          batch::PrefetchPast(src.residual + j, kPrefetchBytes);
        batch::StageScalar<L>(src, j0, k, k + 8, g, sum);
      }
    }
    batch::StageScalar<L>(src, j0, k, n, g, sum);
  }

  // One scale, no division (batch::ReciprocalLevel), in 16-bit lanes; neg = g's sign bit.
  SIEVE_AVX2 static void MasksByReciprocal(const float* g, const batch::ReciprocalLevel& level,
                                           const uint16_t* h, int n64, uint64_t* keep,
                                           uint64_t* neg, uint64_t* maybe) {
    StagedSixteens values{g};
    ReciprocalChunks(values, level, h, n64, keep, neg, maybe);
  }

  // Any scales, dividing (TernaryLevel's own arithmetic): maybe = h < x exactly.
  SIEVE_AVX2 static void Masks(const float* g, const float* sc, float s, const uint16_t* h, int n64,
                               uint64_t* keep, uint64_t* neg, uint64_t* maybe) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
    const __m256 scale16 = _mm256_set1_ps(65536.0f);
    const __m256 sv = _mm256_set1_ps(s);
    for (int c = 0; c < n64; ++c) {
      uint64_t k = 0, n = 0, l = 0;
      for (int e = 0; e < 64; e += 8) {
        const int i = 64 * c + e;
        if (e % 16 == 0) batch::PrefetchPast(g + i, kPrefetchBytes);
        const __m256 gv = _mm256_loadu_ps(g + i);
        const __m256 s8 = sc != nullptr ? _mm256_loadu_ps(sc + i) : sv;
        const __m256 a = _mm256_and_ps(gv, abs_mask);
        __m256 x = _mm256_mul_ps(_mm256_div_ps(a, s8), scale16);
        x = _mm256_and_ps(x, _mm256_cmp_ps(s8, zero, _CMP_GT_OQ));  // TernaryLevel: 0 unless s > 0
        const __m256 hv = _mm256_cvtepi32_ps(
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
        const uint64_t kb = static_cast<uint32_t>(
            _mm256_movemask_ps(_mm256_cmp_ps(_mm256_add_ps(hv, one), x, _CMP_LE_OQ)));
        const uint64_t lb = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(hv, x, _CMP_LT_OQ)));
        const uint64_t nb = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(gv, zero, _CMP_LT_OQ)));
        k |= kb << e, l |= lb << e, n |= nb << e;
      }
      keep[c] = k, neg[c] = n, maybe[c] = l;
    }
  }

  // MasksByReciprocal of the sums' rounded values, each residual written with its coarse
  // code (q = 0 where maybe: ResolveTiesFeedback rewrites those that keep).
  template <class L>
  SIEVE_AVX2 static void MasksFeedbackByReciprocal(const void* data, float* res, uint64_t j0,
                                                   const batch::ReciprocalLevel& level, float s,
                                                   const uint16_t* h, int n64, uint64_t* keep,
                                                   uint64_t* neg, uint64_t* maybe) {
    FeedbackSixteens<L> values(data, res, j0, s);
    ReciprocalChunks(values, level, h, n64, keep, neg, maybe);
  }

  // Masks of Round(g + e_prev) fused with the residual update (ternary_batch.h), any
  // scales, dividing.
  template <class L>
  SIEVE_AVX2 static void MasksFeedback(const void* data, float* res, uint64_t j0, const float* sc,
                                       float s, const uint16_t* h, int n64, uint64_t* keep,
                                       uint64_t* neg, uint64_t* maybe) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
    const __m256 sign = _mm256_set1_ps(-0.0f), scale16 = _mm256_set1_ps(65536.0f);
    const __m256 sv = _mm256_set1_ps(s);
    for (int c = 0; c < n64; ++c) {
      uint64_t k = 0, n = 0, l = 0;
      for (int e = 0; e < 64; e += 8) {
        const int i = 64 * c + e;
        float* r = res + j0 + static_cast<uint64_t>(i);
        if (e % 16 == 0) {  // a line each
          batch::PrefetchPast(r, kPrefetchBytes);
          batch::PrefetchPast(data,
                              (j0 + static_cast<uint64_t>(i) + batch::kPrefetchAhead) * L::kBytes);
        }
        const __m256 sum =
            _mm256_add_ps(Load8<L>(data, j0 + static_cast<uint64_t>(i)), _mm256_loadu_ps(r));
        const __m256 gv = Round8<L>(sum);
        const __m256 s8 = sc != nullptr ? _mm256_loadu_ps(sc + i) : sv;
        __m256 x = _mm256_mul_ps(_mm256_div_ps(_mm256_and_ps(gv, abs_mask), s8), scale16);
        x = _mm256_and_ps(x, _mm256_cmp_ps(s8, zero, _CMP_GT_OQ));  // TernaryLevel: 0 unless s > 0
        const __m256 hv = _mm256_cvtepi32_ps(
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
        const __m256 kv = _mm256_cmp_ps(_mm256_add_ps(hv, one), x, _CMP_LE_OQ);
        const __m256 nv = _mm256_cmp_ps(gv, zero, _CMP_LT_OQ);
        k |= static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_ps(kv))) << e;
        l |= static_cast<uint64_t>(static_cast<uint32_t>(
                 _mm256_movemask_ps(_mm256_cmp_ps(hv, x, _CMP_LT_OQ))))
             << e;
        n |= static_cast<uint64_t>(static_cast<uint32_t>(_mm256_movemask_ps(nv))) << e;
        const __m256 q = _mm256_and_ps(kv, _mm256_or_ps(one, _mm256_and_ps(nv, sign)));  // -1, 0, 1
        _mm256_storeu_ps(r, _mm256_sub_ps(sum, _mm256_mul_ps(s8, q)));
      }
      keep[c] = k, neg[c] = n, maybe[c] = l;
    }
  }

  // As Wire2BySpread (two's complement in 2 bits, bit 0 kept, bit 1 sign), spreading bit i
  // to bit 2i by a carry-less square (no cross terms over GF(2)): one instruction for 64
  // elements where the shifts and masks took twenty, and fast on every AVX2 CPU (BMI2's
  // pdep is not: microcoded on AMD before Zen 3).
  SIEVE_AVX2 static void Wire2(const uint64_t* keep, const uint64_t* neg, int n64, uint8_t* out) {
    for (int c = 0; c < n64; ++c) {
      const __m128i k = _mm_cvtsi64_si128(static_cast<long long>(keep[c]));
      const __m128i kn = _mm_cvtsi64_si128(static_cast<long long>(keep[c] & neg[c]));
      const __m128i wire = _mm_or_si128(_mm_clmulepi64_si128(k, k, 0x00),
                                        _mm_slli_epi64(_mm_clmulepi64_si128(kn, kn, 0x00), 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * c), wire);
    }
  }

  SIEVE_AVX2 static void LevelsCodes(const float* g, const float* sc, float s, float lv, int levels,
                                     const uint16_t* h, int n64, int8_t* q, uint64_t* tie) {
    LevelsCodesAvx2(g, sc, s, lv, levels, h, n64, q, tie);
  }
  SIEVE_AVX2 static void Codes(const uint64_t* keep, const uint64_t* neg, int n64, int8_t* q) {
    const __m256i one = _mm256_set1_epi8(1);
    for (int c = 0; c < 2 * n64; ++c) {
      const uint32_t k = static_cast<uint32_t>(keep[c / 2] >> (32 * (c % 2)));
      const uint32_t n = static_cast<uint32_t>(neg[c / 2] >> (32 * (c % 2)));
      const __m256i v = _mm256_and_si256(BitsToBytes(k), _mm256_or_si256(BitsToBytes(n), one));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * c), v);
    }
  }

  // Four groups at a time: each 128-bit lane holds one group's bytes from its
  // start; a byte shuffle gives every element the 16-bit window holding its w
  // bits, a multiply moves them to the top and an arithmetic shift sign-extends.
  SIEVE_AVX2 static void AddUnpack(const uint8_t* wire, int w, int n64, bool accumulate,
                                   int8_t* work) {
    const UnpackTable& table = kUnpackTables[w - 1];
    const __m256i sh =
        _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(table.shuf)));
    const __m256i mv =
        _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(table.mul)));
    const __m128i count = _mm_cvtsi32_si128(16 - w);
    for (int g = 0; g < 8 * n64; g += 4) {
      const __m128i* p0 = reinterpret_cast<const __m128i*>(wire + g * w);
      const __m128i* p1 = reinterpret_cast<const __m128i*>(wire + (g + 1) * w);
      const __m128i* p2 = reinterpret_cast<const __m128i*>(wire + (g + 2) * w);
      const __m128i* p3 = reinterpret_cast<const __m128i*>(wire + (g + 3) * w);
      __m256i a = _mm256_set_m128i(_mm_loadu_si128(p2), _mm_loadu_si128(p0));
      __m256i b = _mm256_set_m128i(_mm_loadu_si128(p3), _mm_loadu_si128(p1));
      a = _mm256_sra_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(a, sh), mv), count);
      b = _mm256_sra_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(b, sh), mv), count);
      __m256i v = _mm256_packs_epi16(a, b);  // groups 0, 1 | 2, 3: elements in order
      __m256i* out = reinterpret_cast<__m256i*>(work + 8 * g);
      if (accumulate) v = _mm256_add_epi8(v, _mm256_loadu_si256(out));
      _mm256_storeu_si256(out, v);
    }
  }

  // Four groups at a time (w <= 6): pairs, quads and octs of w-bit fields merged by
  // multiply-adds, then each group's w bytes moved together and stored in turn
  // (each store's tail is overwritten by the next).
  static constexpr int kMaxPackBits = 6;
  SIEVE_AVX2 static void Pack(const int8_t* work, int w, int n64, uint8_t* wire) {
    alignas(16) int8_t shuf[16];
    for (int b = 0; b < 16; ++b) shuf[b] = b < 2 * w ? static_cast<int8_t>((b / w) * 8 + b % w) : int8_t{-128};
    const __m256i sh = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(shuf)));
    const __m256i field = _mm256_set1_epi8(static_cast<char>((1 << w) - 1));
    const __m256i m16 = _mm256_set1_epi16(static_cast<short>(1 | (1 << (w + 8))));
    const __m256i m32 = _mm256_set1_epi32(1 | (1 << (2 * w + 16)));
    const __m256i low32 = _mm256_set1_epi64x(0xffffffffll);
    const __m128i count = _mm_cvtsi32_si128(4 * w);
    for (int g = 0; g < 8 * n64; g += 4) {
      __m256i v = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(work + 8 * g)), field);
      v = _mm256_madd_epi16(_mm256_maddubs_epi16(v, m16), m32);
      v = _mm256_or_si256(_mm256_and_si256(v, low32), _mm256_sll_epi64(_mm256_srli_epi64(v, 32), count));
      v = _mm256_shuffle_epi8(v, sh);
      uint8_t* out = wire + g * w;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(v));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * w), _mm256_extracti128_si256(v, 1));
    }
  }

  SIEVE_AVX2 static void Residual(const float* sum, const float* sc, float s, const uint64_t* keep,
                                  const uint64_t* neg, int n64, float* res) {
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f), sv = _mm256_set1_ps(s);
    for (int i = 0; i < 64 * n64; i += 8) {
      const uint32_t kb = static_cast<uint32_t>(keep[i / 64] >> (i % 64)) & 0xffu;
      const uint32_t nb = static_cast<uint32_t>(neg[i / 64] >> (i % 64)) & 0xffu;
      const __m256 k = _mm256_castsi256_ps(BitsToLanes(kb));
      const __m256 n = _mm256_castsi256_ps(BitsToLanes(nb));
      const __m256 q = _mm256_and_ps(k, _mm256_or_ps(one, _mm256_and_ps(n, sign)));  // -1, 0, 1
      const __m256 s8 = sc != nullptr ? _mm256_loadu_ps(sc + i) : sv;
      _mm256_storeu_ps(res + i, _mm256_sub_ps(_mm256_loadu_ps(sum + i), _mm256_mul_ps(s8, q)));
    }
  }

  SIEVE_AVX2 static void MaxMagnitude(const float* g, int n, uint32_t* m) {
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
    __m256i acc = _mm256_setzero_si256();
    int k = 0;
    for (; k + 8 <= n; k += 8)
      acc = _mm256_max_epu32(acc, _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + k)), abs_mask));
    alignas(32) uint32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc);
    uint32_t v = *m;
    for (int l = 0; l < 8; ++l) v = std::max(v, lanes[l]);
    for (; k < n; ++k) v = std::max(v, TernaryMagnitudeBits(g[k]));
    *m = v;
  }
};

// x / divisor in eight lanes, as the dequantizers divide. A power-of-two divisor d
// divides as a multiply by 1 / d (exact): both round the same real number once, so the
// bits are the division's.
struct LaneDivisor {
  SIEVE_AVX2 explicit LaneDivisor(int divisor)
      : divisor(divisor),
        pow2(divisor > 1 && (divisor & (divisor - 1)) == 0),
        d(_mm256_set1_ps(static_cast<float>(divisor))),
        inv(_mm256_set1_ps(1.0f / static_cast<float>(divisor))) {}
  SIEVE_AVX2 __m256 Divide(__m256 x) const {
    if (pow2) return _mm256_mul_ps(x, inv);
    return divisor == 1 ? x : _mm256_div_ps(x, d);
  }
  int divisor;
  bool pow2;
  __m256 d, inv;
};

// With stream, each scale block's run stores one by one up to the first
// vector-aligned output (none where the output is not element-aligned), streams
// whole vectors from there and stores the rest one by one.
template <class L>
SIEVE_AVX2 void Dequantize(const int8_t* sums, size_t offset, size_t elems, size_t block,
                           const float* scales, int divisor, void* out, bool stream) {
  constexpr size_t kSize = std::is_same<L, TernaryF32>::value ? 4 : 2, kVector = 8 * kSize;
  const uintptr_t at = reinterpret_cast<uintptr_t>(out);
  stream = stream && at % kSize == 0;
  const size_t aligned = (kVector - at % kVector) % kVector / kSize;  // first aligned i mod 8
  const LaneDivisor divide(divisor);
  for (size_t i = 0; i < elems;) {
    const size_t j = offset + i;
    const float s = scales[j / block];
    const size_t end = std::min(elems, i + (block - j % block));
    const __m256 sv = _mm256_set1_ps(s);
    const size_t lead = stream ? std::min(end, i + (aligned + 8 - i % 8) % 8) : i;
    for (; i < lead; ++i) L::Store(out, i, TernaryDequantizeOne(sums[i], s, divisor));
    for (; i + 8 <= end; i += 8) {
      const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sums + i));
      const __m256 v =
          divide.Divide(_mm256_mul_ps(sv, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q))));
      if (std::is_same<L, TernaryF16>::value) {
        StoreHalf8(static_cast<uint16_t*>(out) + i, v, stream);
      } else if (std::is_same<L, TernaryBf16>::value) {
        StoreBf16x8(static_cast<uint16_t*>(out) + i, v, stream);
      } else if (stream) {
        _mm256_stream_ps(static_cast<float*>(out) + i, v);
      } else {
        _mm256_storeu_ps(static_cast<float*>(out) + i, v);
      }
    }
    for (; i < end; ++i) L::Store(out, i, TernaryDequantizeOne(sums[i], s, divisor));
  }
  if (stream) _mm_sfence();  // streamed stores ordered before what the caller does next
}

// Lane i of the result: where bit i of m (< 256) lands in the packed row, i.e.
// the number of bits of m below i (a nibble each in one 32-bit word per m).
SIEVE_AVX2 __m256i ExpandIndex(uint32_t m) {
  alignas(64) static const uint32_t kNibbles[256] = {
#define SIEVE_N(m)                                                                              \
  ((0u) | (static_cast<uint32_t>(__builtin_popcount((m) & 0x01u)) << 4) |                      \
   (static_cast<uint32_t>(__builtin_popcount((m) & 0x03u)) << 8) |                             \
   (static_cast<uint32_t>(__builtin_popcount((m) & 0x07u)) << 12) |                            \
   (static_cast<uint32_t>(__builtin_popcount((m) & 0x0fu)) << 16) |                            \
   (static_cast<uint32_t>(__builtin_popcount((m) & 0x1fu)) << 20) |                            \
   (static_cast<uint32_t>(__builtin_popcount((m) & 0x3fu)) << 24) |                            \
   (static_cast<uint32_t>(__builtin_popcount((m) & 0x7fu)) << 28))
#define SIEVE_N4(m) SIEVE_N(m), SIEVE_N(m + 1), SIEVE_N(m + 2), SIEVE_N(m + 3)
#define SIEVE_N16(m) SIEVE_N4(m), SIEVE_N4(m + 4), SIEVE_N4(m + 8), SIEVE_N4(m + 12)
#define SIEVE_N64(m) SIEVE_N16(m), SIEVE_N16(m + 16), SIEVE_N16(m + 32), SIEVE_N16(m + 48)
      SIEVE_N64(0u), SIEVE_N64(64u), SIEVE_N64(128u), SIEVE_N64(192u)
#undef SIEVE_N64
#undef SIEVE_N16
#undef SIEVE_N4
#undef SIEVE_N
  };
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  return _mm256_and_si256(
      _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(kNibbles[m])), shifts),
      _mm256_set1_epi32(0xf));
}

// [begin, end) in rounds of up to kScatterWords bitmap words: the round's kept
// values dequantized into a row (one scale run at a time, the scale block
// followed rather than divided for), then expanded eight positions at a time
// (a lane permute from a table of packed indices, zeros where the bit is
// clear). Whole float32 words store straight into out; a partial first or last
// word, and 16-bit output, go through a dense staging row.
constexpr int kScatterWords = 16;

template <class L>
SIEVE_AVX2 void DequantizeScatter(const int8_t* sums, size_t offset, size_t block,
                                  const float* scales, int divisor, const uint64_t* bits,
                                  size_t begin, size_t end, void* out, bool stream) {
  stream = stream && reinterpret_cast<uintptr_t>(out) % 64 == 0;  // whole words then align
  const LaneDivisor divide(divisor);
  const __m256i select = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  size_t k = 0;                                               // sums[k]: kept element offset + k
  size_t kb = offset / block, left = block - offset % block;  // its scale block, elements left
  alignas(32) float vals[64 * kScatterWords + 8];
  alignas(32) float dense[64];
  for (size_t j = begin; j < end;) {
    const size_t base = j & ~size_t{63};
    size_t stop;
    int nw;
    uint64_t words[kScatterWords], ranges[kScatterWords];
    const int cnt =
        batch::ScatterRound<kScatterWords>(bits, j, end, &stop, &nw, words, ranges);
    for (int v = 0; v < cnt;) {  // the kept values, one scale run at a time
      const int run = static_cast<int>(std::min<size_t>(static_cast<size_t>(cnt - v), left));
      const float s = scales[kb];
      const __m256 sv = _mm256_set1_ps(s);
      const int8_t* q8 = sums + k + static_cast<size_t>(v);
      int e = 0;
      for (; e + 8 <= run; e += 8) {
        const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q8 + e));
        _mm256_storeu_ps(vals + v + e, divide.Divide(_mm256_mul_ps(
                                           sv, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)))));
      }
      for (; e < run; ++e) vals[v + e] = TernaryDequantizeOne(q8[e], s, divisor);
      v += run;
      left -= static_cast<size_t>(run);
      if (left == 0) ++kb, left = block;
    }
    int at = 0;
    for (int w = 0; w < nw; ++w) {
      const uint64_t word = words[w];
      const size_t wbase = base + 64 * static_cast<size_t>(w);
      const bool direct = std::is_same<L, TernaryF32>::value && ranges[w] == ~uint64_t{0};
      float* row = direct ? static_cast<float*>(out) + wbase : dense;
      for (int q = 0; q < 8; ++q) {
        const uint32_t m = static_cast<uint32_t>(word >> (8 * q)) & 0xffu;
        const __m256i lanes = _mm256_cmpeq_epi32(
            _mm256_and_si256(_mm256_set1_epi32(static_cast<int>(m)), select), select);
        const __m256 x = _mm256_permutevar8x32_ps(_mm256_loadu_ps(vals + at), ExpandIndex(m));
        const __m256 kept = _mm256_and_ps(x, _mm256_castsi256_ps(lanes));
        if (direct && stream) {
          _mm256_stream_ps(row + 8 * q, kept);
        } else {
          _mm256_storeu_ps(row + 8 * q, kept);
        }
        at += __builtin_popcount(m);
      }
      if (direct) continue;
      const size_t lo = w == 0 ? j - base : 0;
      const size_t hi = std::min<size_t>(64, stop - wbase);
      if (std::is_same<L, TernaryF32>::value) {
        std::memcpy(static_cast<float*>(out) + wbase + lo, dense + lo, sizeof(float) * (hi - lo));
      } else {
        uint16_t* o = static_cast<uint16_t*>(out) + wbase;
        size_t i = lo;
        for (; i < hi && i % 8 != 0; ++i) L::Store(o, i, dense[i]);
        for (; i + 8 <= hi; i += 8) {
          const __m256 x = _mm256_load_ps(dense + i);
          if (std::is_same<L, TernaryF16>::value) {
            StoreHalf8(o + i, x, stream);
          } else {
            StoreBf16x8(o + i, x, stream);
          }
        }
        for (; i < hi; ++i) L::Store(o, i, dense[i]);
      }
    }
    k += static_cast<size_t>(cnt);
    j = stop;
  }
  if (stream) _mm_sfence();
}

// TernaryGatherDecode of 2-bit codes into int8 sums, 128 elements (32 bytes of
// each image) at a time: with every field's sign bit flipped (x ^ 0b10) a code c
// reads c + 2 in [0, 3], so four byte-wise accumulators of (x >> 2k) & 3 (field k
// of each byte: elements 4b + k) add every image's fields, and subtracting 2n
// gives the sums (exact mod 256, so int8 for every |sum| <= 127). The fields are
// then stored back in element order.
SIEVE_AVX2 void Sum2x128(const uint8_t* const* wires, int n, size_t byte, __m256i bias,
                         int8_t* sums) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0xaa));
  const __m256i field = _mm256_set1_epi8(3);
  __m256i a0 = bias, a1 = bias, a2 = bias, a3 = bias;
  for (int r = 0; r < n; ++r) {
    const __m256i x = _mm256_xor_si256(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wires[r] + byte)), flip);
    a0 = _mm256_add_epi8(a0, _mm256_and_si256(x, field));
    a1 = _mm256_add_epi8(a1, _mm256_and_si256(_mm256_srli_epi16(x, 2), field));
    a2 = _mm256_add_epi8(a2, _mm256_and_si256(_mm256_srli_epi16(x, 4), field));
    a3 = _mm256_add_epi8(a3, _mm256_and_si256(_mm256_srli_epi16(x, 6), field));
  }
  // Per 128-bit lane (elements 0..63 | 64..127): t0/t1 pair fields 0, 1 of bytes
  // 0..7 / 8..15, t2/t3 fields 2, 3; u* then hold 16 elements in order each.
  const __m256i t0 = _mm256_unpacklo_epi8(a0, a1), t1 = _mm256_unpackhi_epi8(a0, a1);
  const __m256i t2 = _mm256_unpacklo_epi8(a2, a3), t3 = _mm256_unpackhi_epi8(a2, a3);
  const __m256i u0 = _mm256_unpacklo_epi16(t0, t2), u1 = _mm256_unpackhi_epi16(t0, t2);
  const __m256i u2 = _mm256_unpacklo_epi16(t1, t3), u3 = _mm256_unpackhi_epi16(t1, t3);
  __m256i* out = reinterpret_cast<__m256i*>(sums);
  _mm256_storeu_si256(out + 0, _mm256_permute2x128_si256(u0, u1, 0x20));
  _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(u2, u3, 0x20));
  _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(u0, u1, 0x31));
  _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(u2, u3, 0x31));
}

}  // namespace

// The entry points: one instance of the batch loops per floating type.
SIEVE_AVX2_FN void AbsMaxAvx2(const TernarySource& src, size_t count, float* scales) {
  SIEVE_TK_BY_LOADER(src.dtype, (batch::AbsMax<Avx2Ops, L>(src, count, scales)));
}

SIEVE_AVX2_FN void QuantizePack2Avx2(const TernarySource& src, size_t offset, size_t elems,
                                     uint8_t* wire) {
  SIEVE_TK_BY_LOADER(src.dtype, (batch::QuantizePack2<Avx2Ops, L>(src, offset, elems, wire)));
}

SIEVE_AVX2_FN void QuantizeAddInt8Avx2(const TernarySource& src, size_t offset, size_t elems,
                                       const uint8_t* wire, int w, int8_t* work) {
  SIEVE_TK_BY_LOADER(src.dtype,
                     (batch::QuantizeAddInt8<Avx2Ops, L>(src, offset, elems, wire, w, work)));
}

SIEVE_AVX2_FN void FeedbackUpdateAvx2(const TernarySource& sent, size_t count, float* residual) {
  SIEVE_TK_BY_LOADER(sent.dtype, (batch::FeedbackUpdate<Avx2Ops, L>(sent, count, residual)));
}

SIEVE_AVX2_FN void QuantizeLevelsAvx2(const TernarySource& src, size_t offset, size_t elems,
                          void (*sink)(void*, size_t, const int8_t*, int), void* ctx) {
  SIEVE_TK_BY_LOADER(src.dtype, (batch::QuantizeLevels<Avx2Ops, L>(src, offset, elems, sink, ctx)));
}

SIEVE_AVX2_FN void PackInt8Avx2(const int8_t* work, size_t elems, int w, uint8_t* wire) {
  batch::PackRange<Avx2Ops>(work, elems, w, wire);
}

SIEVE_AVX2_FN void UnpackInt8Avx2(const uint8_t* wire, size_t elems, int w, bool accumulate,
                                  int8_t* work) {
  batch::UnpackRange<Avx2Ops>(wire, elems, w, accumulate, work);
}

SIEVE_AVX2_FN void DequantizeInt8Avx2(DType dtype, const int8_t* sums, size_t offset, size_t elems,
                                      size_t block, const float* scales, int divisor, void* out,
                                      bool stream) {
  SIEVE_TK_BY_LOADER(dtype,
                     (Dequantize<L>(sums, offset, elems, block, scales, divisor, out, stream)));
}

SIEVE_AVX2_FN void DequantizeScatterInt8Avx2(DType dtype, const int8_t* sums, size_t offset,
                                             size_t block, const float* scales, int divisor,
                                             const uint64_t* bits, size_t begin, size_t end,
                                             void* out, bool stream) {
  SIEVE_TK_BY_LOADER(dtype, (DequantizeScatter<L>(sums, offset, block, scales, divisor, bits, begin,
                                                  end, out, stream)));
}

SIEVE_AVX2_FN void GatherSum2Avx2(const uint8_t* const* wires, int n, size_t elems, int8_t* sums) {
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(-2 * n));
  const size_t whole = elems / 128 * 128;
  for (size_t k = 0; k < whole; k += 128) Sum2x128(wires, n, k / 4, bias, sums + k);
  if (whole == elems) return;
  // The last, partial 128: each image's tail in a zero-padded copy (pad fields
  // read 0 and their sums are dropped).
  const size_t bytes = TernaryPackedBytes(elems - whole, 2);
  std::vector<uint8_t> pad(32 * static_cast<size_t>(n), 0);
  std::vector<const uint8_t*> tails(n);
  for (int r = 0; r < n; ++r) {
    std::memcpy(pad.data() + 32 * r, wires[r] + whole / 4, bytes);
    tails[r] = pad.data() + 32 * r;
  }
  alignas(32) int8_t tail[128];
  Sum2x128(tails.data(), n, 0, bias, tail);
  std::memcpy(sums + whole, tail, elems - whole);
}

SIEVE_AVX2_FN void PhiloxWordsAvx2(const PhiloxStream& rng, uint64_t oct0, size_t batches,
                                   uint32_t* words) {
  for (size_t b = 0; b < batches; ++b) Avx2Ops::Philox32(rng, oct0 + 32 * b, words + 128 * b);
}

#undef SIEVE_BY_LOADER

}  // namespace sieve::kernels::simd

#else  // not x86-64: never called (ActiveCpuIsa() is kPortable)

namespace sieve::kernels::simd {
void AbsMaxAvx2(const TernarySource&, size_t, float*) {}
void QuantizePack2Avx2(const TernarySource&, size_t, size_t, uint8_t*) {}
void QuantizeAddInt8Avx2(const TernarySource&, size_t, size_t, const uint8_t*, int, int8_t*) {}
void FeedbackUpdateAvx2(const TernarySource&, size_t, float*) {}
void QuantizeLevelsAvx2(const TernarySource&, size_t, size_t,
                    void (*)(void*, size_t, const int8_t*, int), void*) {}
void PackInt8Avx2(const int8_t*, size_t, int, uint8_t*) {}
void UnpackInt8Avx2(const uint8_t*, size_t, int, bool, int8_t*) {}
void DequantizeInt8Avx2(DType, const int8_t*, size_t, size_t, size_t, const float*, int, void*,
                        bool) {}
void DequantizeScatterInt8Avx2(DType, const int8_t*, size_t, size_t, const float*, int,
                               const uint64_t*, size_t, size_t, void*, bool) {}
void GatherSum2Avx2(const uint8_t* const*, int, size_t, int8_t*) {}
void PhiloxWordsAvx2(const PhiloxStream&, uint64_t, size_t, uint32_t*) {}
}  // namespace sieve::kernels::simd

#endif
