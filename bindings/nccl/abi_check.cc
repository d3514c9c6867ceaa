// Compile-time proof that nccl_abi.h matches the installed nccl.h: every enum value, macro,
// struct layout and entry-point signature (nccl* and pnccl*). Built only where nccl.h exists;
// any difference fails the build. Ours lives in the global namespace, the real one in `real`.
#include <cstddef>
#include <cstring>
#include <type_traits>

#define SIEVE_NCCL_ABI_TYPES_ONLY
#include "nccl_abi.h"

// Our macro values, taken before the real header redefines the same names.
namespace ours {
constexpr int kMajor = NCCL_MAJOR, kMinor = NCCL_MINOR, kPatch = NCCL_PATCH;
constexpr int kVersionCode = NCCL_VERSION_CODE;
constexpr int kVersionOld = NCCL_VERSION(2, 8, 4), kVersionNew = NCCL_VERSION(2, 28, 9);
constexpr const char* kSuffix = NCCL_SUFFIX;
constexpr int kIdBytes = NCCL_UNIQUE_ID_BYTES;
constexpr int kUndefInt = NCCL_CONFIG_UNDEF_INT;
constexpr bool kNullsAreNull = NCCL_COMM_NULL == nullptr && NCCL_CONFIG_UNDEF_PTR == nullptr;
constexpr int kNoColor = NCCL_SPLIT_NOCOLOR;
constexpr float kUndefFloat = NCCL_UNDEF_FLOAT;
constexpr int kWin[] = {NCCL_WIN_DEFAULT, NCCL_WIN_COLL_SYMMETRIC, NCCL_WIN_REQUIRED_ALIGNMENT};
constexpr int kCta[] = {NCCL_CTA_POLICY_DEFAULT, NCCL_CTA_POLICY_EFFICIENCY, NCCL_CTA_POLICY_ZERO};
constexpr int kFlags[] = {NCCL_SHRINK_DEFAULT, NCCL_SHRINK_ABORT, NCCL_REVOKE_DEFAULT};
constexpr ncclConfig_t kConfigInit = NCCL_CONFIG_INITIALIZER;
constexpr ncclSimInfo_t kSimInit = NCCL_SIM_INFO_INITIALIZER;
}  // namespace ours

#undef NCCL_MAJOR
#undef NCCL_MINOR
#undef NCCL_PATCH
#undef NCCL_SUFFIX
#undef NCCL_VERSION_CODE
#undef NCCL_VERSION
#undef NCCL_COMM_NULL
#undef NCCL_UNIQUE_ID_BYTES
#undef NCCL_CONFIG_UNDEF_INT
#undef NCCL_CONFIG_UNDEF_PTR
#undef NCCL_SPLIT_NOCOLOR
#undef NCCL_UNDEF_FLOAT
#undef NCCL_WIN_DEFAULT
#undef NCCL_WIN_COLL_SYMMETRIC
#undef NCCL_WIN_REQUIRED_ALIGNMENT
#undef NCCL_CTA_POLICY_DEFAULT
#undef NCCL_CTA_POLICY_EFFICIENCY
#undef NCCL_CTA_POLICY_ZERO
#undef NCCL_SHRINK_DEFAULT
#undef NCCL_SHRINK_ABORT
#undef NCCL_REVOKE_DEFAULT
#undef NCCL_CONFIG_INITIALIZER
#undef NCCL_SIM_INFO_INITIALIZER

// What nccl.h includes, in the global namespace first, so its include guards keep it there.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <limits.h>

namespace real {
#include <nccl.h>
constexpr ncclConfig_t kConfigInit = NCCL_CONFIG_INITIALIZER;
constexpr ncclSimInfo_t kSimInit = NCCL_SIM_INFO_INITIALIZER;
}  // namespace real

