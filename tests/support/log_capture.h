// Captures the library's log lines for the lifetime of the object, so a test
// can count how often something was said.
#ifndef SIEVE_TESTS_SUPPORT_LOG_CAPTURE_H_
#define SIEVE_TESTS_SUPPORT_LOG_CAPTURE_H_

#include <mutex>
#include <string>
#include <vector>

#include "core/log.h"

namespace sieve_test {

class LogCapture {
 public:
  LogCapture() {
    sieve::SetLogSink([this](sieve::LogLevel, const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(line);
    });
  }
  ~LogCapture() { sieve::SetLogSink(nullptr); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Lines that contain `needle`.
  int Count(const std::string& needle) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& l : lines_) n += l.find(needle) != std::string::npos;
    return n;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

}  // namespace sieve_test

#endif  // SIEVE_TESTS_SUPPORT_LOG_CAPTURE_H_
