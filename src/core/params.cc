// The single place that reads environment variables: the SIEVE_* registry and
// the launcher variables (RANK/WORLD_SIZE, OMPI_COMM_WORLD_*).
#include "core/params.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <strings.h>

namespace sieve {

namespace {

enum Kind { kEnum, kString, kBytes, kCount, kSeconds, kBool };

Status ParseInto(std::string* out, Kind kind, const char* env, const std::string& text,
                 const char* values) {
  if (kind == kString) {
    *out = text;
    return Status::OK();
  }
  // kEnum: case-insensitive match against the '|' list; stored upper-case.
  std::string list(values);
  size_t start = 0;
  while (start <= list.size()) {
    size_t bar = list.find('|', start);
    std::string choice = list.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    if (strcasecmp(choice.c_str(), text.c_str()) == 0) {
      *out = choice;
      return Status::OK();
    }
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return Status::InvalidArgument(
      StrFormat("%s=%s is not one of %s", env, text.c_str(), values));
}

Status ParseInto(size_t* out, Kind kind, const char* env, const std::string& text, const char*) {
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

template <typename T>
std::string ValueText(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

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
  os << env << " = " << ValueText(config.field)                                        \
     << (ValueText(config.field) == ValueText(defaults.field) ? " (default)" : " (set)") \
     << "  -- " << doc << "\n";
#include "core/params.def"
#undef SIEVE_PARAM
  return os.str();
}

Status ReadLaunchEnv(LaunchEnv* out) {
  LaunchEnv e;
  const char* rank = std::getenv("SIEVE_RANK");
  const char* size = std::getenv("SIEVE_NRANKS");
  const char* rank_env = "SIEVE_RANK";
  const char* size_env = "SIEVE_NRANKS";
  e.source = "sieve-run (SIEVE_RANK/SIEVE_NRANKS)";
  if (rank != nullptr && size == nullptr)
    return Status::InvalidUsage("SIEVE_RANK is set but SIEVE_NRANKS is not");
  if (rank == nullptr) {
    rank = std::getenv("RANK");
    size = std::getenv("WORLD_SIZE");
    rank_env = "RANK";
    size_env = "WORLD_SIZE";
    e.source = "torchrun-style (RANK/WORLD_SIZE)";
  }
  if (rank == nullptr) {
    rank = std::getenv("OMPI_COMM_WORLD_RANK");
    size = std::getenv("OMPI_COMM_WORLD_SIZE");
    rank_env = "OMPI_COMM_WORLD_RANK";
    size_env = "OMPI_COMM_WORLD_SIZE";
    e.source = "Open MPI (OMPI_COMM_WORLD_RANK/SIZE)";
  }
  if (rank == nullptr || size == nullptr) {
    return Status::InvalidUsage(
        "no launcher environment: set SIEVE_RANK/SIEVE_NRANKS/SIEVE_UNIQUE_ID (sieve-run), "
        "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, or run under mpirun with MASTER_ADDR/MASTER_PORT");
  }
  SIEVE_RETURN_IF_ERROR(ParseInt(rank_env, rank, &e.rank));
  SIEVE_RETURN_IF_ERROR(ParseInt(size_env, size, &e.nranks));
  if (e.nranks < 1 || e.rank >= e.nranks)
    return Status::InvalidArgument(
        StrFormat("%s=%d is not below %s=%d", rank_env, e.rank, size_env, e.nranks));
  if (const char* id = std::getenv("SIEVE_UNIQUE_ID")) e.unique_id_hex = id;
  if (const char* addr = std::getenv("MASTER_ADDR")) e.master_addr = addr;
  if (const char* port = std::getenv("MASTER_PORT")) {
    SIEVE_RETURN_IF_ERROR(ParseInt("MASTER_PORT", port, &e.master_port));
    if (e.master_port < 1 || e.master_port > 65535)
      return Status::InvalidArgument(StrFormat("MASTER_PORT=%s is not a port", port));
  }
  if (e.unique_id_hex.empty() && (e.master_addr.empty() || e.master_port < 0)) {
    return Status::InvalidUsage(StrFormat(
        "%s found, but neither SIEVE_UNIQUE_ID nor MASTER_ADDR and MASTER_PORT are set",
        e.source.c_str()));
  }
  *out = e;
  return Status::OK();
}

}  // namespace sieve
