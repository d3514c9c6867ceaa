// A collective on device buffers, described as chunks staged through pinned
// host memory: what to copy in, what the host runs on the staged bytes (the
// network part and host kernels), what to copy out.
#ifndef SIEVE_GPU_STAGED_OP_H_
#define SIEVE_GPU_STAGED_OP_H_

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "core/status.h"
#include "gpu/cuda_abi.h"

namespace sieve::gpu {

struct StagedCopy {
  size_t offset;  // in the chunk's staging area
  void* device;   // device address (source of an in-copy, target of an out-copy)
  size_t bytes;
};

struct StagedChunk {
  size_t bytes = 0;              // staging bytes the chunk needs
  std::vector<StagedCopy> in;    // device -> staging, before `run`
  std::vector<StagedCopy> out;   // staging -> device, after `run`
  // Runs on the progress thread with the chunk's staging area.
  std::function<Status(char* staging)> run;
};

struct StagedOp {
  const char* name = "";          // for messages ("allreduce")
  cu::Stream stream = nullptr;
  // Whole-buffer operations: the device buffer whose staging address must stay
  // the same from call to call (mask tracker, error feedback); else nullptr.
  const void* key = nullptr;
  size_t depth = 2;               // slots in flight
  std::vector<StagedChunk> chunks;
};

// An operation of one chunk, one slot: the host runs it once on everything staged.
inline StagedOp OneChunkOp(const char* name, cu::Stream stream, StagedChunk chunk) {
  StagedOp op;
  op.name = name;
  op.stream = stream;
  op.depth = 1;
  op.chunks.push_back(std::move(chunk));
  return op;
}

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_STAGED_OP_H_
