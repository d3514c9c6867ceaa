// Where a call's buffers live, as plan/ sees it: host or device, and the one
// narrow door through which gpu/ answers for a pointer. plan/ knows nothing of
// the driver: gpu/ installs its pointer query (gpu/gpu_runtime.cc) and takes it
// out again where the process has no CUDA driver, so a host call there asks
// nothing of gpu/.
#ifndef SIEVE_PLAN_MEMORY_KIND_H_
#define SIEVE_PLAN_MEMORY_KIND_H_

namespace sieve::plan {

enum class MemoryKind { kHost, kDevice };

const char* MemoryKindName(MemoryKind kind);

struct NamedBuffer {
  const char* name;  // "sendbuff"
  const void* ptr;   // nullptr: not used by this rank (skipped)
};

// Answers "is this pointer device memory?"; thread-safe. Host memory the
// driver does not know, pinned host memory and nullptr are kHost.
using PointerQuery = MemoryKind (*)(const void* ptr);

// Installs the query plan/ asks for each buffer of a call (replacing the one
// before); nullptr: every pointer is host memory and no question is asked.
void InstallPointerQuery(PointerQuery query);

// The installed query (nullptr when none), and how many pointers were put to
// any query since the process started (tests: a host call on a machine without
// a driver asks none).
PointerQuery InstalledPointerQuery();
unsigned long PointerQueriesAsked();

}  // namespace sieve::plan

#endif  // SIEVE_PLAN_MEMORY_KIND_H_
