// sieve::Status: the error value every internal function returns (code + message).
// Codes are one-to-one with sieveResult_t so the C boundary maps with a cast.
#ifndef SIEVE_CORE_STATUS_H_
#define SIEVE_CORE_STATUS_H_

#include <string>
#include <utility>

namespace sieve {

enum class Code : int {
  kOk = 0,
  kCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status OK() { return Status(); }
  static Status CudaError(std::string msg) { return Status(Code::kCudaError, std::move(msg)); }
  static Status SystemError(std::string msg) { return Status(Code::kSystemError, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(Code::kInternalError, std::move(msg)); }
  static Status InvalidArgument(std::string msg) {
    return Status(Code::kInvalidArgument, std::move(msg));
  }
  static Status InvalidUsage(std::string msg) { return Status(Code::kInvalidUsage, std::move(msg)); }
  static Status RemoteError(std::string msg) { return Status(Code::kRemoteError, std::move(msg)); }
  // Not a failure: the work was handed to a non-blocking communicator's thread.
  static Status InProgress(std::string msg) { return Status(Code::kInProgress, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: count overflows" — for logs and tests.
  std::string ToString() const;
  // A copy with `context` prepended to the message ("allreduce #3: " + msg).
  Status WithContext(const std::string& context) const;

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// printf-style message formatting for Status constructors.
std::string StrFormat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace sieve

// Propagates a non-OK Status to the caller. The only control-flow macro besides SIEVE_ASSERT.
#define SIEVE_RETURN_IF_ERROR(expr)        \
  do {                                     \
    ::sieve::Status sieve_status_ = (expr); \
    if (!sieve_status_.ok()) return sieve_status_; \
  } while (0)

// Internal invariants only (never user input): returns InternalError naming the check.
#define SIEVE_ASSERT(cond)                                                          \
  do {                                                                              \
    if (!(cond))                                                                    \
      return ::sieve::Status::Internal(::sieve::StrFormat("assertion failed at %s:%d: %s", \
                                                          __FILE__, __LINE__, #cond)); \
  } while (0)

#endif  // SIEVE_CORE_STATUS_H_
