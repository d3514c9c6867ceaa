// CudaDeviceOps' kernel launches over a fake driver table: the module is the
// embedded image, entries are looked up by their extern "C" names, and the
// argument arrays match the entries' signatures (kernels/cuda/module_entry.cu).
// The fake "launches" by running the CPU kernel on the arguments it was given,
// so a swapped or mis-sized argument shows as a wrong result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpu/cuda_device_ops.h"
#include "gpu/kernel_image.h"
#include "gpu/thread_role.h"
#include "kernels/block_quant.h"
#include "kernels/masked_pack.h"
#include "kernels/nonzero.h"
#include "kernels/reduce.h"
#include "kernels/ternary.h"
#include "kernels/ternary_feedback.h"

namespace {

using sieve::gpu::CudaDeviceOps;
using sieve::gpu::CudaDriver;
namespace cu = sieve::gpu::cu;

std::vector<std::string> g_names;  // function handle k+1 is g_names[k]
std::vector<std::string> g_launched;
std::vector<unsigned> g_blocks;
const void* g_loaded_image = nullptr;
cu::Stream g_stream = nullptr;

const auto kCtx = reinterpret_cast<cu::Context>(0x1);
thread_local std::vector<cu::Context> t_ctx_stack;  // the thread's current context: back()
std::vector<cu::Context> g_free_ctx;               // current context at each cuMemFreeAsync
cu::DevicePtr g_next_ptr = 0x1000;
int g_module_loads = 0, g_allocs_async = 0;

cu::Result CtxGetCurrent(cu::Context* c) {
  *c = t_ctx_stack.empty() ? nullptr : t_ctx_stack.back();
  return cu::kSuccess;
}
cu::Result CtxPush(cu::Context c) {
  t_ctx_stack.push_back(c);
  return cu::kSuccess;
}
cu::Result CtxPop(cu::Context* c) {
  if (t_ctx_stack.empty()) return cu::kErrorInvalidValue;
  *c = t_ctx_stack.back();
  t_ctx_stack.pop_back();
  return cu::kSuccess;
}
cu::Result MemAllocAsync(cu::DevicePtr* p, size_t bytes, cu::Stream) {
  ++g_allocs_async;
  *p = g_next_ptr;
  g_next_ptr += bytes;
  return cu::kSuccess;
}
cu::Result MemFreeAsync(cu::DevicePtr, cu::Stream) {
  cu::Context c = nullptr;
  CtxGetCurrent(&c);
  g_free_ctx.push_back(c);
  return c != nullptr ? cu::kSuccess : cu::kErrorInvalidValue;
}
int g_pools = 1;  // CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
struct EventOp {
  std::string what;  // "record" or "wait"
  cu::Stream stream;
  cu::Event event;
};
std::vector<EventOp> g_event_ops;
cu::Result CtxGetDevice(cu::Device* d) {
  if (t_ctx_stack.empty()) return 201;  // CUDA_ERROR_INVALID_CONTEXT
  *d = 0;
  return cu::kSuccess;
}
cu::Result DeviceGetAttribute(int* v, int attribute, cu::Device) {
  if (attribute != cu::kDeviceAttributeMemoryPoolsSupported) return cu::kErrorInvalidValue;
  *v = g_pools;
  return cu::kSuccess;
}
cu::Result EventCreate(cu::Event* e, unsigned flags) {
  if (flags != cu::kEventDisableTiming) return cu::kErrorInvalidValue;
  *e = reinterpret_cast<cu::Event>(0xe0 + g_event_ops.size());
  return cu::kSuccess;
}
cu::Result EventRecord(cu::Event e, cu::Stream s) {
  g_event_ops.push_back({"record", s, e});
  return cu::kSuccess;
}
cu::Result StreamWaitEvent(cu::Stream s, cu::Event e, unsigned) {
  g_event_ops.push_back({"wait", s, e});
  return cu::kSuccess;
}
cu::Result EventDestroy(cu::Event) { return cu::kSuccess; }
cu::Result MemcpyHtoDAsync(cu::DevicePtr dst, const void* src, size_t bytes, cu::Stream) {
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);  // "device" memory is host memory here
  return cu::kSuccess;
}
cu::Result ModuleLoadData(cu::Module* m, const void* image) {
  ++g_module_loads;
  g_loaded_image = image;
  *m = reinterpret_cast<cu::Module>(0x2);
  return cu::kSuccess;
}
cu::Result ModuleGetFunction(cu::Function* f, cu::Module, const char* name) {
  g_names.push_back(name);
  *f = reinterpret_cast<cu::Function>(g_names.size());
  return cu::kSuccess;
}
template <typename T>
T Arg(void** params, int i) {
  T v;
  std::memcpy(&v, params[i], sizeof v);
  return v;
}
// The ternary entries (sieve_ternary_{absmax,quantize,dequantize,quantize_feedback,
// feedback_apply}_{f32,f16,bf16}) on the host.
cu::Result LaunchTernary(const std::string& name, void** p) {
  using sieve::kernels::DType;
  const std::string type = name.substr(name.rfind('_') + 1);
  DType dt = type == "f32" ? DType::kFloat32 : type == "f16" ? DType::kFloat16 : DType::kBfloat16;
  if (type != "f32" && type != "f16" && type != "bf16") return cu::kErrorInvalidValue;
  if (name.rfind("sieve_ternary_quantize_feedback_", 0) == 0) {
    const size_t count = Arg<size_t>(p, 1), block = Arg<size_t>(p, 2);
    const auto* scales = Arg<const float*>(p, 3);
    const auto ph = Arg<sieve::kernels::PhiloxStream>(p, 4);
    const int levels = Arg<int>(p, 7);
    sieve::kernels::TernarySource src =
        sieve::kernels::TernarySourceOf(dt, Arg<const void*>(p, 0), nullptr, block, scales, ph);
    src.levels = levels;
    sieve::kernels::TernaryQuantizePack(src, 0, count, sieve::kernels::TernaryBits(levels),
                                        Arg<void*>(p, 5));
    sieve::kernels::TernaryFeedbackUpdate(dt, Arg<const void*>(p, 0), count, block, scales, ph,
                                          Arg<float*>(p, 6), levels);
  } else if (name.rfind("sieve_ternary_feedback_apply_", 0) == 0) {
    auto* residual = Arg<float*>(p, 1);
    const size_t count = Arg<size_t>(p, 4);
    if (Arg<int>(p, 2) != 0) std::fill(residual, residual + count, 0.0f);  // fresh
    sieve::kernels::TernaryFeedbackApply(dt, Arg<const void*>(p, 0), residual, Arg<void*>(p, 3),
                                         count);
  } else if (name.rfind("sieve_ternary_dequantize_scatter_", 0) == 0) {
    // Dequantized in order, then element k moved to out[idx[k]].
    const size_t nnz = Arg<size_t>(p, 1), es = sieve::kernels::DTypeSize(dt);
    std::vector<int32_t> sums(nnz);
    sieve::kernels::TernaryUnpackReference(Arg<const void*>(p, 0), nnz, Arg<int>(p, 2),
                                           sums.data());
    std::vector<char> values(nnz * es);
    sieve::kernels::TernaryDequantizeRange(dt, sieve::kernels::TernaryWork::kInt32, sums.data(),
                                           0, nnz, Arg<size_t>(p, 3), Arg<const float*>(p, 4),
                                           Arg<int>(p, 5), values.data());
    const auto* idx = Arg<const uint32_t*>(p, 6);
    auto* out = Arg<char*>(p, 7);
    for (size_t k = 0; k < nnz; ++k) std::memcpy(out + idx[k] * es, values.data() + k * es, es);
  } else if (name.rfind("sieve_ternary_absmax_", 0) == 0) {
    sieve::kernels::TernarySource src = sieve::kernels::TernarySourceOf(
        dt, Arg<const void*>(p, 0), nullptr, Arg<size_t>(p, 2), nullptr);
    src.residual = const_cast<float*>(Arg<const float*>(p, 4));
    sieve::kernels::TernaryAbsMax(src, Arg<size_t>(p, 1), Arg<float*>(p, 3));
  } else if (name.rfind("sieve_ternary_quantize_", 0) == 0) {
    const int levels = Arg<int>(p, 6);
    sieve::kernels::TernarySource src = sieve::kernels::TernarySourceOf(
        dt, Arg<const void*>(p, 0), nullptr, Arg<size_t>(p, 2), Arg<const float*>(p, 3),
        Arg<sieve::kernels::PhiloxStream>(p, 4));
    src.levels = levels;
    sieve::kernels::TernaryQuantizePack(src, 0, Arg<size_t>(p, 1),
                                        sieve::kernels::TernaryBits(levels), Arg<void*>(p, 5));
  } else if (name.rfind("sieve_ternary_dequantize_", 0) == 0) {
    const size_t count = Arg<size_t>(p, 1);
    std::vector<int32_t> sums(count);
    sieve::kernels::TernaryUnpackReference(Arg<const void*>(p, 0), count, Arg<int>(p, 2),
                                           sums.data());
    sieve::kernels::TernaryDequantizeRange(dt, sieve::kernels::TernaryWork::kInt32, sums.data(),
                                           0, count, Arg<size_t>(p, 3), Arg<const float*>(p, 4),
                                           Arg<int>(p, 5), Arg<void*>(p, 6));
  } else {
    return cu::kErrorInvalidValue;
  }
  return cu::kSuccess;
}

