// Fuzzes the per-block scales a rank receives in the ternary all-reduce (any float bits: NaN,
// infinities, negatives, subnormals) together with received partial sums: dequantization to
// every output type and quantization with those scales must stay defined and, where the
// arithmetic is exact, give s * Q.
#include <cmath>
#include <cstring>
#include <vector>

#include "fuzz_check.h"
#include "kernels/ternary.h"

using namespace sieve::kernels;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sieve_fuzz::Reader in(data, size);
  const size_t block = 1 + in.Take<uint8_t>() % 64;
  const int nranks = 1 + in.Take<uint8_t>() % 127;
  const bool avg = in.Take<uint8_t>() & 1;
  size_t count = in.left() / 5;  // one int8 sum and a quarter of a float scale per element
  if (count > 2048) count = 2048;
  const size_t blocks = (count + block - 1) / block;
  std::vector<float> scales(blocks);
  for (float& s : scales) s = in.Take<float>();
  std::vector<int8_t> sums(count);
  for (auto& q : sums) q = static_cast<int8_t>(in.Take<int8_t>() % (nranks + 1));
  const int divisor = avg ? nranks : 1;
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBfloat16}) {
    std::vector<uint8_t> out(count * 4 + 1);
    TernaryDequantize(dt, TernaryWork::kInt8, sums.data(), count, block, scales.data(), divisor,
                      out.data());
    if (dt != DType::kFloat32) continue;
    for (size_t j = 0; j < count; ++j) {
      float got;
      std::memcpy(&got, out.data() + 4 * j, 4);
      float want = TernaryDequantizeOne(sums[j], scales[j / block], divisor);
      FUZZ_CHECK(std::memcmp(&got, &want, 4) == 0 || (std::isnan(got) && std::isnan(want)));
    }
  }
  // Quantizing a gradient with received scales: values stay in {-1, 0, 1}.
  std::vector<float> grad(count);
  for (size_t j = 0; j < count; ++j) grad[j] = static_cast<float>(sums[j]) * 0.37f;
  std::vector<int8_t> q(count);
  PhiloxStream rng{static_cast<uint64_t>(size), 1, 2};
  TernaryQuantizeReference(DType::kFloat32, grad.data(), 0, count, block, scales.data(), rng,
                           q.data());
  std::vector<int8_t> work(count);
  TernaryQuantizeAdd(DType::kFloat32, grad.data(), 0, count, block, scales.data(), rng, nullptr,
                     TernaryBits(1), TernaryWork::kInt8, work.data());
  for (size_t j = 0; j < count; ++j) {
    FUZZ_CHECK(q[j] >= -1 && q[j] <= 1);
    FUZZ_CHECK(work[j] == q[j]);  // the vectorized kernel agrees with the reference
  }
  return 0;
}
