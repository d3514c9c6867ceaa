// sieve-perf's per-collective rules: size conventions, bandwidth factors, buffer placement,
// input generation and result checking for every data type and reduction.
#include "perf_coll.h"

#include <math.h>
#include <string.h>

#include <algorithm>

namespace sieve {
namespace perf {
namespace {

constexpr int kMaxRanksWithTwos = 6;  // Products stay within 2^6, exact in every type.

uint16_t FloatToHalf(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return static_cast<uint16_t>(sign | 0x7e00);   // NaN.
  if (abs >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // >= 65520: inf.
  if (abs < 0x38800000) {  // Below 2^-14: subnormal, in units of 2^-24.
    float a;
    memcpy(&a, &abs, 4);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(nearbyintf(a * 16777216.0f)));
  }
  uint32_t h = ((((abs >> 23) - 112) << 10) | ((abs >> 13) & 0x3ff));
  uint32_t rest = abs & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // Round to nearest even.
  return static_cast<uint16_t>(sign | h);
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * ldexpf(static_cast<float>(mant), -24);
  uint32_t x = sign | (exp == 31 ? 0x7f800000 | (mant << 13) : ((exp + 112) << 23) | (mant << 13));
  float f;
  memcpy(&f, &x, 4);
  return f;
}

uint16_t FloatToBfloat16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

float Bfloat16ToFloat(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

template <typename T>
T* At(void* buf, size_t i) {
  return static_cast<T*>(buf) + i;
}

// Writes v (an integer for integer types) as element i of buf, wrapping like C casts.
void Store(sieveDataType_t type, void* buf, size_t i, double v) {
  int64_t n = static_cast<int64_t>(v);
  switch (type) {
    case sieveInt8:
      *At<int8_t>(buf, i) = static_cast<int8_t>(n);
      break;
    case sieveUint8:
      *At<uint8_t>(buf, i) = static_cast<uint8_t>(n);
      break;
    case sieveInt32:
      *At<int32_t>(buf, i) = static_cast<int32_t>(n);
      break;
    case sieveUint32:
      *At<uint32_t>(buf, i) = static_cast<uint32_t>(n);
      break;
    case sieveInt64:
      *At<int64_t>(buf, i) = n;
      break;
    case sieveUint64:
      *At<uint64_t>(buf, i) = static_cast<uint64_t>(n);
      break;
    case sieveFloat16:
      *At<uint16_t>(buf, i) = FloatToHalf(static_cast<float>(v));
      break;
    case sieveBfloat16:
      *At<uint16_t>(buf, i) = FloatToBfloat16(static_cast<float>(v));
      break;
    case sieveFloat32:
      *At<float>(buf, i) = static_cast<float>(v);
      break;
    default:
      *At<double>(buf, i) = v;
      break;
  }
}

double Load(sieveDataType_t type, const void* buf, size_t i) {
  void* p = const_cast<void*>(buf);
  switch (type) {
    case sieveInt8:
      return *At<int8_t>(p, i);
    case sieveUint8:
      return *At<uint8_t>(p, i);
    case sieveInt32:
      return *At<int32_t>(p, i);
    case sieveUint32:
      return *At<uint32_t>(p, i);
    case sieveInt64:
      return static_cast<double>(*At<int64_t>(p, i));
    case sieveUint64:
      return static_cast<double>(*At<uint64_t>(p, i));
    case sieveFloat16:
      return HalfToFloat(*At<uint16_t>(p, i));
    case sieveBfloat16:
      return Bfloat16ToFloat(*At<uint16_t>(p, i));
    case sieveFloat32:
      return *At<float>(p, i);
    default:
      return *At<double>(p, i);
  }
}

// v rounded to what the type can hold (wrapped or rounded to nearest).
double RoundTrip(sieveDataType_t type, double v) {
  unsigned char slot[8];
  Store(type, slot, 0, v);
  return Load(type, slot, 0);
}

bool IsFloat(sieveDataType_t type) {
  return type == sieveFloat16 || type == sieveBfloat16 || type == sieveFloat32 ||
         type == sieveFloat64;
}

bool IsUnsigned(sieveDataType_t type) {
  return type == sieveUint8 || type == sieveUint32 || type == sieveUint64;
}

// The largest integer whose partial sums stay exact in the type.
long ExactLimit(sieveDataType_t type) {
  switch (type) {
    case sieveInt8:
      return 127;
    case sieveUint8:
      return 255;
    case sieveFloat16:
      return 2048;
    case sieveBfloat16:
      return 256;
    default:
      return 1 << 20;
  }
}

uint64_t Mix(uint64_t x) {  // splitmix64 finalizer.
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

Shape ShapeOf(Collective coll, size_t bytes, int nranks, size_t type_size) {
  Shape s;
  size_t n = static_cast<size_t>(nranks), count = bytes / type_size;
  if (coll == Collective::kAllGather || coll == Collective::kReduceScatter) {
    count -= count % n;
    s.call_count = count / n;
    s.send_count = coll == Collective::kAllGather ? count / n : count;
    s.recv_count = coll == Collective::kAllGather ? count : count / n;
  } else {
    s.call_count = s.send_count = s.recv_count = count;
  }
  s.count = count;
  s.bytes = count * type_size;
  return s;
}

double BusBwFactor(Collective coll, int nranks) {
  double n = nranks;
  switch (coll) {
    case Collective::kAllReduce:
      return 2 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      return (n - 1) / n;
    default:
      return 1;
  }
}

const char* SizeMeaning(Collective coll) {
  switch (coll) {
    case Collective::kAllGather:
      return "size = total gathered bytes (each rank's output); each rank sends size/nranks";
    case Collective::kReduceScatter:
      return "size = bytes of each rank's input; each rank receives size/nranks";
    case Collective::kSendRecv:
      return "size = bytes each rank sends to rank+1 and receives from rank-1";
    default:
      return "size = bytes of each rank's output (= its input)";
  }
}

bool SupportsInPlace(Collective coll) { return coll != Collective::kSendRecv; }

CallBuffers PlaceBuffers(Collective coll, const Shape& shape, int rank, bool in_place,
                         size_t type_size, void* send_base, void* recv_base) {
  if (!in_place) return {send_base, recv_base};
  char* send = static_cast<char*>(send_base);
  char* recv = static_cast<char*>(recv_base);
  size_t r = static_cast<size_t>(rank);
  if (coll == Collective::kAllGather) return {recv + r * shape.send_count * type_size, recv};
  if (coll == Collective::kReduceScatter) return {send, send + r * shape.recv_count * type_size};
  return {recv, recv};
}

Checker::Checker(const Options& opts, int rank, int nranks)
    : opts_(opts), rank_(rank), nranks_(nranks) {
  range_ = std::max(1L, std::min(4L, ExactLimit(opts.type) / nranks));
}

double Checker::Input(int rank, size_t index, uint64_t seed) const {
  uint64_t h = Mix(seed ^ Mix((static_cast<uint64_t>(rank) << 40) ^ index));
  bool is_unsigned = IsUnsigned(opts_.type);
  if (opts_.op == sieveProd && HasOp(opts_.coll)) {
    if (rank < kMaxRanksWithTwos && h % 4 == 0) return 2;  // Few 2s: products stay small.
    return !is_unsigned && (h >> 8) % 2 ? -1 : 1;
  }
  long span = is_unsigned ? range_ + 1 : 2 * range_ + 1;
  return static_cast<double>(static_cast<long>((h >> 8) % static_cast<uint64_t>(span)) -
                             (is_unsigned ? 0 : range_));
}

double Checker::ReduceOverRanks(size_t index, uint64_t seed) const {
  double acc = Input(0, index, seed);
  for (int r = 1; r < nranks_; ++r) {
    double v = Input(r, index, seed);
    switch (opts_.op) {
      case sieveProd:
        acc *= v;
        break;
      case sieveMax:
        acc = std::max(acc, v);
        break;
      case sieveMin:
        acc = std::min(acc, v);
        break;
      default:
        acc += v;
        break;
    }
  }
  if (opts_.op != sieveAvg) return acc;
  return IsFloat(opts_.type) ? acc / nranks_ : trunc(acc / nranks_);
}

bool Checker::Expected(const Shape& shape, size_t i, uint64_t seed, double* value) const {
  int prev = (rank_ + nranks_ - 1) % nranks_;
  switch (opts_.coll) {
    case Collective::kBroadcast:
      *value = Input(opts_.root, i, seed);
      break;
    case Collective::kSendRecv:
      *value = Input(prev, i, seed);
      break;
    case Collective::kAllGather:
      *value = Input(static_cast<int>(i / shape.send_count), i % shape.send_count, seed);
      break;
    case Collective::kReduceScatter:
      *value = ReduceOverRanks(static_cast<size_t>(rank_) * shape.recv_count + i, seed);
      break;
    case Collective::kReduce:
      if (rank_ != opts_.root) return false;
      *value = ReduceOverRanks(i, seed);
      break;
    default:
      *value = keep_ != nullptr && keep_[i] == 0 ? 0.0 : ReduceOverRanks(i, seed);
      break;
  }
  *value = RoundTrip(opts_.type, *value);
  return true;
}

bool Checker::Matches(double got, double want) const {
  if (got == want) return true;
  if ((opts_.op != sieveAvg && subnet_ == nullptr) || !HasOp(opts_.coll) || !IsFloat(opts_.type))
    return false;
  // Average may be computed as a sum of pre-scaled inputs: allow a few ulps per rank.
  int bits = opts_.type == sieveFloat16    ? 11
             : opts_.type == sieveBfloat16 ? 8
             : opts_.type == sieveFloat32  ? 24
                                           : 53;
  return fabs(got - want) <= ldexp(4.0 * (nranks_ + 1), -bits) * std::max(1.0, fabs(want));
}

void Checker::Prepare(const Shape& shape, const CallBuffers& bufs, uint64_t seed) const {
  size_t type_size = TypeSize(opts_.type);
  memset(bufs.recv, 0xff, shape.recv_count * type_size);
  if (opts_.coll == Collective::kBroadcast && rank_ != opts_.root) return;
  for (size_t i = 0; i < shape.send_count; ++i) {
    bool zero = zero_outside_ && keep_ != nullptr && keep_[i] == 0;
    Store(opts_.type, bufs.send, i, zero ? 0.0 : Input(rank_, i, seed));
  }
}

int64_t Checker::CountWrongSubnet(const Shape& shape, const CallBuffers& bufs,
                                  uint64_t seed) const {
  const bool in_place = bufs.send == bufs.recv;
  const size_t type_size = TypeSize(opts_.type);
  int64_t wrong = 0;
  for (size_t k = 0; k + 1 < subnet_->offsets.size(); ++k) {
    const std::vector<int>& holders = subnet_->holders[k];
    std::vector<int> who = subnet_->Contributors(k);
    const bool changes =
        !who.empty() && std::find(holders.begin(), holders.end(), rank_) != holders.end();
    for (size_t i = subnet_->offsets[k]; i < subnet_->offsets[k + 1] && i < shape.recv_count; ++i) {
      if (!changes && !in_place) {  // still Prepare's 0xff poison
        const unsigned char* p = static_cast<const unsigned char*>(bufs.recv) + i * type_size;
        wrong += std::any_of(p, p + type_size, [](unsigned char b) { return b != 0xff; });
        continue;
      }
      double want = 0;
      if (changes) {
        for (int r : who) want += Input(r, i, seed);
        want /= static_cast<double>(who.size());
      } else {
        want = Input(rank_, i, seed);
      }
      wrong += !Matches(Load(opts_.type, bufs.recv, i), RoundTrip(opts_.type, want));
    }
  }
  return wrong;
}

int64_t Checker::CountWrong(const Shape& shape, const CallBuffers& bufs, uint64_t seed) const {
  if (subnet_ != nullptr) return CountWrongSubnet(shape, bufs, seed);
  int64_t wrong = 0;
  double want;
  for (size_t i = 0; i < shape.recv_count; ++i) {
    if (!Expected(shape, i, seed, &want)) continue;
    wrong += !Matches(Load(opts_.type, bufs.recv, i), want);
  }
  return wrong;
}

}  // namespace perf
}  // namespace sieve