// The block-scaled entries (sieve_block_quant_{encode,decode}_{f32,f16,bf16}) on the
// host with the CPU kernels.
cu::Result LaunchBlockQuant(const std::string& name, void** p) {
  using sieve::kernels::DType;
  const std::string type = name.substr(name.rfind('_') + 1);
  if (type != "f32" && type != "f16" && type != "bf16") return cu::kErrorInvalidValue;
  const DType dt =
      type == "f32" ? DType::kFloat32 : type == "f16" ? DType::kFloat16 : DType::kBfloat16;
  if (name.rfind("sieve_block_quant_encode_", 0) == 0)
    sieve::kernels::BlockQuantEncode(dt, Arg<const void*>(p, 0), Arg<size_t>(p, 1),
                                     Arg<int>(p, 2), Arg<void*>(p, 3));
  else
    sieve::kernels::BlockQuantDecode(dt, Arg<const void*>(p, 0), Arg<size_t>(p, 1),
                                     Arg<int>(p, 2), Arg<void*>(p, 3));
  return cu::kSuccess;
}

// The dense reduction entries (sieve_{reduce,divide}_<type>, one per DType) on
// the host with the reference kernels.
cu::Result LaunchReduce(const std::string& name, void** p) {
  static const char* kTypes[] = {"i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64",
                                 "bf16"};
  const std::string type = name.substr(name.rfind('_') + 1);
  int t = 0;
  while (t < sieve::kernels::kNumDTypes && type != kTypes[t]) ++t;
  if (t == sieve::kernels::kNumDTypes) return cu::kErrorInvalidValue;
  const auto dtype = static_cast<sieve::kernels::DType>(t);
  if (name.rfind("sieve_reduce_", 0) == 0) {
    sieve::kernels::ReduceReference(dtype, static_cast<sieve::kernels::RedOp>(Arg<int>(p, 0)),
                                    Arg<const void*>(p, 1), Arg<const void*>(p, 2),
                                    Arg<void*>(p, 3), Arg<size_t>(p, 4));
  } else {
    sieve::kernels::DivideByReference(dtype, Arg<void*>(p, 0), Arg<size_t>(p, 1),
                                      Arg<int>(p, 2));
  }
  return cu::kSuccess;
}

