// Config: an immutable snapshot of every SIEVE_* parameter, read once per
// communicator from the environment (the registry is params.def).
#ifndef SIEVE_CORE_PARAMS_H_
#define SIEVE_CORE_PARAMS_H_

#include <cstddef>
#include <string>

#include "core/status.h"

namespace sieve {

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
// launcher's environment (sieve-run, torchrun-style or Open MPI).
struct LaunchEnv {
  int rank = -1;
  int nranks = -1;
  std::string unique_id_hex;  // sieve-run: SIEVE_UNIQUE_ID
  std::string master_addr;    // torchrun / mpirun: MASTER_ADDR
  int master_port = -1;       // MASTER_PORT
  std::string source;         // which launcher's variables were found, for messages
};
Status ReadLaunchEnv(LaunchEnv* out);

}  // namespace sieve

#endif  // SIEVE_CORE_PARAMS_H_
