// The single place in libsieve that reads environment variables: the SIEVE_*
// registry, the launchers' variables (RANK/WORLD_SIZE, OMPI_COMM_WORLD_*, ...) and
// the UCX_* variables Sieve must respect.
#include "core/params.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <strings.h>
#include <type_traits>
#include <unistd.h>

namespace sieve {

namespace {

enum Kind { kEnum, kString, kBytes, kCount, kInteger, kSeconds, kBool };

// The '|'-separated values of an enum row, in order.
std::vector<std::string> SplitValues(const char* values) {
  std::vector<std::string> out;
  std::string list(values);
  size_t start = 0;
  while (true) {
    size_t bar = list.find('|', start);
    out.push_back(list.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
    if (bar == std::string::npos) return out;
    start = bar + 1;
  }
}

constexpr size_t CountValues(const char* values) {
  size_t n = 1;
  for (const char* c = values; *c != '\0'; ++c) n += *c == '|';
  return n;
}

Status ParseInto(std::string* out, Kind, const char*, const std::string& text, const char*) {
  *out = text;
  return Status::OK();
}

// kEnum: a case-insensitive match against the '|' list; the i-th value is enumerator i.
template <typename E, typename = std::enable_if_t<std::is_enum<E>::value>>
Status ParseInto(E* out, Kind, const char* env, const std::string& text, const char* values) {
  std::vector<std::string> choices = SplitValues(values);
  for (size_t i = 0; i < choices.size(); ++i) {
    if (strcasecmp(choices[i].c_str(), text.c_str()) == 0) {
      *out = static_cast<E>(i);
      return Status::OK();
    }
  }
  return Status::InvalidArgument(
      StrFormat("%s=%s is not one of %s", env, text.c_str(), values));
}

// kInteger: decimal digits only (a seed, not a size: "4k" is refused).
Status ParseInteger(uint64_t* out, const char* env, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0)
    return Status::InvalidArgument(StrFormat(
        "%s=%s is not a decimal integer between 0 and 18446744073709551615", env, text.c_str()));
  *out = static_cast<uint64_t>(v);
  return Status::OK();
}

// size_t and uint64_t are one type here: the kind tells a count, an integer and a size apart.
Status ParseInto(size_t* out, Kind kind, const char* env, const std::string& text, const char*) {
  static_assert(std::is_same<size_t, uint64_t>::value, "kInteger rows are uint64_t");
  if (kind == kInteger) return ParseInteger(out, env, text);
  if (kind == kCount) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] < '0' || text[0] > '9' || *end != '\0' || v < 1 || v > 1000000)
      return Status::InvalidArgument(
          StrFormat("%s=%s is not a count between 1 and 1000000", env, text.c_str()));
    *out = static_cast<size_t>(v);
    return Status::OK();
  }
  // strtoull would accept leading blanks and a minus sign: require a digit first.
  if (text.empty() || text[0] < '0' || text[0] > '9') {
    return Status::InvalidArgument(
        StrFormat("%s=%s is not a byte count (e.g. 65536, 64k, 1m)", env, text.c_str()));
  }
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || errno != 0 || text[0] == '-') {
    return Status::InvalidArgument(
        StrFormat("%s=%s is not a byte count (e.g. 65536, 64k, 1m)", env, text.c_str()));
  }
  unsigned long long mult = 1;
  std::string suffix(end);
  if (suffix == "k" || suffix == "K") mult = 1ull << 10;
  else if (suffix == "m" || suffix == "M") mult = 1ull << 20;
  else if (suffix == "g" || suffix == "G") mult = 1ull << 30;
  else if (!suffix.empty())
    return Status::InvalidArgument(
        StrFormat("%s=%s has an unknown suffix (use k, m or g)", env, text.c_str()));
  if (v > (~0ull) / mult)
    return Status::InvalidArgument(StrFormat("%s=%s overflows", env, text.c_str()));
  *out = static_cast<size_t>(v * mult);
  return Status::OK();
}

Status ParseInto(double* out, Kind, const char* env, const std::string& text, const char*) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v > 0) || v > 1e7) {
    return Status::InvalidArgument(StrFormat(
        "%s=%s is not a positive number of seconds (e.g. 30 or 0.5)", env, text.c_str()));
  }
  *out = v;
  return Status::OK();
}

Status ParseInto(bool* out, Kind, const char* env, const std::string& text, const char*) {
  if (text == "1" || strcasecmp(text.c_str(), "true") == 0) *out = true;
  else if (text == "0" || strcasecmp(text.c_str(), "false") == 0) *out = false;
  else return Status::InvalidArgument(StrFormat("%s=%s is not 0 or 1", env, text.c_str()));
  return Status::OK();
}

// The value as DumpConfig prints it; an enum as its row lists it.
template <typename T>
std::string ValueText(const T& v, const char* values) {
  if constexpr (std::is_enum<T>::value) {
    return SplitValues(values)[static_cast<size_t>(v)];
  } else {
    std::ostringstream os;
    os << v;
    return os.str();
  }
}