// Runs the entry on the host: the grid-stride kernels cover every element, so
// one host pass per launch is the same result.
cu::Result LaunchKernel(cu::Function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, cu::Stream s, void** p,
                        void** extra) {
  const std::string& name = g_names.at(reinterpret_cast<size_t>(f) - 1);
  g_launched.push_back(name);
  g_blocks.push_back(gx);
  if (gy != 1 || gz != 1 || bx != 256 || by != 1 || bz != 1 || shared != 0 || extra != nullptr ||
      s != g_stream)
    return cu::kErrorInvalidValue;
  if (name.rfind("sieve_ternary_", 0) == 0) return LaunchTernary(name, p);
  if (name.rfind("sieve_block_quant_", 0) == 0) return LaunchBlockQuant(name, p);
  if (name.rfind("sieve_reduce_", 0) == 0 || name.rfind("sieve_divide_", 0) == 0)
    return LaunchReduce(name, p);
  size_t es = name.back() - '0';
  if (name.rfind("sieve_masked_pack_", 0) == 0) {
    sieve::kernels::MaskedPackReference(es, Arg<const void*>(p, 0), Arg<const uint32_t*>(p, 1),
                                        Arg<size_t>(p, 2), Arg<void*>(p, 3));
  } else if (name.rfind("sieve_masked_scatter_", 0) == 0) {
    auto packed = Arg<const char*>(p, 0);
    auto idx = Arg<const uint32_t*>(p, 1);
    auto out = Arg<char*>(p, 3);
    for (size_t k = 0; k < Arg<size_t>(p, 2); ++k)
      std::memcpy(out + idx[k] * es, packed + k * es, es);
  } else if (name.rfind("sieve_nonzero_bitmap_", 0) == 0) {
    sieve::kernels::NonzeroBitmap(es, Arg<const void*>(p, 0), Arg<size_t>(p, 1),
                                  Arg<uint64_t*>(p, 2));
  } else if (name.rfind("sieve_any_nonzero_outside_", 0) == 0) {
    // As the device kernel: sets the word when something is found, never clears it.
    if (sieve::kernels::AnyNonzeroOutside(es, Arg<const void*>(p, 0), Arg<const uint64_t*>(p, 1),
                                          Arg<size_t>(p, 2)))
      *Arg<uint32_t*>(p, 3) = 1;
  } else if (name.rfind("sieve_masked_zero_cleared_", 0) == 0) {
    auto bits = Arg<const uint64_t*>(p, 0);
    auto out = Arg<char*>(p, 3);
    for (size_t j = Arg<size_t>(p, 1); j < Arg<size_t>(p, 2); ++j)
      if (((bits[j / 64] >> (j % 64)) & 1) == 0) std::memset(out + j * es, 0, es);
  } else {
    return cu::kErrorInvalidValue;
  }
  return cu::kSuccess;
}

CudaDriver KernelDriver() {
  CudaDriver d;
  d.CtxGetCurrent = CtxGetCurrent;
  d.ModuleLoadData = ModuleLoadData;
  d.ModuleGetFunction = ModuleGetFunction;
  d.LaunchKernel = LaunchKernel;
  d.CtxPushCurrent = CtxPush;
  d.CtxPopCurrent = CtxPop;
  d.MemAllocAsync = MemAllocAsync;
  d.MemFreeAsync = MemFreeAsync;
  d.MemcpyHtoDAsync = MemcpyHtoDAsync;
  d.CtxGetDevice = CtxGetDevice;
  d.DeviceGetAttribute = DeviceGetAttribute;
  d.EventCreate = EventCreate;
  d.EventRecord = EventRecord;
  d.StreamWaitEvent = StreamWaitEvent;
  d.EventDestroy = EventDestroy;
  d.driver_version = 13000;
  return d;
}

// What every launch test starts from: the fake driver table, CudaDeviceOps
// over it, the fake context current on this thread and a stream to launch on.
struct LaunchRig {
  explicit LaunchRig(uintptr_t stream) : d(KernelDriver()), ops(&d) {
    t_ctx_stack = {kCtx};
    g_stream = reinterpret_cast<cu::Stream>(stream);
  }
  LaunchRig(const LaunchRig&) = delete;
  LaunchRig& operator=(const LaunchRig&) = delete;
  CudaDriver d;
  CudaDeviceOps ops;
};

// The ternary kernels' types and their entry-name suffixes.
struct TernaryType {
  sieve::kernels::DType dtype;
  const char* suffix;
};
const TernaryType kTernaryTypes[] = {{sieve::kernels::DType::kFloat32, "f32"},
                                     {sieve::kernels::DType::kFloat16, "f16"},
                                     {sieve::kernels::DType::kBfloat16, "bf16"}};

TEST(KernelLaunch, WithoutAnImageOrEntryPointsThereAreNoKernels) {
  CudaDriver d = KernelDriver();
  std::string why;
  if (sieve::gpu::kKernelImageBytes == 0) {
    EXPECT_FALSE(CudaDeviceOps(&d).HasKernels(&why));
    EXPECT_NE(why.find("without nvcc"), std::string::npos) << why;
    GTEST_SKIP() << "libsieve built without nvcc: no embedded kernels";
  }
  EXPECT_TRUE(CudaDeviceOps(&d).HasKernels(&why)) << why;
  d.kernels_missing = "cuMemAllocAsync";
  EXPECT_FALSE(CudaDeviceOps(&d).HasKernels(&why));
  EXPECT_NE(why.find("cuMemAllocAsync"), std::string::npos) << why;
}

