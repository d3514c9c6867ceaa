// Exact checks of every mode on a communicator made by a shrink or a grow.
#include "support/elastic_checks.h"

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "support/mask_reference.h"
#include "support/reference.h"
#include "support/subnet_reference.h"
#include "support/ternary_reference.h"

namespace sieve_test {

namespace {

constexpr size_t kCount = 20011;  // odd, several ring segments of small messages

std::string Failed(const char* what, sieveComm_t comm) {
  return std::string(what) + ": " + sieveGetLastError(comm);
}

std::string Wrong(const char* what, size_t wrong, size_t first) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%s: %zu of %zu elements wrong (first at %zu)", what, wrong,
                kCount, first);
  return buf;
}

std::string Dense(sieveComm_t comm, int rank, int n, uint64_t seed, sieveDataType_t dtype) {
  const size_t es = TypeSize(dtype);
  std::vector<char> send(kCount * es), recv(kCount * es), expected(kCount * es);
  FillInput(seed, rank, dtype, sieveSum, 0, kCount, send.data());
  if (sieveAllReduce(send.data(), recv.data(), kCount, dtype, sieveSum, comm, nullptr) !=
      sieveSuccess)
    return Failed("dense all-reduce", comm);
  ExpectedReduction(seed, n, dtype, sieveSum, 0, kCount, expected.data());
  size_t first = 0, wrong = CountMismatches(recv.data(), expected.data(), kCount, es, &first);
  return wrong ? Wrong(TypeName(dtype), wrong, first) : "";
}

std::string Masked(sieveComm_t comm, int rank, int n, uint64_t seed) {
  std::vector<uint8_t> mask = RandomMask(seed, kCount, 0.3);
  sieveMask_t handle = nullptr;
  if (sieveMaskRegister(comm, mask.data(), sieveMaskBytes, kCount, sieveMaskStrict, &handle) !=
      sieveSuccess)
    return Failed("mask registration", comm);
  std::vector<float> send(kCount), recv(kCount), expected(kCount);
  FillInput(seed, rank, sieveFloat32, sieveSum, 0, kCount, send.data());
  sieveResult_t r = sieveAllReduceMasked(send.data(), recv.data(), kCount, sieveFloat32, sieveSum,
                                         handle, comm, nullptr);
  sieveMaskDeregister(handle);
  if (r != sieveSuccess) return Failed("masked all-reduce", comm);
  ExpectedMasked(seed, n, sieveFloat32, sieveSum, mask, expected.data());
  size_t first = 0, wrong = CountMismatches(recv.data(), expected.data(), kCount, 4, &first);
  return wrong ? Wrong("masked", wrong, first) : "";
}

std::string Ternary(sieveComm_t comm, int rank, int n, uint64_t seed, bool two_per_host) {
  TernaryCase c;
  c.input_seed = seed;
  c.nranks = n;
  c.count = kCount;
  c.block = 256;
  c.seed = seed + 1;
  c.step = 3;
  std::vector<float> send(kCount), recv(kCount);
  FillTernaryInput(c.input_seed, rank, sieveFloat32, kCount, send.data());
  sieveTernaryParams_t params = TernaryParams(c.seed, c.step, c.block);
  if (sieveAllReduceTernary(send.data(), recv.data(), kCount, sieveFloat32, sieveSum, &params, comm,
                            nullptr) != sieveSuccess)
    return Failed("ternary all-reduce", comm);
  std::vector<char> expected;
  if (two_per_host) {
    std::vector<std::vector<char>> inputs(n, std::vector<char>(kCount * 4));
    for (int r = 0; r < n; ++r) FillTernaryInput(c.input_seed, r, sieveFloat32, kCount, inputs[r].data());
    expected = ExpectedHierTernary(inputs, sieveFloat32, sieveSum, kCount, c.block, c.seed, c.step);
  } else {
    expected = ExpectedTernary(c);
  }
  size_t first = 0, wrong = CountMismatches(recv.data(), expected.data(), kCount, 4, &first);
  return wrong ? Wrong("ternary", wrong, first) : "";
}

std::string Subnet(sieveComm_t comm, int rank, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  TestLayout layout = RandomLayout(rng, n, 7, 3000);
  const size_t count = LayoutCount(layout);
  std::vector<sieveSegment_t> segs = ToApi(layout);
  sieveLayout_t handle = nullptr;
  if (sieveLayoutRegister(comm, count, segs.data(), static_cast<int>(segs.size()), &handle) !=
      sieveSuccess)
    return Failed("layout registration", comm);
  std::vector<float> send(count), recv(count, 0.5f), expected(count);
  FillInput(seed, rank, sieveFloat32, sieveSum, 0, count, send.data());
  std::vector<float> before = recv;
  sieveResult_t r =
      sieveAllReduceSubnet(send.data(), recv.data(), count, sieveFloat32, handle, comm, nullptr);
  sieveLayoutDeregister(handle);
  if (r != sieveSuccess) return Failed("subnet all-reduce", comm);
  ExpectedSubnet(seed, n, rank, sieveFloat32, layout, nullptr, before.data(), expected.data());
  size_t first = 0, wrong = CountMismatches(recv.data(), expected.data(), count, 4, &first);
  return wrong ? Wrong("subnet", wrong, first) : "";
}

}  // namespace

std::string CheckAllModes(sieveComm_t comm, int rank, int nranks, uint64_t seed,
                          bool two_per_host) {
  std::string e = Dense(comm, rank, nranks, seed, sieveFloat32);
  if (e.empty()) e = Dense(comm, rank, nranks, seed + 1, sieveInt32);
  if (e.empty()) e = Masked(comm, rank, nranks, seed + 2);
  if (e.empty()) e = Ternary(comm, rank, nranks, seed + 3, two_per_host);
  if (e.empty()) e = Subnet(comm, rank, nranks, seed + 4);
  return e;
}

sieveMask_t RegisterTestMask(sieveComm_t comm, size_t count) {
  std::vector<uint8_t> mask = RandomMask(99, count, 0.5);
  sieveMask_t handle = nullptr;
  if (sieveMaskRegister(comm, mask.data(), sieveMaskBytes, count, sieveMaskStrict, &handle) !=
      sieveSuccess)
    return nullptr;
  return handle;
}

std::string CheckStaleMask(sieveComm_t comm, sieveMask_t stale, size_t count) {
  std::vector<float> buf(count, 1.0f);
  sieveResult_t r = sieveAllReduceMasked(buf.data(), buf.data(), count, sieveFloat32, sieveSum,
                                         stale, comm, nullptr);
  std::string msg = sieveGetLastError(comm);
  if (r != sieveInvalidArgument) return "a stale mask gave " + std::to_string(r) + ": " + msg;
  if (msg.find("shrunk or grown from") == std::string::npos)
    return "the stale-mask error does not say why: " + msg;
  return "";
}

}  // namespace sieve_test