namespace {

// ---- Macros ----------------------------------------------------------------------------------
static_assert(ours::kMajor == NCCL_MAJOR && ours::kMinor == NCCL_MINOR &&
              ours::kPatch == NCCL_PATCH && ours::kVersionCode == NCCL_VERSION_CODE);
static_assert(ours::kVersionOld == NCCL_VERSION(2, 8, 4) &&
              ours::kVersionNew == NCCL_VERSION(2, 28, 9));
constexpr bool SameText(const char* a, const char* b) {
  return *a == *b && (*a == '\0' || SameText(a + 1, b + 1));
}
static_assert(SameText(ours::kSuffix, NCCL_SUFFIX));
static_assert(ours::kIdBytes == NCCL_UNIQUE_ID_BYTES && ours::kUndefInt == NCCL_CONFIG_UNDEF_INT);
static_assert(ours::kNullsAreNull && NCCL_COMM_NULL == nullptr && NCCL_CONFIG_UNDEF_PTR == nullptr);
static_assert(ours::kNoColor == NCCL_SPLIT_NOCOLOR && ours::kUndefFloat == NCCL_UNDEF_FLOAT);
static_assert(ours::kWin[0] == NCCL_WIN_DEFAULT && ours::kWin[1] == NCCL_WIN_COLL_SYMMETRIC &&
              ours::kWin[2] == NCCL_WIN_REQUIRED_ALIGNMENT);
static_assert(ours::kCta[0] == NCCL_CTA_POLICY_DEFAULT &&
              ours::kCta[1] == NCCL_CTA_POLICY_EFFICIENCY && ours::kCta[2] == NCCL_CTA_POLICY_ZERO);
static_assert(ours::kFlags[0] == NCCL_SHRINK_DEFAULT && ours::kFlags[1] == NCCL_SHRINK_ABORT &&
              ours::kFlags[2] == NCCL_REVOKE_DEFAULT);

// ---- Enums: every enumerator, and the size and underlying type -------------------------------
#define SIEVE_SAME_ENUM(type)                                                                 \
  static_assert(                                                                              \
      sizeof(::type) == sizeof(real::type) &&                                                 \
          std::is_same_v<std::underlying_type_t<::type>, std::underlying_type_t<real::type>>, \
      #type " differs")
#define SIEVE_SAME_VALUE(name)                                                        \
  static_assert(static_cast<long long>(::name) == static_cast<long long>(real::name), \
                #name " differs")
SIEVE_SAME_ENUM(ncclResult_t);
SIEVE_SAME_ENUM(ncclRedOp_dummy_t);
SIEVE_SAME_ENUM(ncclRedOp_t);
SIEVE_SAME_ENUM(ncclDataType_t);
SIEVE_SAME_ENUM(ncclScalarResidence_t);
SIEVE_SAME_VALUE(ncclSuccess);
SIEVE_SAME_VALUE(ncclUnhandledCudaError);
SIEVE_SAME_VALUE(ncclSystemError);
SIEVE_SAME_VALUE(ncclInternalError);
SIEVE_SAME_VALUE(ncclInvalidArgument);
SIEVE_SAME_VALUE(ncclInvalidUsage);
SIEVE_SAME_VALUE(ncclRemoteError);
SIEVE_SAME_VALUE(ncclInProgress);
SIEVE_SAME_VALUE(ncclNumResults);
SIEVE_SAME_VALUE(ncclNumOps_dummy);
SIEVE_SAME_VALUE(ncclSum);
SIEVE_SAME_VALUE(ncclProd);
SIEVE_SAME_VALUE(ncclMax);
SIEVE_SAME_VALUE(ncclMin);
SIEVE_SAME_VALUE(ncclAvg);
SIEVE_SAME_VALUE(ncclNumOps);
SIEVE_SAME_VALUE(ncclMaxRedOp);
SIEVE_SAME_VALUE(ncclInt8);
SIEVE_SAME_VALUE(ncclChar);
SIEVE_SAME_VALUE(ncclUint8);
SIEVE_SAME_VALUE(ncclInt32);
SIEVE_SAME_VALUE(ncclInt);
SIEVE_SAME_VALUE(ncclUint32);
SIEVE_SAME_VALUE(ncclInt64);
SIEVE_SAME_VALUE(ncclUint64);
SIEVE_SAME_VALUE(ncclFloat16);
SIEVE_SAME_VALUE(ncclHalf);
SIEVE_SAME_VALUE(ncclFloat32);
SIEVE_SAME_VALUE(ncclFloat);
SIEVE_SAME_VALUE(ncclFloat64);
SIEVE_SAME_VALUE(ncclDouble);
SIEVE_SAME_VALUE(ncclBfloat16);
SIEVE_SAME_VALUE(ncclFloat8e4m3);
SIEVE_SAME_VALUE(ncclFloat8e5m2);
SIEVE_SAME_VALUE(ncclNumTypes);
SIEVE_SAME_VALUE(ncclScalarDevice);
SIEVE_SAME_VALUE(ncclScalarHostImmediate);

// ---- Types: the real header's types mapped onto ours, through pointers and const -------------
// (The opaque handles `struct ncclComm`, `struct ncclWindow_vidmem` and `struct CUstream_st` of
// nccl.h name our global declarations already: an elaborated type finds the visible one.)
template <typename T>
struct ToOurs {
  using type = T;
};
template <typename T>
using ToOursT = typename ToOurs<T>::type;
template <typename T>
struct ToOurs<T*> {
  using type = ToOursT<T>*;
};
template <typename T>
struct ToOurs<const T> {
  using type = const ToOursT<T>;
};
template <typename R, typename... A>
struct ToOurs<R (*)(A...)> {
  using type = ToOursT<R> (*)(ToOursT<A>...);
};
template <>
struct ToOurs<real::ncclUniqueId> {
  using type = ::ncclUniqueId;
};
template <>
struct ToOurs<real::ncclConfig_t> {
  using type = ::ncclConfig_t;
};
template <>
struct ToOurs<real::ncclSimInfo_t> {
  using type = ::ncclSimInfo_t;
};
template <>
struct ToOurs<real::ncclResult_t> {
  using type = ::ncclResult_t;
};
template <>
struct ToOurs<real::ncclRedOp_t> {
  using type = ::ncclRedOp_t;
};
template <>
struct ToOurs<real::ncclDataType_t> {
  using type = ::ncclDataType_t;
};
template <>
struct ToOurs<real::ncclScalarResidence_t> {
  using type = ::ncclScalarResidence_t;
};

static_assert(std::is_same_v<ToOursT<real::ncclComm_t>, ::ncclComm_t>);
static_assert(std::is_same_v<ToOursT<real::ncclWindow_t>, ::ncclWindow_t>);
static_assert(std::is_same_v<::cudaStream_t, struct CUstream_st*>);

// ---- Structs: size, alignment, and each field's offset and type ------------------------------
#define SIEVE_SAME_STRUCT(type)                                                                 \
  static_assert(sizeof(::type) == sizeof(real::type) && alignof(::type) == alignof(real::type), \
                #type " layout differs")
#define SIEVE_SAME_FIELD(type, field)                                                              \
  static_assert(offsetof(::type, field) == offsetof(real::type, field) &&                          \
                    std::is_same_v<decltype(::type::field), ToOursT<decltype(real::type::field)>>, \
                #type "." #field " differs")
SIEVE_SAME_STRUCT(ncclUniqueId);
SIEVE_SAME_FIELD(ncclUniqueId, internal);
SIEVE_SAME_STRUCT(ncclConfig_t);
SIEVE_SAME_FIELD(ncclConfig_t, size);
SIEVE_SAME_FIELD(ncclConfig_t, magic);
SIEVE_SAME_FIELD(ncclConfig_t, version);
SIEVE_SAME_FIELD(ncclConfig_t, blocking);
SIEVE_SAME_FIELD(ncclConfig_t, cgaClusterSize);
SIEVE_SAME_FIELD(ncclConfig_t, minCTAs);
SIEVE_SAME_FIELD(ncclConfig_t, maxCTAs);
SIEVE_SAME_FIELD(ncclConfig_t, netName);
SIEVE_SAME_FIELD(ncclConfig_t, splitShare);
SIEVE_SAME_FIELD(ncclConfig_t, trafficClass);
SIEVE_SAME_FIELD(ncclConfig_t, commName);
SIEVE_SAME_FIELD(ncclConfig_t, collnetEnable);
SIEVE_SAME_FIELD(ncclConfig_t, CTAPolicy);
SIEVE_SAME_FIELD(ncclConfig_t, shrinkShare);
SIEVE_SAME_FIELD(ncclConfig_t, nvlsCTAs);
SIEVE_SAME_FIELD(ncclConfig_t, nChannelsPerNetPeer);
SIEVE_SAME_FIELD(ncclConfig_t, nvlinkCentricSched);
SIEVE_SAME_STRUCT(ncclSimInfo_t);
SIEVE_SAME_FIELD(ncclSimInfo_t, size);
SIEVE_SAME_FIELD(ncclSimInfo_t, magic);
SIEVE_SAME_FIELD(ncclSimInfo_t, version);
SIEVE_SAME_FIELD(ncclSimInfo_t, estimatedTime);

// The initializers: same header values (size, magic, version) and the same undefined markers.
constexpr bool SameConfigInit(const ::ncclConfig_t& a, const real::ncclConfig_t& b) {
  return a.size == b.size && a.magic == b.magic && a.version == b.version &&
         a.blocking == b.blocking && a.cgaClusterSize == b.cgaClusterSize &&
         a.minCTAs == b.minCTAs && a.maxCTAs == b.maxCTAs && a.netName == b.netName &&
         a.splitShare == b.splitShare && a.trafficClass == b.trafficClass &&
         a.commName == b.commName && a.collnetEnable == b.collnetEnable &&
         a.CTAPolicy == b.CTAPolicy && a.shrinkShare == b.shrinkShare && a.nvlsCTAs == b.nvlsCTAs &&
         a.nChannelsPerNetPeer == b.nChannelsPerNetPeer &&
         a.nvlinkCentricSched == b.nvlinkCentricSched;
}
static_assert(SameConfigInit(ours::kConfigInit, real::kConfigInit), "NCCL_CONFIG_INITIALIZER");
static_assert(ours::kSimInit.size == real::kSimInit.size &&
                  ours::kSimInit.magic == real::kSimInit.magic &&
                  ours::kSimInit.version == real::kSimInit.version &&
                  ours::kSimInit.estimatedTime == real::kSimInit.estimatedTime,
              "NCCL_SIM_INFO_INITIALIZER");

// ---- Functions: every nccl* and pncclX* of our list exists in nccl.h with the same type -------
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // ncclResetDebugInit is deprecated
#define SIEVE_SAME_FUNCTION(ret, name, params)                                                    \
  static_assert(std::is_same_v<ToOursT<decltype(&real::name)>, ret(*) params>, #name " differs"); \
  static_assert(std::is_same_v<ToOursT<decltype(&real::p##name)>, ret(*) params>,                 \
                "p" #name " differs");
SIEVE_NCCL_ABI_FUNCTIONS(SIEVE_SAME_FUNCTION)

}  // namespace

// Something to link, so the check is an ordinary object library target.
int SieveNcclAbiCheckPassed() { return 1; }