TEST(KernelLaunch, PackAndUnpackArgumentsMatchTheEntries) {
  if (sieve::gpu::kKernelImageBytes == 0) GTEST_SKIP() << "libsieve built without nvcc";
  LaunchRig rig(0x77);
  CudaDeviceOps& ops = rig.ops;
  std::mt19937_64 rng(5);
  for (size_t es : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
    const size_t count = 70001 + es;  // odd, several blocks
    std::vector<uint64_t> bits((count + 63) / 64, 0);
    std::vector<uint32_t> idx;
    for (size_t j = 0; j < count; ++j)
      if (rng() % 3 == 0) idx.push_back(static_cast<uint32_t>(j)), bits[j / 64] |= 1ull << (j % 64);
    std::vector<char> in(count * es), packed(idx.size() * es), want_packed(idx.size() * es);
    for (auto& b : in) b = static_cast<char>(rng() | 1);  // never zero
    std::vector<char> out(count * es, 0x5a), want(count * es);
    g_launched.clear();
    g_blocks.clear();
    ASSERT_TRUE(ops.MaskedPack(es, in.data(), idx.data(), idx.size(), packed.data(), g_stream).ok());
    sieve::kernels::MaskedPackReference(es, in.data(), idx.data(), idx.size(), want_packed.data());
    EXPECT_EQ(packed, want_packed) << es << "-byte pack";
    ASSERT_TRUE(ops.MaskedUnpack(es, packed.data(), idx.data(), idx.size(), bits.data(), count,
                                 out.data(), g_stream).ok());
    sieve::kernels::MaskedUnpackReference(es, packed.data(), bits.data(), count, want.data());
    EXPECT_EQ(out, want) << es << "-byte unpack";
    const std::string n = std::to_string(es);
    ASSERT_EQ(g_launched.size(), 3u);
    EXPECT_EQ(g_launched[0], "sieve_masked_pack_" + n);
    EXPECT_EQ(g_launched[1], "sieve_masked_zero_cleared_" + n);
    EXPECT_EQ(g_launched[2], "sieve_masked_scatter_" + n);
    EXPECT_EQ(g_blocks[0], (idx.size() + 255) / 256);
    EXPECT_EQ(g_blocks[1], (count + 255) / 256);
  }
  EXPECT_EQ(g_loaded_image, static_cast<const void*>(sieve::gpu::kKernelImage));
  // 38 masked, zero-pattern and ternary entries, 6 block-scaled + 20 reduce/divide, looked
  // up once per context.
  EXPECT_EQ(g_names.size(), 64u) << "the module is loaded once per context";
  EXPECT_EQ(ops.MaskedPack(3, nullptr, nullptr, 1, nullptr, g_stream).code(),
            sieve::Code::kInternalError);
}

// Zero patterns: one warp per bitmap word (8 words a 256-thread block), the
// arguments in the entries' order, results equal to the CPU kernels' on data
// mixing zeros, -0.0 and other non-zero patterns; the "any outside" word is
// zeroed before the launch (the kernel only sets it).
TEST(KernelLaunch, NonzeroArgumentsMatchTheEntries) {
  if (sieve::gpu::kKernelImageBytes == 0) GTEST_SKIP() << "libsieve built without nvcc";
  LaunchRig rig(0x7c);
  CudaDeviceOps& ops = rig.ops;
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  for (size_t es : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
    const size_t count = 5000 + 2 * (rng() % 3000) + 1, words = (count + 63) / 64;
    std::vector<char> data(count * es, 0);
    for (size_t j = 0; j < count; ++j) {
      const unsigned kind = rng() % 3;  // zero, -0.0 (the sign bit alone), a random byte
      if (kind == 1) data[j * es + es - 1] = static_cast<char>(0x80);
      if (kind == 2) data[j * es + rng() % es] = static_cast<char>(rng() | 1);
    }
    std::vector<uint64_t> bits(words, 0xa5a5a5a5a5a5a5a5ull), want(words);
    g_launched.clear();
    g_blocks.clear();
    ASSERT_TRUE(ops.NonzeroBitmap(es, data.data(), count, bits.data(), g_stream).ok());
    sieve::kernels::NonzeroBitmap(es, data.data(), count, want.data());
    EXPECT_EQ(bits, want) << es << "-byte, seed " << seed;
    // The pattern as mask: nothing outside; one kept bit dropped: something.
    std::vector<uint64_t> fewer = want;
    for (size_t w = 0; w < words; ++w)
      if (fewer[w] != 0) {
        fewer[w] &= fewer[w] - 1;
        break;
      }
    for (const auto* mask : {&want, &fewer}) {
      uint32_t any = 7;  // junk: the call zeroes it first
      ASSERT_TRUE(
          ops.AnyNonzeroOutside(es, data.data(), mask->data(), count, &any, g_stream).ok());
      EXPECT_EQ(any, mask == &fewer ? 1u : 0u) << es << "-byte, seed " << seed;
    }
    const std::string n = std::to_string(es);
    ASSERT_EQ(g_launched.size(), 3u);
    EXPECT_EQ(g_launched[0], "sieve_nonzero_bitmap_" + n);
    EXPECT_EQ(g_launched[1], "sieve_any_nonzero_outside_" + n);
    EXPECT_EQ(g_launched[2], "sieve_any_nonzero_outside_" + n);
    for (unsigned b : g_blocks) EXPECT_EQ(b, (words + 7) / 8);
  }
  // Nothing to test: the word still says "none", nothing launched.
  g_launched.clear();
  uint32_t any = 7;
  EXPECT_TRUE(ops.AnyNonzeroOutside(4, nullptr, nullptr, 0, &any, g_stream).ok());
  EXPECT_EQ(any, 0u);
  EXPECT_TRUE(ops.NonzeroBitmap(4, nullptr, 0, nullptr, g_stream).ok());
  EXPECT_TRUE(g_launched.empty());
  EXPECT_EQ(ops.NonzeroBitmap(3, nullptr, 1, nullptr, g_stream).code(),
            sieve::Code::kInternalError);
}

