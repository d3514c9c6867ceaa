// The one logger: level + subsystem mask, one prefixed line per message
// ("host:pid:tid [rank r] SIEVE WARN file:line message"), replaceable sink.
#ifndef SIEVE_CORE_LOG_H_
#define SIEVE_CORE_LOG_H_

#include <functional>
#include <string>

namespace sieve {

enum class LogLevel : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3, kLast = kTrace };

enum LogSubsys : unsigned {
  kLogInit = 1u << 0,
  kLogBootstrap = 1u << 1,
  kLogNet = 1u << 2,
  kLogColl = 1u << 3,
  kLogAlgo = 1u << 4,
  kLogEnv = 1u << 5,
  kLogCall = 1u << 6,
  kLogAll = ~0u,
};

// True when a message of this level and subsystem would be written; checked
// before formatting so disabled logging costs one load and compare.
bool LogEnabled(LogLevel level, unsigned subsys);

void LogWrite(LogLevel level, unsigned subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// Writes text as is (no prefix, any level): for output the user asked for,
// such as SIEVE_PARAM_DUMP.
void LogRaw(const std::string& text);

// The rank shown in this thread's log prefix (-1: none).
void SetLogRank(int rank);

// Tests replace the sink to capture lines; nullptr restores stderr/file output.
using LogSink = std::function<void(LogLevel, const std::string& line)>;
void SetLogSink(LogSink sink);

}  // namespace sieve

#define SIEVE_WARN(fmt, ...)                                                          \
  do {                                                                                \
    if (::sieve::LogEnabled(::sieve::LogLevel::kWarn, ::sieve::kLogAll))              \
      ::sieve::LogWrite(::sieve::LogLevel::kWarn, ::sieve::kLogAll, __FILE__, __LINE__, \
                        fmt, ##__VA_ARGS__);                                          \
  } while (0)
#define SIEVE_INFO(subsys, fmt, ...)                                                          \
  do {                                                                                        \
    if (::sieve::LogEnabled(::sieve::LogLevel::kInfo, subsys))                                \
      ::sieve::LogWrite(::sieve::LogLevel::kInfo, subsys, __FILE__, __LINE__, fmt, ##__VA_ARGS__); \
  } while (0)
#define SIEVE_TRACE(subsys, fmt, ...)                                                          \
  do {                                                                                         \
    if (::sieve::LogEnabled(::sieve::LogLevel::kTrace, subsys))                                \
      ::sieve::LogWrite(::sieve::LogLevel::kTrace, subsys, __FILE__, __LINE__, fmt, ##__VA_ARGS__); \
  } while (0)

#endif  // SIEVE_CORE_LOG_H_
