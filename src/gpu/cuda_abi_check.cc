// Compile-time check of gpu/cuda_abi.h against the toolkit's cuda.h: built (and
// nothing more) wherever CMake finds the CUDA toolkit, so a wrong type or constant
// fails the build instead of a driver call at run time. Sieve itself never
// includes cuda.h: it loads the driver with dlopen (gpu/cuda_driver.h).
#include <cuda.h>

#include <type_traits>

#include "gpu/cuda_abi.h"

namespace sieve::gpu::cu {

static_assert(sizeof(Result) == sizeof(CUresult), "CUresult");
static_assert(std::is_same<DevicePtr, CUdeviceptr>::value, "CUdeviceptr");
static_assert(std::is_same<Stream, CUstream>::value, "CUstream");
static_assert(std::is_same<Context, CUcontext>::value, "CUcontext");
static_assert(std::is_same<Module, CUmodule>::value, "CUmodule");
static_assert(std::is_same<Function, CUfunction>::value, "CUfunction");
static_assert(std::is_same<Event, CUevent>::value, "CUevent");
static_assert(std::is_same<Device, CUdevice>::value, "CUdevice");

static_assert(kSuccess == CUDA_SUCCESS, "CUDA_SUCCESS");
static_assert(kErrorInvalidValue == CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE");
static_assert(kPointerAttributeMemoryType == CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
              "CU_POINTER_ATTRIBUTE_MEMORY_TYPE");
static_assert(kPointerAttributeDeviceOrdinal == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
              "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL");
static_assert(kDeviceAttributeMemoryPoolsSupported == CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
              "CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED");
static_assert(kEventDisableTiming == CU_EVENT_DISABLE_TIMING, "CU_EVENT_DISABLE_TIMING");
static_assert(kMemoryTypeHost == CU_MEMORYTYPE_HOST, "CU_MEMORYTYPE_HOST");
static_assert(kMemoryTypeDevice == CU_MEMORYTYPE_DEVICE, "CU_MEMORYTYPE_DEVICE");
static_assert(kMemoryTypeArray == CU_MEMORYTYPE_ARRAY, "CU_MEMORYTYPE_ARRAY");
static_assert(kMemoryTypeUnified == CU_MEMORYTYPE_UNIFIED, "CU_MEMORYTYPE_UNIFIED");
static_assert(kMemHostAllocPortable == CU_MEMHOSTALLOC_PORTABLE, "CU_MEMHOSTALLOC_PORTABLE");
static_assert(kMemHostAllocDeviceMap == CU_MEMHOSTALLOC_DEVICEMAP, "CU_MEMHOSTALLOC_DEVICEMAP");
static_assert(kMemHostRegisterPortable == CU_MEMHOSTREGISTER_PORTABLE,
              "CU_MEMHOSTREGISTER_PORTABLE");
static_assert(kMemHostRegisterDeviceMap == CU_MEMHOSTREGISTER_DEVICEMAP,
              "CU_MEMHOSTREGISTER_DEVICEMAP");
static_assert(kStreamWaitValueGeq == CU_STREAM_WAIT_VALUE_GEQ, "CU_STREAM_WAIT_VALUE_GEQ");
static_assert(kStreamWriteValueDefault == CU_STREAM_WRITE_VALUE_DEFAULT,
              "CU_STREAM_WRITE_VALUE_DEFAULT");
static_assert(kStreamNonBlocking == CU_STREAM_NON_BLOCKING, "CU_STREAM_NON_BLOCKING");

}  // namespace sieve::gpu::cu