// Dense ternary: block abs-max (one CUDA block per scale block) and quantize
// (one thread per group of 8) per floating type, arguments in the entries'
// order, results equal to the CPU kernels'.
TEST(KernelLaunch, TernaryArgumentsMatchTheEntries) {
  if (sieve::gpu::kKernelImageBytes == 0) GTEST_SKIP() << "libsieve built without nvcc";
  using sieve::kernels::DType;
  LaunchRig rig(0x78);
  CudaDeviceOps& ops = rig.ops;
  std::mt19937_64 rng(std::random_device{}());
  for (const TernaryType& t : kTernaryTypes) {
    const size_t count = 20000 + (rng() % 5000) * 2 + 1, block = rng() % 900 + 1;
    const size_t nblocks = (count + block - 1) / block, es = sieve::kernels::DTypeSize(t.dtype);
    std::vector<char> in(count * es);
    for (auto& b : in) b = static_cast<char>(rng() & 0x3b);  // finite in every type
    std::vector<float> scales(nblocks, -1.0f), want_scales(nblocks);
    const size_t wire_bytes = sieve::kernels::TernaryPackedBytes(count, 2);
    std::vector<uint8_t> wire(wire_bytes, 0xee), want_wire(wire_bytes, 0xee);
    const sieve::kernels::PhiloxStream ph{rng(), static_cast<uint32_t>(rng() % 8), rng()};
    g_launched.clear();
    g_blocks.clear();
    ASSERT_TRUE(
        ops.TernaryAbsMax(t.dtype, in.data(), nullptr, count, block, scales.data(), g_stream).ok());
    sieve::kernels::TernaryAbsMax(t.dtype, in.data(), count, block, want_scales.data());
    EXPECT_EQ(scales, want_scales) << t.suffix;
    ASSERT_TRUE(ops.TernaryQuantize(t.dtype, in.data(), count, block, scales.data(), ph, 1,
                                    wire.data(), g_stream).ok());
    sieve::kernels::TernaryQuantizePack(t.dtype, in.data(), 0, count, block, want_scales.data(),
                                        ph, 2, want_wire.data());
    EXPECT_EQ(wire, want_wire) << t.suffix;
    // Final sums of n = 2..9 ranks in w = TernaryBits(n) bits, dequantized (avg or sum).
    const int n = static_cast<int>(rng() % 8) + 2, w = sieve::kernels::TernaryBits(n);
    const int divisor = rng() % 2 ? n : 1;
    std::vector<int32_t> sums(count);
    for (auto& q : sums) q = static_cast<int32_t>(rng() % (2 * n + 1)) - n;
    std::vector<uint8_t> sums_wire(sieve::kernels::TernaryPackedBytes(count, w));
    sieve::kernels::TernaryPackReference(sums.data(), count, w, sums_wire.data());
    std::vector<char> out(count * es, 0x11), want_out(count * es, 0x22);
    ASSERT_TRUE(ops.TernaryDequantize(t.dtype, sums_wire.data(), w, count, block, scales.data(),
                                      divisor, out.data(), g_stream).ok());
    sieve::kernels::TernaryDequantizeRange(t.dtype, sieve::kernels::TernaryWork::kInt32,
                                           sums.data(), 0, count, block, scales.data(), divisor,
                                           want_out.data());
    EXPECT_EQ(out, want_out) << t.suffix << " dequantize, w " << w;
    ASSERT_EQ(g_launched.size(), 3u);
    EXPECT_EQ(g_launched[0], std::string("sieve_ternary_absmax_") + t.suffix);
    EXPECT_EQ(g_launched[1], std::string("sieve_ternary_quantize_") + t.suffix);
    EXPECT_EQ(g_launched[2], std::string("sieve_ternary_dequantize_") + t.suffix);
    EXPECT_EQ(g_blocks[0], nblocks);
    EXPECT_EQ(g_blocks[1], ((count + 7) / 8 + 255) / 256);
    EXPECT_EQ(g_blocks[2], ((count + 7) / 8 + 255) / 256);
  }
  // Not a ternary type: an error, nothing launched.
  g_launched.clear();
  float s = 0;
  EXPECT_EQ(ops.TernaryAbsMax(DType::kInt32, &s, nullptr, 1, 1, &s, g_stream).code(),
            sieve::Code::kInternalError);
  EXPECT_TRUE(g_launched.empty());
}

