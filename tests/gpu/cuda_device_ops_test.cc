// CudaDeviceOps and DriverClassifier over a fake driver table: the calls the
// real driver would get (names, addresses, flags), without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "gpu/cuda_device_ops.h"
#include "gpu/memory_kind.h"

namespace {

using sieve::gpu::CudaDeviceOps;
using sieve::gpu::CudaDriver;
namespace cu = sieve::gpu::cu;

constexpr cu::DevicePtr kDeviceOffset = 0x7f0000000000ull;  // where the "device" sees host memory

struct Recorded {
  cu::Stream stream;
  cu::DevicePtr addr;
  uint32_t value;
  unsigned flags;
};
std::vector<Recorded> g_writes, g_waits;
cu::Context g_ctx = nullptr;
char g_device_range[4096];

cu::Result CtxGetCurrent(cu::Context* c) {
  *c = g_ctx;
  return cu::kSuccess;
}
cu::Result MemHostAlloc(void** p, size_t bytes, unsigned flags) {
  if (flags != (cu::kMemHostAllocPortable | cu::kMemHostAllocDeviceMap)) return 1;
  *p = std::aligned_alloc(64, (bytes + 63) & ~size_t{63});
  return cu::kSuccess;
}
cu::Result MemFreeHost(void* p) {
  std::free(p);
  return cu::kSuccess;
}
std::vector<void*> g_registered;
unsigned g_register_flags = 0;
cu::Result MemHostRegister(void* p, size_t, unsigned flags) {
  g_register_flags = flags;
  g_registered.push_back(p);
  return cu::kSuccess;
}
cu::Result MemHostUnregister(void* p) {
  for (auto it = g_registered.begin(); it != g_registered.end(); ++it)
    if (*it == p) {
      g_registered.erase(it);
      return cu::kSuccess;
    }
  return cu::kErrorInvalidValue;
}
cu::Result MemHostGetDevicePointer(cu::DevicePtr* d, void* host, unsigned) {
  *d = reinterpret_cast<cu::DevicePtr>(host) + kDeviceOffset;
  return cu::kSuccess;
}
cu::Result WriteValue(cu::Stream s, cu::DevicePtr a, uint32_t v, unsigned f) {
  g_writes.push_back({s, a, v, f});
  return cu::kSuccess;
}
cu::Result WaitValue(cu::Stream s, cu::DevicePtr a, uint32_t v, unsigned f) {
  g_waits.push_back({s, a, v, f});
  return cu::kSuccess;
}
cu::Result FailingCopy(void*, cu::DevicePtr, size_t, cu::Stream) { return 700; }
cu::Result ErrorString(cu::Result r, const char** s) {
  *s = r == 700 ? "an illegal memory access was encountered" : "other";
  return cu::kSuccess;
}
cu::Result PointerAttribute(void* data, int attribute, cu::DevicePtr ptr) {
  if (attribute != cu::kPointerAttributeMemoryType) return cu::kErrorInvalidValue;
  auto p = reinterpret_cast<const char*>(ptr);
  if (p < g_device_range || p >= g_device_range + sizeof g_device_range)
    return cu::kErrorInvalidValue;  // what the driver says of plain host memory
  *static_cast<unsigned*>(data) = cu::kMemoryTypeDevice;
  return cu::kSuccess;
}

CudaDriver FakeDriver(int version) {
  CudaDriver d;
  d.CtxGetCurrent = CtxGetCurrent;
  d.MemHostAlloc = MemHostAlloc;
  d.MemFreeHost = MemFreeHost;
  d.MemHostGetDevicePointer = MemHostGetDevicePointer;
  d.MemHostRegister = MemHostRegister;
  d.MemHostUnregister = MemHostUnregister;
  d.StreamWriteValue32 = WriteValue;
  d.StreamWaitValue32 = WaitValue;
  d.MemcpyDtoHAsync = FailingCopy;
  d.GetErrorString = ErrorString;
  d.PointerGetAttribute = PointerAttribute;
  d.driver_version = version;
  return d;
}

TEST(CudaDeviceOps, PinnedMemoryNeedsACurrentContext) {
  CudaDriver d = FakeDriver(13000);
  CudaDeviceOps ops(&d);
  g_ctx = nullptr;
  void* p = nullptr;
  sieve::Status st = ops.AllocPinned(100, &p);
  EXPECT_EQ(st.code(), sieve::Code::kCudaError);
  EXPECT_NE(st.message().find("cudaSetDevice"), std::string::npos) << st.message();
}

TEST(CudaDeviceOps, FlagsUseTheMappedDeviceAddressAndOrderedFlags) {
  CudaDriver d = FakeDriver(13000);
  CudaDeviceOps ops(&d);
  g_ctx = reinterpret_cast<cu::Context>(0x1);
  g_writes.clear();
  g_waits.clear();
  void* p = nullptr;
  ASSERT_TRUE(ops.AllocPinned(1024, &p).ok());
  uint32_t* word = static_cast<uint32_t*>(p) + 5;
  auto stream = reinterpret_cast<cu::Stream>(0x42);
  ASSERT_TRUE(ops.WriteFlag(stream, word, 7).ok());
  ASSERT_TRUE(ops.WaitFlag(stream, word, 9).ok());
  ASSERT_EQ(g_writes.size(), 1u);
  ASSERT_EQ(g_waits.size(), 1u);
  EXPECT_EQ(g_writes[0].addr, reinterpret_cast<cu::DevicePtr>(word) + kDeviceOffset);
  EXPECT_EQ(g_writes[0].value, 7u);
  EXPECT_EQ(g_writes[0].flags, cu::kStreamWriteValueDefault);  // fenced, ordered
  EXPECT_EQ(g_waits[0].addr, reinterpret_cast<cu::DevicePtr>(word) + kDeviceOffset);
  EXPECT_EQ(g_waits[0].flags, cu::kStreamWaitValueGeq);
  EXPECT_EQ(g_waits[0].stream, stream);
  // A word outside our pinned memory is refused, not passed to the driver.
  uint32_t stray = 0;
  EXPECT_EQ(ops.WriteFlag(stream, &stray, 1).code(), sieve::Code::kInternalError);
  EXPECT_EQ(ops.WriteFlag(stream, static_cast<uint32_t*>(p) + 256, 1).code(),
            sieve::Code::kInternalError);
  EXPECT_EQ(g_writes.size(), 1u);
  ops.FreePinned(p);
  EXPECT_EQ(ops.WriteFlag(stream, word, 1).code(), sieve::Code::kInternalError);
}

TEST(CudaDeviceOps, RegisteredMemoryIsPortableMappedAndAddressable) {
  CudaDriver d = FakeDriver(13000);
  CudaDeviceOps ops(&d);
  std::vector<char> area(8192);
  g_ctx = nullptr;
  EXPECT_EQ(ops.RegisterPinned(area.data(), area.size()).code(), sieve::Code::kCudaError);
  EXPECT_TRUE(g_registered.empty());  // no context: the driver is not asked
  g_ctx = reinterpret_cast<cu::Context>(0x1);
  g_writes.clear();
  ASSERT_TRUE(ops.RegisterPinned(area.data(), area.size()).ok());
  ASSERT_EQ(g_registered, std::vector<void*>{area.data()});
  EXPECT_EQ(g_register_flags, cu::kMemHostRegisterPortable | cu::kMemHostRegisterDeviceMap);
  auto* word = reinterpret_cast<uint32_t*>(area.data() + 4096);
  ASSERT_TRUE(ops.WriteFlag(nullptr, word, 3).ok());
  ASSERT_EQ(g_writes.size(), 1u);
  EXPECT_EQ(g_writes[0].addr, reinterpret_cast<cu::DevicePtr>(word) + kDeviceOffset);
  ops.UnregisterPinned(area.data());
  EXPECT_TRUE(g_registered.empty());
  EXPECT_EQ(ops.WriteFlag(nullptr, word, 4).code(), sieve::Code::kInternalError);
}

TEST(CudaDeviceOps, DriverErrorsAreNamedAndStreamMemOpsFollowTheDriverVersion) {
  CudaDriver d = FakeDriver(11080);
  CudaDeviceOps ops(&d);
  char host[16];
  sieve::Status st = ops.CopyToHost(host, g_device_range, 16, nullptr);
  EXPECT_EQ(st.code(), sieve::Code::kCudaError);
  EXPECT_EQ(st.message(), "cuMemcpyDtoHAsync: an illegal memory access was encountered (700)");
  EXPECT_FALSE(ops.HasStreamMemOps());
  CudaDriver d13 = FakeDriver(13000);
  EXPECT_TRUE(CudaDeviceOps(&d13).HasStreamMemOps());
}

TEST(DriverClassifier, AsksTheDriverForTheMemoryType) {
  CudaDriver d = FakeDriver(13000);
  sieve::gpu::DriverClassifier c(&d);
  std::vector<int> host(8);
  EXPECT_EQ(c.Classify(g_device_range + 100), sieve::gpu::MemoryKind::kDevice);
  EXPECT_EQ(c.Classify(host.data()), sieve::gpu::MemoryKind::kHost);
  EXPECT_EQ(c.Classify(nullptr), sieve::gpu::MemoryKind::kHost);
}

}  // namespace