// Compile-time checks of the enum rows: as many enumerators as listed values.
template <typename T>
constexpr bool EnumMatches(Kind kind, const char* values) {
  if constexpr (std::is_enum<T>::value)
    return kind == kEnum && static_cast<size_t>(T::kLast) + 1 == CountValues(values);
  else
    return kind != kEnum;
}
#define SIEVE_PARAM(field, type, kind, env, def, values, doc) \
  static_assert(EnumMatches<type>(kind, values), env ": enum and listed values differ");
#include "core/params.def"
#undef SIEVE_PARAM

Status ParseInt(const char* env, const char* text, int* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v < 0 || v > (1 << 30))
    return Status::InvalidArgument(StrFormat("%s=%s is not a non-negative integer", env, text));
  *out = static_cast<int>(v);
  return Status::OK();
}

}  // namespace

Config DefaultConfig() {
  Config c;
#define SIEVE_PARAM(field, type, kind, env, def, values, doc) \
  (void)ParseInto(&c.field, kind, env, def, values);
#include "core/params.def"
#undef SIEVE_PARAM
  return c;
}

Status LoadConfig(Config* out) {
  Config c = DefaultConfig();
#define SIEVE_PARAM(field, type, kind, env, def, values, doc)            \
  if (const char* v = std::getenv(env); v != nullptr && *v != '\0') {   \
    SIEVE_RETURN_IF_ERROR(ParseInto(&c.field, kind, env, v, values));   \
  }
#include "core/params.def"
#undef SIEVE_PARAM
  *out = c;
  return Status::OK();
}

std::string DumpConfig(const Config& config) {
  std::ostringstream os;
  Config defaults = DefaultConfig();
#define SIEVE_PARAM(field, type, kind, env, def, values, doc)                          \
  os << env << " = "                                                                   \
     << (std::strstr(env, "SECRET") ? "<hidden>" : ValueText(config.field, values))    \
     << (ValueText(config.field, values) == ValueText(defaults.field, values) ? " (default)" \
                                                                                : " (set)") \
     << "  -- " << doc << "\n";
#include "core/params.def"
#undef SIEVE_PARAM
  return os.str();
}

// ParamText<E> for the type of every enum row (each enum serves one row).
#define SIEVE_PARAM_TEXT_kEnum(type, values)                                 \
  template <>                                                                \
  const char* ParamText<type>(type value) {                                  \
    static const std::vector<std::string>* names =                           \
        new std::vector<std::string>(SplitValues(values));  /* never freed */ \
    return (*names)[static_cast<size_t>(value)].c_str();                     \
  }
#define SIEVE_PARAM_TEXT_kString(type, values)
#define SIEVE_PARAM_TEXT_kBytes(type, values)
#define SIEVE_PARAM_TEXT_kCount(type, values)
#define SIEVE_PARAM_TEXT_kInteger(type, values)
#define SIEVE_PARAM_TEXT_kSeconds(type, values)
#define SIEVE_PARAM_TEXT_kBool(type, values)
#define SIEVE_PARAM(field, type, kind, env, def, values, doc) SIEVE_PARAM_TEXT_##kind(type, values)
#include "core/params.def"
#undef SIEVE_PARAM