// Error feedback: the sum g + e_prev (a fresh residual counts as zeros and
// is not read), then quantize with the residual update in the same pass,
// over several steps with the residual carried; arguments in the entries'
// order, results and residuals equal to the CPU kernels' (the host path).
TEST(KernelLaunch, TernaryFeedbackArgumentsMatchTheEntries) {
  if (sieve::gpu::kKernelImageBytes == 0) GTEST_SKIP() << "libsieve built without nvcc";
  using sieve::kernels::DType;
  LaunchRig rig(0x79);
  CudaDeviceOps& ops = rig.ops;
  std::mt19937_64 rng(std::random_device{}());
  for (const TernaryType& t : kTernaryTypes) {
    const size_t count = 10000 + (rng() % 5000) * 2 + 1, block = rng() % 900 + 1;
    const size_t nblocks = (count + block - 1) / block, es = sieve::kernels::DTypeSize(t.dtype);
    // The residual starts as junk (fresh device memory); the reference's as zeros.
    std::vector<float> residual(count, 12345.0f), want_residual(count, 0.0f);
    for (int step = 0; step < 3; ++step) {
      std::vector<char> g(count * es);
      for (auto& b : g) b = static_cast<char>(rng() & 0x3b);  // finite in every type
      std::vector<char> sent(count * es, 0x11), want_sent(count * es, 0x22);
      g_launched.clear();
      g_blocks.clear();
      ASSERT_TRUE(ops.TernaryFeedbackApply(t.dtype, g.data(), residual.data(), step == 0,
                                           sent.data(), count, g_stream).ok());
      sieve::kernels::TernaryFeedbackApply(t.dtype, g.data(), want_residual.data(),
                                           want_sent.data(), count);
      EXPECT_EQ(sent, want_sent) << t.suffix << " step " << step;
      std::vector<float> scales(nblocks);
      sieve::kernels::TernaryAbsMax(t.dtype, sent.data(), count, block, scales.data());
      for (auto& s : scales) s *= 1.0f + static_cast<float>(rng() % 3);  // as if agreed
      const sieve::kernels::PhiloxStream ph{rng(), static_cast<uint32_t>(rng() % 8), rng()};
      const size_t wire_bytes = sieve::kernels::TernaryPackedBytes(count, 2);
      std::vector<uint8_t> wire(wire_bytes, 0xee), want_wire(wire_bytes, 0xee);
      ASSERT_TRUE(ops.TernaryQuantizeFeedback(t.dtype, sent.data(), count, block, scales.data(),
                                              ph, 1, wire.data(), residual.data(), g_stream).ok());
      sieve::kernels::TernaryQuantizePack(t.dtype, want_sent.data(), 0, count, block,
                                          scales.data(), ph, 2, want_wire.data());
      sieve::kernels::TernaryFeedbackUpdate(t.dtype, want_sent.data(), count, block,
                                            scales.data(), ph, want_residual.data());
      EXPECT_EQ(wire, want_wire) << t.suffix << " step " << step;
      EXPECT_EQ(0, std::memcmp(residual.data(), want_residual.data(), count * 4))
          << t.suffix << " residual, step " << step;
      ASSERT_EQ(g_launched.size(), 2u);
      EXPECT_EQ(g_launched[0], std::string("sieve_ternary_feedback_apply_") + t.suffix);
      EXPECT_EQ(g_launched[1], std::string("sieve_ternary_quantize_feedback_") + t.suffix);
      EXPECT_EQ(g_blocks[0], (count + 255) / 256);
      EXPECT_EQ(g_blocks[1], ((count + 7) / 8 + 255) / 256);
    }
    bool nonzero = false;  // the residual carries something (the test can fail)
    for (float e : want_residual) nonzero |= e != 0.0f;
    EXPECT_TRUE(nonzero) << t.suffix;
  }
  g_launched.clear();
  float s = 0;
  EXPECT_EQ(ops.TernaryFeedbackApply(DType::kInt32, &s, &s, true, &s, 1, g_stream).code(),
            sieve::Code::kInternalError);
  EXPECT_TRUE(g_launched.empty());
}

// Masked: the final sums of the kept elements dequantized and scattered, the
// cleared positions zeroed (two launches, disjoint writes), equal to the host
// path's TernaryDequantizeScatter, for masks of several densities.
TEST(KernelLaunch, TernaryDequantizeScatterMatchesTheHostKernel) {
  if (sieve::gpu::kKernelImageBytes == 0) GTEST_SKIP() << "libsieve built without nvcc";
  using sieve::kernels::DType;
  LaunchRig rig(0x7a);
  CudaDeviceOps& ops = rig.ops;
  std::mt19937_64 rng(std::random_device{}());
  const struct {
    DType dtype;
    const char* suffix;
    int density_pct;
  } cases[] = {{DType::kFloat32, "f32", 3}, {DType::kFloat16, "f16", 50},
               {DType::kBfloat16, "bf16", 97}};
  for (const auto& c : cases) {
    const size_t count = 8000 + (rng() % 4000) * 2 + 1, block = rng() % 300 + 1;
    const size_t es = sieve::kernels::DTypeSize(c.dtype);
    std::vector<uint32_t> idx;
    std::vector<uint64_t> bits((count + 63) / 64, 0);
    for (size_t j = 0; j < count; ++j)
      if (static_cast<int>(rng() % 100) < c.density_pct)
        idx.push_back(static_cast<uint32_t>(j)), bits[j / 64] |= uint64_t{1} << (j % 64);
    const size_t nnz = idx.size();
    ASSERT_GT(nnz, 0u);
    std::vector<float> scales((nnz + block - 1) / block);
    for (auto& s : scales) s = std::uniform_real_distribution<float>(0.01f, 4.0f)(rng);
    const int n = static_cast<int>(rng() % 7) + 2, w = sieve::kernels::TernaryBits(n);
    const int divisor = rng() % 2 ? n : 1;
    std::vector<int32_t> sums(nnz);
    for (auto& q : sums) q = static_cast<int32_t>(rng() % (2 * n + 1)) - n;
    std::vector<uint8_t> wire(sieve::kernels::TernaryPackedBytes(nnz, w));
    sieve::kernels::TernaryPackReference(sums.data(), nnz, w, wire.data());
    std::vector<char> out(count * es, 0x5b), want(count * es, 0x6c);  // junk: all overwritten
    g_launched.clear();
    ASSERT_TRUE(ops.TernaryDequantizeScatter(c.dtype, wire.data(), w, nnz, block, scales.data(),
                                             divisor, idx.data(), bits.data(), count, out.data(),
                                             g_stream).ok());
    sieve::kernels::TernaryDequantizeScatter(c.dtype, sieve::kernels::TernaryWork::kInt32,
                                             sums.data(), 0, block, scales.data(), divisor,
                                             bits.data(), 0, count, want.data());
    EXPECT_EQ(out, want) << c.suffix << ", " << c.density_pct << "% kept";
    ASSERT_EQ(g_launched.size(), 2u);
    EXPECT_EQ(g_launched[0], "sieve_masked_zero_cleared_" + std::to_string(es));
    EXPECT_EQ(g_launched[1], std::string("sieve_ternary_dequantize_scatter_") + c.suffix);
  }
}

