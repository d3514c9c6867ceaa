// Shared by the fuzz harnesses: an invariant check that crashes (so libFuzzer and the replay
// runner report the input), and a little reader that carves typed values from the input.
#ifndef SIEVE_TESTS_FUZZ_FUZZ_CHECK_H_
#define SIEVE_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define FUZZ_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                   \
    }                                                                                 \
  } while (0)

namespace sieve_fuzz {

// Takes bytes from the front of the input; past the end it yields zeros.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), left_(size) {}
  template <typename T>
  T Take() {
    T v{};
    size_t n = left_ < sizeof(T) ? left_ : sizeof(T);
    if (n > 0) std::memcpy(&v, p_, n);
    p_ += n;
    left_ -= n;
    return v;
  }
  const uint8_t* rest() const { return p_; }
  size_t left() const { return left_; }

 private:
  const uint8_t* p_;
  size_t left_;
};

}  // namespace sieve_fuzz

#endif  // SIEVE_TESTS_FUZZ_FUZZ_CHECK_H_
