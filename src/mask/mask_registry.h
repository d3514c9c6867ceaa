// A registered mask: the agreed bitmap, its kept-index list and the packed work
// buffer reused by every masked all-reduce; Register builds one collectively.
#ifndef SIEVE_MASK_MASK_REGISTRY_H_
#define SIEVE_MASK_MASK_REGISTRY_H_

#include <cstdint>
#include <vector>

#include "comm/comm.h"
#include "core/aligned_alloc.h"
#include "mask/mask_bits.h"

namespace sieve::mask {

enum class Policy { kStrict = 0, kUnion = 1 };

// Elements a mask may cover: kept positions are 32-bit indices.
constexpr size_t kMaxMaskCount = size_t{1} << 32;

struct MaskState {
  const Comm* comm = nullptr;    // the communicator it was registered on (placement of `work`)
  uint64_t comm_serial = 0;      // and its Comm::serial(), compared before any use
  size_t count = 0;              // elements of the buffers it applies to
  std::vector<uint64_t> bits;    // the agreed mask
  std::vector<uint32_t> idx;     // kept indices, increasing: nnz = idx.size()
  // MaskHash of the agreed bits: the mask's identity in the fingerprints of the
  // calls that use it, so ranks passing different masks of the same nnz fail
  // instead of summing misaligned elements.
  uint64_t digest = 0;
  // Packed work buffer, grown on demand (no zero-fill), page-aligned and bound
  // to the NUMA node of the rank's NIC (comm->placement()) where there are several.
  AlignedArray<char> work;
  size_t work_bytes = 0;

  char* Work(size_t bytes);

  // The mask of an already-packed vector (every one of the nnz elements kept,
  // idx[k] = k), built on first use: the device path packs on the GPU and runs
  // the same codec on the packed vector through it (mask/masked_allreduce.h).
  std::vector<uint32_t> packed_idx;
  std::vector<uint64_t> packed_bits;
  void BuildPackedView();

  // The mask's copy in device memory, owned by the GPU path (mask/device_masked.h)
  // and type-erased so mask/ does not depend on it.
  std::shared_ptr<void> device_copy;
};

// Collective over comm: normalizes this rank's mask, agrees on it with every
// rank (AgreeOnMask) and precomputes the kept indices.
Status Register(Comm& comm, const void* mask, Format format, size_t count, Policy policy,
                std::shared_ptr<MaskState>* out);

// Collective: every rank must pass the same count. Equal masks (by hash) pass;
// otherwise strict fails on every rank naming the ranks that differ from rank 0,
// and union replaces *bits by the OR of every rank's bits (a ring all-reduce).
Status AgreeOnMask(Comm& comm, Policy policy, size_t count, std::vector<uint64_t>* bits);

}  // namespace sieve::mask

#endif  // SIEVE_MASK_MASK_REGISTRY_H_
