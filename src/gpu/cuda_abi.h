// The few CUDA driver API types and constants the GPU path uses, declared here
// so Sieve builds without the CUDA toolkit; gpu/cuda_abi_check.cc static_asserts
// them against the real cuda.h wherever CMake finds the toolkit.
#ifndef SIEVE_GPU_CUDA_ABI_H_
#define SIEVE_GPU_CUDA_ABI_H_

#include <cstddef>
#include <cstdint>

struct CUstream_st;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUevent_st;

namespace sieve::gpu::cu {

using Result = int;                  // CUresult
using DevicePtr = unsigned long long;  // CUdeviceptr (64-bit)
using Stream = CUstream_st*;         // CUstream
using Context = CUctx_st*;           // CUcontext
using Module = CUmod_st*;            // CUmodule
using Function = CUfunc_st*;         // CUfunction
using Event = CUevent_st*;           // CUevent
using Device = int;                  // CUdevice

constexpr Result kSuccess = 0;             // CUDA_SUCCESS
constexpr Result kErrorInvalidValue = 1;   // CUDA_ERROR_INVALID_VALUE
constexpr int kPointerAttributeMemoryType = 2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kPointerAttributeDeviceOrdinal = 9;  // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
constexpr int kDeviceAttributeMemoryPoolsSupported = 115;  // CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
constexpr unsigned kEventDisableTiming = 0x2;  // CU_EVENT_DISABLE_TIMING
constexpr unsigned kMemoryTypeHost = 1;     // CU_MEMORYTYPE_HOST
constexpr unsigned kMemoryTypeDevice = 2;   // CU_MEMORYTYPE_DEVICE
constexpr unsigned kMemoryTypeArray = 3;    // CU_MEMORYTYPE_ARRAY
constexpr unsigned kMemoryTypeUnified = 4;  // CU_MEMORYTYPE_UNIFIED
constexpr unsigned kMemHostAllocPortable = 0x01;   // CU_MEMHOSTALLOC_PORTABLE
constexpr unsigned kMemHostAllocDeviceMap = 0x02;  // CU_MEMHOSTALLOC_DEVICEMAP
constexpr unsigned kMemHostRegisterPortable = 0x01;   // CU_MEMHOSTREGISTER_PORTABLE
constexpr unsigned kMemHostRegisterDeviceMap = 0x02;  // CU_MEMHOSTREGISTER_DEVICEMAP
constexpr unsigned kStreamWaitValueGeq = 0x0;      // CU_STREAM_WAIT_VALUE_GEQ (wrap-safe)
constexpr unsigned kStreamWriteValueDefault = 0x0; // CU_STREAM_WRITE_VALUE_DEFAULT (fenced)
constexpr unsigned kStreamNonBlocking = 0x1;       // CU_STREAM_NON_BLOCKING
// The v2 stream memory operations (cuStreamWaitValue32_v2 & co.) are always
// available from this driver version on; older drivers get the blocking path.
constexpr int kStreamMemOpsMinDriver = 12000;

}  // namespace sieve::gpu::cu

#endif  // SIEVE_GPU_CUDA_ABI_H_
