// Small POSIX TCP helpers for the bootstrap: an owning fd, deadline-bounded connect/send/recv
// on non-blocking sockets, and NCCL_SOCKET_IFNAME-style interface selection.
#ifndef SIEVE_TRANSPORT_BOOTSTRAP_SOCKET_H_
#define SIEVE_TRANSPORT_BOOTSTRAP_SOCKET_H_

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "core/status.h"

namespace sieve::transport {

using Deadline = std::chrono::steady_clock::time_point;

// The steady-clock instant `seconds` from now (negative counts as 0).
Deadline DeadlineIn(double seconds);

// Owns one file descriptor; closes it on destruction. Move-only. Not thread-safe.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { Close(); }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Close();

 private:
  int fd_ = -1;
};

// "1.2.3.4:5678" or "[::1]:5678".
std::string AddrToString(const sockaddr_storage& addr);
// sizeof the concrete sockaddr for addr.ss_family (0 for unsupported families).
socklen_t AddrLen(const sockaddr_storage& addr);
int AddrPort(const sockaddr_storage& addr);
void SetAddrPort(int port, sockaddr_storage* addr);

// Resolves a host name or numeric address (IPv4 preferred) with getaddrinfo.
Status ResolveAddress(const std::string& host, int port, sockaddr_storage* out);

// Picks the address to listen on. `ifname_spec` follows NCCL_SOCKET_IFNAME: comma-separated
// name prefixes; a leading '^' excludes them; a leading '=' (after any '^') means exact names.
// Empty spec: the first UP non-loopback IPv4 interface, else IPv4 loopback. Among matches
// IPv4 is preferred over IPv6 (link-local IPv6 is skipped). Port of *out is 0.
Status FindInterfaceAddress(const std::string& ifname_spec, sockaddr_storage* out,
                            std::string* ifname_out);

// A non-blocking listening socket bound to addr (its port ignored) at `port` (0: any free
// port). *bound_port receives the port actually bound.
Status Listen(const sockaddr_storage& addr, int port, Socket* out, int* bound_port);

// Accepts one pending connection without blocking; *out stays invalid when none is pending.
// The accepted socket is non-blocking.
Status Accept(const Socket& listener, Socket* out, sockaddr_storage* peer);

// Connects to addr, retrying on ECONNREFUSED (the root may not be listening yet) until the
// deadline. Timeout -> RemoteError naming addr and the last cause. Result is non-blocking.
Status Connect(const sockaddr_storage& addr, Deadline deadline, Socket* out);

// Transfer exactly len bytes or fail: timeout or peer close -> RemoteError, other -> SystemError.
// REQUIRES: sock is non-blocking. Never raises SIGPIPE (MSG_NOSIGNAL).
Status SendAll(const Socket& sock, const void* data, size_t len, Deadline deadline);
Status RecvAll(const Socket& sock, void* data, size_t len, Deadline deadline);

// One non-blocking step: *done = bytes moved (0 when the call would block).
// RecvSome on an orderly close -> RemoteError "peer closed the connection".
Status SendSome(const Socket& sock, const void* data, size_t len, size_t* done);
Status RecvSome(const Socket& sock, void* data, size_t len, size_t* done);

// Milliseconds until the deadline for poll(): 0 when past, rounded up, capped at INT_MAX.
int PollTimeoutMs(Deadline deadline);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_BOOTSTRAP_SOCKET_H_
