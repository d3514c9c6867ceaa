// Driver loading and per-call pointer classification, without a GPU.
#include <gtest/gtest.h>

#include <vector>

#include "gpu/cuda_driver.h"
#include "gpu/gpu_runtime.h"
#include "gpu/memory_kind.h"
#include "support/fake_device.h"

namespace {

using sieve::gpu::MemoryKind;

TEST(CudaDriverLoad, MissingLibraryIsNotAnErrorJustNoCuda) {
  sieve::gpu::CudaDriver d;
  std::string why;
  EXPECT_FALSE(sieve::gpu::LoadCudaDriver("libsieve-no-such-cuda-driver.so.1", &d, &why));
  EXPECT_NE(why.find("cannot load libsieve-no-such-cuda-driver.so.1"), std::string::npos) << why;
  EXPECT_EQ(d.Init, nullptr);
}

#ifdef SIEVE_TEST_CUDA_STUB
// The toolkit's stub libcuda exports every symbol but initializes no device:
// proves each versioned name we resolve exists, and that cuInit's failure is
// reported (not a crash, not a device).
TEST(CudaDriverLoad, StubDriverResolvesEverySymbolThenReportsNoDevice) {
  sieve::gpu::CudaDriver d;
  std::string why;
  EXPECT_FALSE(sieve::gpu::LoadCudaDriver(SIEVE_TEST_CUDA_STUB, &d, &why));
  EXPECT_EQ(why.find("lacks"), std::string::npos) << why;
  EXPECT_NE(why.find("cuInit"), std::string::npos) << why;
}
#endif

TEST(GpuRuntime, HostMemoryIsAlwaysHost) {
  // Here (no driver) the runtime is host-only; on a GPU machine the driver
  // classifies; either way plain host memory is host.
  const sieve::gpu::GpuRuntime& rt = sieve::gpu::Runtime();
  ASSERT_NE(rt.classifier, nullptr);
  EXPECT_FALSE(rt.description.empty());
  std::vector<float> heap(17, 1.5f);
  int stack = 3;
  EXPECT_EQ(rt.classifier->Classify(heap.data()), MemoryKind::kHost);
  EXPECT_EQ(rt.classifier->Classify(&stack), MemoryKind::kHost);
  EXPECT_EQ(rt.classifier->Classify(nullptr), MemoryKind::kHost);
  if (!rt.available) {
    EXPECT_EQ(rt.ops, nullptr);
  }
}

TEST(ClassifyCall, AllHostAllDeviceAndMixed) {
  sieve_test::FakeClassifier fake;
  std::vector<char> device(4096), host(64);
  fake.AddArena(device.data(), device.size());
  MemoryKind kind = MemoryKind::kDevice;
  ASSERT_TRUE(sieve::gpu::ClassifyCall(fake, {{"sendbuff", host.data()}, {"recvbuff", &host[8]}},
                                       &kind).ok());
  EXPECT_EQ(kind, MemoryKind::kHost);
  ASSERT_TRUE(sieve::gpu::ClassifyCall(
                  fake, {{"sendbuff", device.data()}, {"recvbuff", &device[4095]}}, &kind)
                  .ok());
  EXPECT_EQ(kind, MemoryKind::kDevice);
  // One past the arena is not device memory.
  EXPECT_EQ(fake.Classify(device.data() + device.size()), MemoryKind::kHost);
  // Null buffers (unused on this rank) do not count.
  ASSERT_TRUE(sieve::gpu::ClassifyCall(fake, {{"sendbuff", nullptr}, {"recvbuff", &device[9]}},
                                       &kind).ok());
  EXPECT_EQ(kind, MemoryKind::kDevice);

  sieve::Status st = sieve::gpu::ClassifyCall(
      fake, {{"sendbuff", host.data()}, {"recvbuff", device.data()}}, &kind);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), sieve::Code::kInvalidUsage);
  EXPECT_NE(st.message().find("sendbuff"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("is host memory"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("recvbuff"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("is device memory"), std::string::npos) << st.message();
}

}  // namespace
