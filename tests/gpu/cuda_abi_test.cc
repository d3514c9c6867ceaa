// gpu/cuda_abi.h against the real cuda.h (built where the CUDA toolkit is):
// every constant and handle type libsieve declares itself, so it builds and
// loads without CUDA, has cuda.h's value and size.
#include <cuda.h>
#include <gtest/gtest.h>

#include <type_traits>

#include "gpu/cuda_abi.h"

namespace cu = sieve::gpu::cu;

static_assert(sizeof(CUresult) == sizeof(cu::Result));
static_assert(std::is_same_v<CUdeviceptr, cu::DevicePtr>);
static_assert(std::is_same_v<CUstream, cu::Stream>);
static_assert(std::is_same_v<CUcontext, cu::Context>);
static_assert(std::is_same_v<CUmodule, cu::Module>);
static_assert(std::is_same_v<CUfunction, cu::Function>);
static_assert(std::is_same_v<CUevent, cu::Event>);
static_assert(std::is_same_v<CUdevice, cu::Device>);
static_assert(CUDA_SUCCESS == cu::kSuccess);
static_assert(CUDA_ERROR_INVALID_VALUE == cu::kErrorInvalidValue);
static_assert(CU_POINTER_ATTRIBUTE_MEMORY_TYPE == cu::kPointerAttributeMemoryType);
static_assert(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL == cu::kPointerAttributeDeviceOrdinal);
static_assert(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED ==
              cu::kDeviceAttributeMemoryPoolsSupported);
static_assert(CU_MEMORYTYPE_HOST == cu::kMemoryTypeHost);
static_assert(CU_MEMORYTYPE_DEVICE == cu::kMemoryTypeDevice);
static_assert(CU_MEMORYTYPE_ARRAY == cu::kMemoryTypeArray);
static_assert(CU_MEMORYTYPE_UNIFIED == cu::kMemoryTypeUnified);
static_assert(CU_MEMHOSTALLOC_PORTABLE == cu::kMemHostAllocPortable);
static_assert(CU_MEMHOSTALLOC_DEVICEMAP == cu::kMemHostAllocDeviceMap);
static_assert(CU_MEMHOSTREGISTER_PORTABLE == cu::kMemHostRegisterPortable);
static_assert(CU_MEMHOSTREGISTER_DEVICEMAP == cu::kMemHostRegisterDeviceMap);
static_assert(CU_STREAM_WAIT_VALUE_GEQ == cu::kStreamWaitValueGeq);
static_assert(CU_STREAM_WRITE_VALUE_DEFAULT == cu::kStreamWriteValueDefault);
static_assert(CU_STREAM_NON_BLOCKING == cu::kStreamNonBlocking);
static_assert(CU_EVENT_DISABLE_TIMING == cu::kEventDisableTiming);

TEST(CudaAbi, MatchesCudaH) { SUCCEED() << "checked at compile time against CUDA " << CUDA_VERSION; }