// The direct path's reductions: one entry per datatype with the op as its
// first argument, one for the average's division; arguments in the entries'
// order (a swapped operand shows under prod/max/min of random values), results
// equal to the CPU kernels'.
TEST(KernelLaunch, ReduceArgumentsMatchTheEntries) {
  if (sieve::gpu::kKernelImageBytes == 0) GTEST_SKIP() << "libsieve built without nvcc";
  using sieve::kernels::DType;
  using sieve::kernels::RedOp;
  LaunchRig rig(0x7b);
  CudaDeviceOps& ops = rig.ops;
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  static const char* kTypes[] = {"i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64",
                                 "bf16"};
  for (int t = 0; t < sieve::kernels::kNumDTypes; ++t) {
    const auto dtype = static_cast<DType>(t);
    const size_t es = sieve::kernels::DTypeSize(dtype);
    for (RedOp op : {RedOp::kSum, RedOp::kProd, RedOp::kMax, RedOp::kMin, RedOp::kAvg}) {
      const size_t n = 1000 + 2 * (rng() % 3000) + 1;  // odd, several blocks
      std::vector<char> a(n * es), b(n * es), out(n * es, 0x33), want(n * es, 0x44);
      for (auto& x : a) x = static_cast<char>(rng() & 0x3b);  // finite in every type
      for (auto& x : b) x = static_cast<char>(rng() & 0x3b);
      g_launched.clear();
      g_blocks.clear();
      ASSERT_TRUE(ops.Reduce(dtype, op, a.data(), b.data(), out.data(), n, g_stream).ok());
      sieve::kernels::Reduce(dtype, op, a.data(), b.data(), want.data(), n);
      EXPECT_EQ(out, want) << kTypes[t] << " op " << static_cast<int>(op) << " seed " << seed;
      const int divisor = static_cast<int>(rng() % 7) + 2;
      ASSERT_TRUE(ops.DivideBy(dtype, out.data(), n, divisor, g_stream).ok());
      sieve::kernels::DivideBy(dtype, want.data(), n, divisor);
      EXPECT_EQ(out, want) << kTypes[t] << " divide by " << divisor << " seed " << seed;
      ASSERT_EQ(g_launched.size(), 2u);
      EXPECT_EQ(g_launched[0], std::string("sieve_reduce_") + kTypes[t]);
      EXPECT_EQ(g_launched[1], std::string("sieve_divide_") + kTypes[t]);
      EXPECT_EQ(g_blocks[0], (n + 255) / 256);
    }
  }
  // Nothing to do: nothing launched.
  g_launched.clear();
  EXPECT_TRUE(
      ops.Reduce(DType::kFloat32, RedOp::kSum, nullptr, nullptr, nullptr, 0, g_stream).ok());
  EXPECT_TRUE(ops.DivideBy(DType::kFloat32, nullptr, 0, 3, g_stream).ok());
  EXPECT_TRUE(g_launched.empty());
}

// The quantized all-gather's block-scaled encode and decode: arguments in the entries'
// order (the bits and the count swapped would show), one CUDA block per scale block,
// results equal to the CPU kernels'.
TEST(KernelLaunch, BlockQuantArgumentsMatchTheEntries) {
  if (sieve::gpu::kKernelImageBytes == 0) GTEST_SKIP() << "libsieve built without nvcc";
  LaunchRig rig(0x7c);
  CudaDeviceOps& ops = rig.ops;
  std::mt19937_64 rng(std::random_device{}());
  for (const TernaryType& t : kTernaryTypes)
    for (int bits : {8, 4}) {
      const size_t count = 3000 + 2 * (rng() % 2000) + 1, es = sieve::kernels::DTypeSize(t.dtype);
      std::vector<char> in(count * es);
      for (auto& b : in) b = static_cast<char>(rng() & 0x3b);  // finite in every type
      const size_t bytes = sieve::kernels::BlockQuantBytes(count, bits);
      std::vector<char> enc(bytes, 0x5c), want_enc(bytes, 0x5d);
      std::vector<char> out(count * es, 0x11), want_out(count * es, 0x22);
      g_launched.clear();
      g_blocks.clear();
      ASSERT_TRUE(ops.BlockQuantEncode(t.dtype, in.data(), count, bits, enc.data(), g_stream).ok());
      sieve::kernels::BlockQuantEncode(t.dtype, in.data(), count, bits, want_enc.data());
      EXPECT_EQ(enc, want_enc) << t.suffix << " bits " << bits;
      ASSERT_TRUE(ops.BlockQuantDecode(t.dtype, enc.data(), count, bits, out.data(), g_stream).ok());
      sieve::kernels::BlockQuantDecode(t.dtype, want_enc.data(), count, bits, want_out.data());
      EXPECT_EQ(out, want_out) << t.suffix << " bits " << bits;
      ASSERT_EQ(g_launched.size(), 2u);
      EXPECT_EQ(g_launched[0], std::string("sieve_block_quant_encode_") + t.suffix);
      EXPECT_EQ(g_launched[1], std::string("sieve_block_quant_decode_") + t.suffix);
      EXPECT_EQ(g_blocks[0], (count + 255) / 256);
      EXPECT_EQ(g_blocks[1], (count + 255) / 256);
    }
}