namespace {

// One launcher's variables: rank and size (both required), local rank and
// local size (optional).
struct Launcher {
  const char* name;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

// Innermost first: torchrun under srun, mpirun inside an sbatch script.
constexpr Launcher kLaunchers[] = {
    {"sieve-run", "SIEVE_RANK", "SIEVE_NRANKS", nullptr, nullptr},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
};

using Getenv = std::function<const char*(const char*)>;

// "host:port" or "[v6addr]:port".
Status ParseCommId(const char* text, std::string* host, int* port) {
  std::string s(text);
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return Status::InvalidArgument(StrFormat("SIEVE_COMM_ID=%s is not host:port", text));
  *host = s.substr(0, colon);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']')
    *host = host->substr(1, host->size() - 2);
  SIEVE_RETURN_IF_ERROR(ParseInt("SIEVE_COMM_ID's port", s.c_str() + colon + 1, port));
  if (*port < 1 || *port > 65535)
    return Status::InvalidArgument(StrFormat("SIEVE_COMM_ID=%s: %d is not a port", text, *port));
  return Status::OK();
}

// The optional local rank of launcher `l`; contradictions name both variables.
Status ReadLocalRank(const Getenv& get, const Launcher& l, LaunchEnv* e) {
  const char* text = l.local_rank != nullptr ? get(l.local_rank) : nullptr;
  if (text == nullptr) return Status::OK();
  SIEVE_RETURN_IF_ERROR(ParseInt(l.local_rank, text, &e->local_rank));
  if (e->local_rank >= e->nranks)
    return Status::InvalidArgument(
        StrFormat("%s=%d is not below %s=%d: contradictory launcher "
                  "variables",
                  l.local_rank, e->local_rank, l.size, e->nranks));
  if (e->local_rank > e->rank)
    return Status::InvalidArgument(
        StrFormat("%s=%d exceeds %s=%d: contradictory launcher "
                  "variables",
                  l.local_rank, e->local_rank, l.rank, e->rank));
  // Slurm writes e.g. "4" or "2(x3)"; only a plain number is checked.
  const char* lsize = l.local_size != nullptr ? get(l.local_size) : nullptr;
  int local_size = 0;
  if (lsize != nullptr && ParseInt(l.local_size, lsize, &local_size).ok() &&
      e->local_rank >= local_size)
    return Status::InvalidArgument(
        StrFormat("%s=%d is not below %s=%d: contradictory launcher "
                  "variables",
                  l.local_rank, e->local_rank, l.local_size, local_size));
  return Status::OK();
}

Status ReadRendezvous(const Getenv& get, LaunchEnv* e) {
  if (const char* id = get("SIEVE_UNIQUE_ID")) e->unique_id_hex = id;
  const char* addr = get("MASTER_ADDR");
  const char* port = get("MASTER_PORT");
  if (addr != nullptr) e->master_addr = addr;
  if (port != nullptr) {
    SIEVE_RETURN_IF_ERROR(ParseInt("MASTER_PORT", port, &e->master_port));
    if (e->master_port < 1 || e->master_port > 65535)
      return Status::InvalidArgument(StrFormat("MASTER_PORT=%s is not a port", port));
  }
  // SIEVE_COMM_ID wins over MASTER_*: under torchrun MASTER_PORT is taken by its own store.
  if (const char* comm_id = get("SIEVE_COMM_ID"); comm_id != nullptr && *comm_id != '\0') {
    std::string host;
    int p = -1;
    SIEVE_RETURN_IF_ERROR(ParseCommId(comm_id, &host, &p));
    e->master_addr = host;
    e->master_port = p;
  }
  if (e->unique_id_hex.empty() && (e->master_addr.empty() || e->master_port < 0)) {
    std::string missing = e->master_addr.empty() && e->master_port < 0
                              ? "MASTER_ADDR and MASTER_PORT"
                              : (e->master_addr.empty() ? "MASTER_ADDR" : "MASTER_PORT");
    return Status::InvalidUsage(
        StrFormat("%s found, but no rendezvous: %s %s not set (or set SIEVE_COMM_ID=host:port, or "
                  "SIEVE_UNIQUE_ID)",
                  e->source.c_str(), missing.c_str(),
                  missing.find(" and ") != std::string::npos ? "are" : "is"));
  }
  return Status::OK();
}

}  // namespace

Status ParseLaunchEnv(const Getenv& get, LaunchEnv* out) {
  for (const Launcher& l : kLaunchers) {
    const char* rank = get(l.rank);
    const char* size = get(l.size);
    if (rank == nullptr && size == nullptr) continue;
    if (rank == nullptr || size == nullptr)
      return Status::InvalidUsage(StrFormat("%s is set but %s is not (%s launch)",
                                            rank != nullptr ? l.rank : l.size,
                                            rank != nullptr ? l.size : l.rank, l.name));
    LaunchEnv e;
    e.source = StrFormat("%s (%s/%s)", l.name, l.rank, l.size);
    SIEVE_RETURN_IF_ERROR(ParseInt(l.rank, rank, &e.rank));
    SIEVE_RETURN_IF_ERROR(ParseInt(l.size, size, &e.nranks));
    if (e.nranks < 1 || e.rank >= e.nranks)
      return Status::InvalidArgument(
          StrFormat("%s=%d is not below %s=%d", l.rank, e.rank, l.size, e.nranks));
    SIEVE_RETURN_IF_ERROR(ReadLocalRank(get, l, &e));
    SIEVE_RETURN_IF_ERROR(ReadRendezvous(get, &e));
    *out = e;
    return Status::OK();
  }
  return Status::InvalidUsage(
      "no launcher environment: set SIEVE_RANK/SIEVE_NRANKS/SIEVE_UNIQUE_ID (sieve-run), "
      "RANK/WORLD_SIZE (torchrun), or run under mpirun (OMPI_COMM_WORLD_*) or srun "
      "(SLURM_PROCID/SLURM_NTASKS), with MASTER_ADDR/MASTER_PORT or SIEVE_COMM_ID=host:port");
}

Status ReadLaunchEnv(LaunchEnv* out) {
  return ParseLaunchEnv([](const char* name) { return std::getenv(name); }, out);
}

ForeignEnv ReadForeignEnv() {
  ForeignEnv f;
  const char* devices = std::getenv("UCX_NET_DEVICES");
  f.ucx_net_devices_set = devices != nullptr && *devices != '\0';
  if (const char* tls = std::getenv("UCX_TLS")) f.ucx_tls = tls;
  for (char** var = environ; *var != nullptr; ++var) {
    const char* eq = std::strchr(*var, '=');
    if (std::strncmp(*var, "UCX_", 4) == 0 && eq != nullptr && eq[1] != '\0')
      f.ucx_set.emplace_back(*var, static_cast<size_t>(eq - *var));
  }
  LaunchEnv e;
  if (ReadLaunchEnv(&e).ok()) f.local_rank = e.local_rank;
  return f;
}

}  // namespace sieve
