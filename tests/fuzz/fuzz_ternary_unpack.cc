// Fuzzes the ternary wire decoder: a received packed range of partial sums in w bits, unpacked
// (and accumulated) into the work type, compared with the bit-by-bit reference. The wire image
// is copied to a buffer of exactly its size so any read past it is caught by ASan.
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_check.h"
#include "kernels/ternary.h"

using namespace sieve::kernels;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sieve_fuzz::Reader in(data, size);
  const int nranks = 2 + static_cast<int>(in.Take<uint32_t>() % ((1u << 20) - 1));
  const int k = 1 + static_cast<int>(in.Take<uint32_t>() % static_cast<uint32_t>(nranks));
  const bool accumulate = in.Take<uint8_t>() & 1;
  const int w = TernaryBits(k);
  const TernaryWork wt = TernaryWorkFor(nranks);
  size_t elems = in.left() * 8 / static_cast<size_t>(w);
  if (elems > 4096) elems = 4096;
  const size_t bytes = TernaryPackedBytes(elems, w);
  std::unique_ptr<uint8_t[]> wire(new uint8_t[bytes]);
  std::memcpy(wire.get(), in.rest(), bytes);

  std::vector<int32_t> want(elems);
  TernaryUnpackReference(wire.get(), elems, w, want.data());
  // Prior partial sums within [-k, k], as the ring holds them.
  std::vector<int32_t> prior(elems);
  for (size_t i = 0; i < elems; ++i) prior[i] = static_cast<int32_t>(i % (2 * k + 1)) - k;
  const size_t esize = static_cast<size_t>(wt);
  std::unique_ptr<char[]> work(new char[elems * esize + 1]);
  for (size_t i = 0; i < elems; ++i) {
    if (wt == TernaryWork::kInt8) reinterpret_cast<int8_t*>(work.get())[i] = static_cast<int8_t>(prior[i]);
    if (wt == TernaryWork::kInt16) reinterpret_cast<int16_t*>(work.get())[i] = static_cast<int16_t>(prior[i]);
    if (wt == TernaryWork::kInt32) reinterpret_cast<int32_t*>(work.get())[i] = prior[i];
  }
  TernaryUnpack(wt, wire.get(), elems, w, accumulate, work.get());
  for (size_t i = 0; i < elems; ++i) {
    int64_t expect = want[i] + (accumulate ? prior[i] : 0);
    int64_t got = wt == TernaryWork::kInt8    ? reinterpret_cast<int8_t*>(work.get())[i]
                  : wt == TernaryWork::kInt16 ? reinterpret_cast<int16_t*>(work.get())[i]
                                              : reinterpret_cast<int32_t*>(work.get())[i];
    // Values a hostile sender puts outside [-k, k] may wrap in the narrow type, never more.
    if (expect >= -(int64_t{1} << (8 * esize - 1)) && expect < (int64_t{1} << (8 * esize - 1)))
      FUZZ_CHECK(got == expect);
  }
  return 0;
}
