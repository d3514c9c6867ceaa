// Collectives on device buffers checked against the host path, bit for bit:
// one body, run over the fake device here (label mp) and over CUDA on a GPU
// machine (label cuda), so the GPU run proves what CI already exercises.
#ifndef SIEVE_TESTS_GPU_DEVICE_CHECKS_H_
#define SIEVE_TESTS_GPU_DEVICE_CHECKS_H_

#include <cstddef>
#include <string>

#include "sieve.h"

namespace sieve_test {

// Device memory as the checks see it.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual void* Alloc(size_t bytes) = 0;  // freed with the object
  virtual void Upload(void* device, const void* host, size_t bytes) = 0;    // synchronous
  virtual void Download(void* host, const void* device, size_t bytes) = 0;  // synchronous
  virtual sieveStream_t stream() = 0;
  virtual void Synchronize() = 0;  // waits for everything queued on stream()
};

// Runs every check on `comm` (all ranks call it alike); returns "" or what failed.
// `chunk_bytes`: the pieces the device all-reduce runs in: the communicator's
// SIEVE_GPU_CHUNK_BYTES when staged, SIZE_MAX on the direct path (one piece).
std::string RunDeviceChecks(sieveComm_t comm, int rank, int nranks, size_t chunk_bytes,
                            DeviceMemory& mem);

// Masked + ternary and ternary with error feedback (device_ternary_checks.cc).
std::string TernaryMaskedFeedbackChecks(sieveComm_t comm, int rank, int nranks,
                                        DeviceMemory& mem);

// SDP and D2FT, dense and at L levels, on device buffers: the whole recvbuff as
// the host path leaves it (device_subnet_checks.cc).
std::string SubnetChecks(sieveComm_t comm, int rank, int nranks, DeviceMemory& mem);

}  // namespace sieve_test

#endif  // SIEVE_TESTS_GPU_DEVICE_CHECKS_H_
