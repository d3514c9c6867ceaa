// Device memory for the device checks (gpu/device_checks.h) on the fake
// device: host blocks registered as device arenas, one fake stream.
#ifndef SIEVE_TESTS_SUPPORT_FAKE_MEMORY_H_
#define SIEVE_TESTS_SUPPORT_FAKE_MEMORY_H_

#include <cstring>
#include <deque>
#include <vector>

#include "gpu/device_checks.h"
#include "support/fake_device.h"

namespace sieve_test {

class FakeMemory : public DeviceMemory {
 public:
  explicit FakeMemory(ScopedFakeRuntime* rt) : rt_(rt) {}
  void* Alloc(size_t bytes) override {
    blocks_.emplace_back(bytes + 64);
    rt_->classifier.AddArena(blocks_.back().data(), bytes + 64);
    return blocks_.back().data();
  }
  void Upload(void* d, const void* h, size_t bytes) override {
    stream_.Drain();
    std::memcpy(d, h, bytes);
  }
  void Download(void* h, const void* d, size_t bytes) override {
    stream_.Drain();
    std::memcpy(h, d, bytes);
  }
  sieveStream_t stream() override { return stream_.handle(); }
  void Synchronize() override { stream_.Drain(); }
  FakeStream& fake_stream() { return stream_; }

 private:
  ScopedFakeRuntime* rt_;
  std::deque<std::vector<char>> blocks_;
  FakeStream stream_;
};

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_FAKE_MEMORY_H_
