// Config: an immutable snapshot of every SIEVE_* parameter, read once per
// communicator from the environment (the registry is params.def).
#ifndef SIEVE_CORE_PARAMS_H_
#define SIEVE_CORE_PARAMS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/status.h"

namespace sieve {

// The enum-valued parameters (params.def's kEnum rows; SIEVE_DEBUG is core/log.h's
// LogLevel). The i-th value listed in the row is the i-th enumerator; kLast is the
// last one, so params.cc checks the counts at compile time. Every other file
// compares these enums, never the text.
enum class AlgoParam : uint8_t { kAuto, kFlat, kHier, kRing, kTree, kDirect, kOneShot,
                                  kOneShotValues, kLast = kOneShotValues };
enum class BindParam : uint8_t { kAuto, kNone, kLast = kNone };
enum class PeerErrorsParam : uint8_t { kAuto, kPeer, kNone, kLast = kNone };
enum class TransportParam : uint8_t { kUcx, kLoopback, kLast = kLoopback };
enum class NcclMode : uint8_t { kDense, kAutoMask, kTernary, kAutoMaskTernary, kAuto, kQ3,
                                kQ7, kRsTernary, kRsTernaryAg8, kQ7Ag8, kLast = kQ7Ag8 };
enum class GpuDirectParam : uint8_t { kAuto, kOff, kForce, kLast = kForce };
enum class CpuIsaParam : uint8_t { kAuto, kAvx512, kAvx2, kPortable, kLast = kPortable };

// The value as params.def spells it ("RING", "auto-mask+ternary"): for messages.
template <typename E>
const char* ParamText(E value);

struct Config {
#define SIEVE_PARAM(field, type, kind, env, def, values, doc) type field{};
#include "core/params.def"
#undef SIEVE_PARAM
};

// Reads every SIEVE_* variable; a bad value fails naming the variable and what it accepts.
Status LoadConfig(Config* out);

// The registry's defaults (no environment).
Config DefaultConfig();

// "SIEVE_TIMEOUT = 5 (set)  -- seconds without progress ..." one line per
// parameter; "(default)" when the value equals the registry's default.
std::string DumpConfig(const Config& config);

// Where a process learns its rank, size and how to reach the others, from the
// launcher's environment. The first launcher whose variables are present wins,
// innermost first: sieve-run (SIEVE_RANK/SIEVE_NRANKS), torchrun (RANK,
// WORLD_SIZE, LOCAL_RANK), Open MPI (OMPI_COMM_WORLD_*), Slurm (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID). The rendezvous is SIEVE_UNIQUE_ID, else
// SIEVE_COMM_ID=host:port, else MASTER_ADDR + MASTER_PORT. Missing or
// contradictory variables fail naming them.
struct LaunchEnv {
  int rank = -1;
  int nranks = -1;
  int local_rank = -1;        // rank among this host's ranks, -1 if the launcher does not say
  std::string unique_id_hex;  // sieve-run: SIEVE_UNIQUE_ID
  std::string master_addr;    // MASTER_ADDR or SIEVE_COMM_ID's host
  int master_port = -1;       // MASTER_PORT or SIEVE_COMM_ID's port
  std::string source;         // which launcher's variables were found, for messages
};
Status ReadLaunchEnv(LaunchEnv* out);
// The same from any lookup (name -> value or nullptr): for tests.
Status ParseLaunchEnv(const std::function<const char*(const char*)>& getenv, LaunchEnv* out);

// Variables of other components that change what Sieve decides (read here,
// like everything else from the environment).
struct ForeignEnv {
  bool ucx_net_devices_set = false;  // UCX_NET_DEVICES: the user chose UCX's NICs
  std::string ucx_tls;               // UCX_TLS as set ("" when unset)
  std::vector<std::string> ucx_set;  // every UCX_* variable set (names): Sieve never overrides them
  int local_rank = -1;               // from the launcher variables, if any
};
ForeignEnv ReadForeignEnv();

}  // namespace sieve

#endif  // SIEVE_CORE_PARAMS_H_