// A mask's device copy may be freed by whichever thread drops it last, with no
// current context: the free runs in the allocation's context all the same.
TEST(KernelLaunch, DeviceMemoryIsFreedInItsAllocationContextFromAnyThread) {
  CudaDriver d = KernelDriver();
  CudaDeviceOps ops(&d);
  t_ctx_stack = {kCtx};
  void* p = nullptr;
  ASSERT_TRUE(ops.AllocDevice(100, g_stream, &p).ok());
  g_free_ctx.clear();
  sieve::Status st;
  std::thread([&] { st = ops.FreeDevice(p, g_stream); }).join();
  EXPECT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(g_free_ctx.size(), 1u);
  EXPECT_EQ(g_free_ctx[0], kCtx);
  EXPECT_EQ(t_ctx_stack.size(), 1u);
  // Freeing what was never allocated here (or twice) is refused, not passed on.
  EXPECT_EQ(ops.FreeDevice(p, g_stream).code(), sieve::Code::kInternalError);
  EXPECT_EQ(g_free_ctx.size(), 1u);
}

// The module is loaded and every entry looked up by PrepareKernels, on the
// caller's thread; a progress thread never loads (with lazy loading a lookup
// may synchronize the device under a stream parked on that thread): a launch
// there in a context never prepared is refused without a driver call.
TEST(KernelLaunch, KernelsLoadAtPrepareAndNeverOnAProgressThread) {
  if (sieve::gpu::kKernelImageBytes == 0) GTEST_SKIP() << "libsieve built without nvcc";
  LaunchRig rig(0x78);
  g_module_loads = 0;
  g_names.clear();
  sieve::Status refused;
  std::thread([&] {
    sieve::gpu::MarkFlagWriterThread();
    t_ctx_stack = {kCtx};
    float a = 1, b = 2;
    refused = rig.ops.Reduce(sieve::kernels::DType::kFloat32, sieve::kernels::RedOp::kSum, &a, &b,
                             &a, 1, g_stream);
  }).join();
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("PrepareKernels"), std::string::npos) << refused.message();
  EXPECT_EQ(g_module_loads, 0);
  ASSERT_TRUE(rig.ops.PrepareKernels().ok());
  EXPECT_EQ(g_module_loads, 1);
  const size_t looked_up = g_names.size();
  EXPECT_GE(looked_up, 4u * 5 + 3u * 6 + 2u * sieve::kernels::kNumDTypes);
  ASSERT_TRUE(rig.ops.PrepareKernels().ok());  // once per context
  EXPECT_EQ(g_module_loads, 1);
  EXPECT_EQ(g_names.size(), looked_up);
  // Plain device memory is never allocated or freed on a progress thread either.
  std::thread([&] {
    sieve::gpu::MarkFlagWriterThread();
    t_ctx_stack = {kCtx};
    void* p = nullptr;
    EXPECT_EQ(rig.ops.AllocDeviceBlock(64, &p).code(), sieve::Code::kInternalError);
    EXPECT_EQ(rig.ops.FreeDeviceBlock(reinterpret_cast<void*>(0x1000)).code(),
              sieve::Code::kInternalError);
  }).join();
}

// cuMemAllocAsync only where the device has memory pools; OrderAfter is an
// event recorded on the earlier stream and waited for on the later one.
TEST(KernelLaunch, StreamOrderedMemoryNeedsPoolsAndCrossesStreamsByEvent) {
  LaunchRig rig(0x79);
  void* p = nullptr;
  g_pools = 0;
  g_allocs_async = 0;
  std::string why;
  EXPECT_FALSE(rig.ops.HasMemoryPools(&why));
  EXPECT_NE(why.find("CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED"), std::string::npos) << why;
  sieve::Status st = rig.ops.AllocDevice(100, g_stream, &p);
  EXPECT_EQ(st.code(), sieve::Code::kCudaError);
  EXPECT_EQ(g_allocs_async, 0) << "cuMemAllocAsync called on a device without memory pools";
  g_pools = 1;
  {
    CudaDeviceOps fresh(&rig.d);  // the attribute is cached per device
    EXPECT_TRUE(fresh.HasMemoryPools(&why)) << why;
  }
  g_event_ops.clear();
  auto s1 = reinterpret_cast<cu::Stream>(0x51), s2 = reinterpret_cast<cu::Stream>(0x52);
  ASSERT_TRUE(rig.ops.OrderAfter(s2, s1).ok());
  ASSERT_EQ(g_event_ops.size(), 2u);
  EXPECT_EQ(g_event_ops[0].what, "record");
  EXPECT_EQ(g_event_ops[0].stream, s1);
  EXPECT_EQ(g_event_ops[1].what, "wait");
  EXPECT_EQ(g_event_ops[1].stream, s2);
  EXPECT_EQ(g_event_ops[1].event, g_event_ops[0].event);
  ASSERT_TRUE(rig.ops.OrderAfter(s2, s2).ok());
  EXPECT_EQ(g_event_ops.size(), 2u);  // one stream: nothing to order
}

}  // namespace
