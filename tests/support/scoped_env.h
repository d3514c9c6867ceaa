// ScopedEnv: sets (or unsets) one environment variable for the lifetime of the
// object and restores the previous value, or its absence, on destruction.
#ifndef SIEVE_TESTS_SUPPORT_SCOPED_ENV_H_
#define SIEVE_TESTS_SUPPORT_SCOPED_ENV_H_

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sieve::testing {

class ScopedEnv {
 public:
  // value == nullptr unsets the variable.
  ScopedEnv(std::string name, const char* value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) {
      had_value_ = true;
      old_value_ = old;
    }
    if (value != nullptr) {
      setenv(name_.c_str(), value, /*overwrite=*/1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv() {
    if (had_value_) {
      setenv(name_.c_str(), old_value_.c_str(), /*overwrite=*/1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  bool had_value_ = false;
  std::string old_value_;
};

// A set of ScopedEnv: Clear() and Set() stack up; everything is restored, in
// reverse order, when the set is destroyed.
class ScopedEnvSet {
 public:
  void Set(const std::string& name, const char* value) {
    vars_.push_back(std::make_unique<ScopedEnv>(name, value));
  }
  void Clear(const std::string& name) { Set(name, nullptr); }
  ~ScopedEnvSet() {
    while (!vars_.empty()) vars_.pop_back();
  }

 private:
  std::vector<std::unique_ptr<ScopedEnv>> vars_;
};

}  // namespace sieve::testing

#endif  // SIEVE_TESTS_SUPPORT_SCOPED_ENV_H_
