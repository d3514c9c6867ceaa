// Logger state is process-wide and read from the registry once, on first use.
#include "core/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <strings.h>

#include "core/params.h"

namespace sieve {

namespace {

struct LoggerState {
  LogLevel level = LogLevel::kWarn;
  unsigned mask = kLogAll;
  FILE* out = stderr;
  char host[64] = "?";
  std::mutex mu;
  LogSink sink;
};

unsigned ParseSubsys(const std::string& text) {
  static const struct { const char* name; unsigned bit; } kNames[] = {
      {"INIT", kLogInit}, {"BOOTSTRAP", kLogBootstrap}, {"NET", kLogNet}, {"COLL", kLogColl},
      {"ALGO", kLogAlgo}, {"ENV", kLogEnv},             {"CALL", kLogCall}, {"ALL", kLogAll}};
  bool exclude = !text.empty() && text[0] == '^';
  unsigned mask = 0;
  size_t start = exclude ? 1 : 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    for (const auto& n : kNames)
      if (strcasecmp(n.name, name.c_str()) == 0) mask |= n.bit;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return exclude ? ~mask : mask;
}

std::string ExpandFileName(const std::string& pattern, const char* host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'h') {
      out += host;
      ++i;
    } else if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
      out += std::to_string(getpid());
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

LoggerState& State() {
  static LoggerState* state = [] {
    auto* s = new LoggerState();  // never freed: logging must work during exit
    gethostname(s->host, sizeof(s->host) - 1);
    Config config;
    // A bad SIEVE_* value is reported by communicator init; logging keeps defaults then.
    if (!LoadConfig(&config).ok()) config = DefaultConfig();
    s->level = config.debug;
    s->mask = ParseSubsys(config.debug_subsys);
    if (!config.debug_file.empty()) {
      std::string path = ExpandFileName(config.debug_file, s->host);
      if (FILE* f = std::fopen(path.c_str(), "a")) s->out = f;
    }
    return s;
  }();
  return *state;
}

thread_local int tls_rank = -1;

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kTrace: return "TRACE";
    default: return "";
  }
}

}  // namespace

bool LogEnabled(LogLevel level, unsigned subsys) {
  LoggerState& s = State();
  return level <= s.level && (s.mask & subsys) != 0;
}

void LogRaw(const std::string& text) {
  LoggerState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.sink) {
    s.sink(LogLevel::kNone, text);
    return;
  }
  std::fputs(text.c_str(), s.out);
  std::fflush(s.out);
}

void SetLogRank(int rank) { tls_rank = rank; }

void SetLogSink(LogSink sink) {
  LoggerState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  s.sink = std::move(sink);
}

void LogWrite(LogLevel level, unsigned, const char* file, int line, const char* fmt, ...) {
  LoggerState& s = State();
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  char rank[24] = "";
  if (tls_rank >= 0) std::snprintf(rank, sizeof(rank), " [rank %d]", tls_rank);
  char text[1400];
  std::snprintf(text, sizeof(text), "%s:%d:%ld%s SIEVE %s %s:%d %s\n", s.host, getpid(),
                static_cast<long>(syscall(SYS_gettid)), rank, LevelName(level), base, line, msg);
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.sink) {
    s.sink(level, text);
    return;
  }
  std::fputs(text, s.out);
  std::fflush(s.out);
}

}  // namespace sieve
