// POSIX socket helpers for the bootstrap: every blocking step is poll() on a non-blocking fd
// bounded by a deadline, so a dead or silent peer can only cost the caller its timeout.
#include "transport/bootstrap/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

namespace sieve::transport {

namespace {

std::string Errno(int err) { return std::strerror(err); }

// Waits until fd reports `events` or the deadline passes (-> RemoteError naming `what`).
Status WaitFd(int fd, short events, Deadline deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = poll(&p, 1, PollTimeoutMs(deadline));
    if (rc > 0) return Status::OK();
    if (rc == 0) return Status::RemoteError(StrFormat("timed out waiting to %s", what));
    if (errno != EINTR)
      return Status::SystemError(StrFormat("poll failed: %s", Errno(errno).c_str()));
  }
}

// Parsed NCCL_SOCKET_IFNAME-style spec.
struct IfSpec {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;
};

IfSpec ParseIfSpec(const std::string& text) {
  IfSpec spec;
  size_t pos = 0;
  spec.exclude = pos < text.size() && text[pos] == '^';
  if (spec.exclude) ++pos;
  spec.exact = pos < text.size() && text[pos] == '=';
  if (spec.exact) ++pos;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    if (comma > pos) spec.names.push_back(text.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return spec;
}

bool SpecMatches(const IfSpec& spec, const std::string& name) {
  bool hit = false;
  for (const std::string& n : spec.names) {
    hit = spec.exact ? name == n : name.compare(0, n.size(), n) == 0;
    if (hit) break;
  }
  return spec.exclude ? !hit : hit;
}

bool IsLinkLocal6(const sockaddr_in6* a) {
  return a->sin6_addr.s6_addr[0] == 0xfe && (a->sin6_addr.s6_addr[1] & 0xc0) == 0x80;
}

// Lower is better: non-loopback before loopback, IPv4 before IPv6; -1 = unusable.
int AddrRank(const ifaddrs* ifa) {
  if (ifa->ifa_addr == nullptr || (ifa->ifa_flags & IFF_UP) == 0) return -1;
  int family = ifa->ifa_addr->sa_family;
  if (family != AF_INET && family != AF_INET6) return -1;
  if (family == AF_INET6 && IsLinkLocal6(reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr)))
    return -1;
  return ((ifa->ifa_flags & IFF_LOOPBACK) ? 2 : 0) + (family == AF_INET6 ? 1 : 0);
}

// Errors worth retrying while the root is starting up.
bool RetryableConnectError(int err) {
  return err == ECONNREFUSED || err == ECONNRESET || err == ETIMEDOUT || err == EAGAIN;
}

// One connect attempt: OK with *out set, or *err = the failing errno (0 for non-errno failure).
Status ConnectOnce(const sockaddr_storage& addr, Deadline deadline, Socket* out, int* err) {
  *err = 0;
  Socket sock(socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!sock.valid())
    return Status::SystemError(StrFormat("socket() failed: %s", Errno(errno).c_str()));
  int one = 1;
  setsockopt(sock.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(sock.fd(), reinterpret_cast<const sockaddr*>(&addr), AddrLen(addr)) != 0) {
    if (errno != EINPROGRESS) {
      *err = errno;
      return Status::RemoteError(Errno(*err));
    }
    SIEVE_RETURN_IF_ERROR(WaitFd(sock.fd(), POLLOUT, deadline, "connect"));
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    getsockopt(sock.fd(), SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error != 0) {
      *err = so_error;
      return Status::RemoteError(Errno(so_error));
    }
  }
  *out = std::move(sock);
  return Status::OK();
}

}  // namespace

Deadline DeadlineIn(double seconds) {
  auto span = std::chrono::duration<double>(std::max(seconds, 0.0));
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(span);
}

int PollTimeoutMs(Deadline deadline) {
  auto left = deadline - std::chrono::steady_clock::now();
  if (left <= left.zero()) return 0;
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(left).count();
  return static_cast<int>(std::min<long long>((us + 999) / 1000, INT_MAX));
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void Socket::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

std::string AddrToString(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, host, sizeof(host));
    return StrFormat("%s:%d", host, AddrPort(addr));
  }
  if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, host,
              sizeof(host));
    return StrFormat("[%s]:%d", host, AddrPort(addr));
  }
  return StrFormat("<address family %d>", addr.ss_family);
}

socklen_t AddrLen(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) return sizeof(sockaddr_in);
  if (addr.ss_family == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

int AddrPort(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET)
    return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  return 0;
}

void SetAddrPort(int port, sockaddr_storage* addr) {
  uint16_t net = htons(static_cast<uint16_t>(port));
  if (addr->ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(addr)->sin_port = net;
  if (addr->ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(addr)->sin6_port = net;
}

Status ResolveAddress(const std::string& host, int port, sockaddr_storage* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (rc != 0) {
    return Status::InvalidArgument(
        StrFormat("cannot resolve address '%s': %s", host.c_str(), gai_strerror(rc)));
  }
  const addrinfo* pick = nullptr;
  for (const addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET) {
      pick = ai;
      break;
    }
    if (ai->ai_family == AF_INET6 && pick == nullptr) pick = ai;
  }
  if (pick == nullptr) {
    freeaddrinfo(list);
    return Status::InvalidArgument(StrFormat("address '%s' has no IPv4/IPv6 entry", host.c_str()));
  }
  sockaddr_storage addr{};
  std::memcpy(&addr, pick->ai_addr, pick->ai_addrlen);
  freeaddrinfo(list);
  SetAddrPort(port, &addr);
  *out = addr;
  return Status::OK();
}

Status FindInterfaceAddress(const std::string& ifname_spec, sockaddr_storage* out,
                            std::string* ifname_out) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return Status::SystemError(StrFormat("getifaddrs failed (socket ifname spec '%s'): %s",
                                         ifname_spec.c_str(), Errno(errno).c_str()));
  }
  IfSpec spec = ParseIfSpec(ifname_spec);
  const ifaddrs* best = nullptr;
  int best_rank = INT_MAX;
  std::string seen;  // names of UP interfaces, for the error message
  for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    int rank = AddrRank(ifa);
    if (rank < 0) continue;
    if (seen.find(std::string(ifa->ifa_name) + ",") == std::string::npos)
      seen += std::string(ifa->ifa_name) + ",";
    if (!ifname_spec.empty() && !SpecMatches(spec, ifa->ifa_name)) continue;
    if (rank < best_rank) {
      best = ifa;
      best_rank = rank;
    }
  }
  if (best == nullptr) {
    freeifaddrs(list);
    if (!seen.empty()) seen.pop_back();
    return Status::InvalidArgument(
        StrFormat("no UP IPv4/IPv6 interface matches socket ifname spec '%s' (up: %s)",
                  ifname_spec.c_str(), seen.empty() ? "none" : seen.c_str()));
  }
  sockaddr_storage addr{};
  std::memcpy(&addr, best->ifa_addr,
              best->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
  std::string name = best->ifa_name;
  freeifaddrs(list);
  SetAddrPort(0, &addr);
  *out = addr;
  *ifname_out = name;
  return Status::OK();
}

Status Listen(const sockaddr_storage& addr, int port, Socket* out, int* bound_port) {
  Socket sock(socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!sock.valid())
    return Status::SystemError(StrFormat("socket() failed: %s", Errno(errno).c_str()));
  // A fixed MASTER_PORT must be reusable right after a previous job's TIME_WAIT.
  int one = 1;
  setsockopt(sock.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage bind_addr = addr;
  SetAddrPort(port, &bind_addr);
  if (bind(sock.fd(), reinterpret_cast<const sockaddr*>(&bind_addr), AddrLen(bind_addr)) != 0) {
    return Status::SystemError(
        StrFormat("bind to %s failed: %s", AddrToString(bind_addr).c_str(), Errno(errno).c_str()));
  }
  if (listen(sock.fd(), SOMAXCONN) != 0) {
    return Status::SystemError(StrFormat("listen on %s failed: %s", AddrToString(bind_addr).c_str(),
                                         Errno(errno).c_str()));
  }
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (getsockname(sock.fd(), reinterpret_cast<sockaddr*>(&local), &len) != 0)
    return Status::SystemError(StrFormat("getsockname failed: %s", Errno(errno).c_str()));
  *bound_port = AddrPort(local);
  *out = std::move(sock);
  return Status::OK();
}

Status Accept(const Socket& listener, Socket* out, sockaddr_storage* peer) {
  for (;;) {
    socklen_t len = sizeof(*peer);
    int fd = accept4(listener.fd(), reinterpret_cast<sockaddr*>(peer), &len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      *out = Socket(fd);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return Status::OK();
    }
    if (errno == EINTR) continue;
    // A connection reset while queued is the peer's problem, not the listener's.
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED) return Status::OK();
    return Status::SystemError(StrFormat("accept failed: %s", Errno(errno).c_str()));
  }
}

Status Connect(const sockaddr_storage& addr, Deadline deadline, Socket* out) {
  int backoff_ms = 10;
  std::string last = "no attempt before the deadline";
  do {
    int err = 0;
    Status st = ConnectOnce(addr, deadline, out, &err);
    if (st.ok()) return st;
    last = st.message();
    if (st.code() == Code::kSystemError) return st;
    if (err != 0 && !RetryableConnectError(err)) {
      return Status::RemoteError(
          StrFormat("connect to %s failed: %s", AddrToString(addr).c_str(), last.c_str()));
    }
    // Back off (bounded by the deadline) before the next attempt.
    poll(nullptr, 0, std::min(backoff_ms, PollTimeoutMs(deadline)));
    backoff_ms = std::min(backoff_ms * 2, 200);
  } while (PollTimeoutMs(deadline) > 0);
  return Status::RemoteError(StrFormat("could not connect to %s before the deadline: %s",
                                       AddrToString(addr).c_str(), last.c_str()));
}

Status SendSome(const Socket& sock, const void* data, size_t len, size_t* done) {
  *done = 0;
  for (;;) {
    ssize_t n = send(sock.fd(), data, len, MSG_NOSIGNAL);
    if (n >= 0) {
      *done = static_cast<size_t>(n);
      return Status::OK();
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::OK();
    if (errno == EPIPE || errno == ECONNRESET)
      return Status::RemoteError(StrFormat("peer closed the connection: %s", Errno(errno).c_str()));
    return Status::SystemError(StrFormat("send failed: %s", Errno(errno).c_str()));
  }
}

Status RecvSome(const Socket& sock, void* data, size_t len, size_t* done) {
  *done = 0;
  for (;;) {
    ssize_t n = recv(sock.fd(), data, len, 0);
    if (n > 0) {
      *done = static_cast<size_t>(n);
      return Status::OK();
    }
    if (n == 0) return Status::RemoteError("peer closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::OK();
    if (errno == ECONNRESET)
      return Status::RemoteError(StrFormat("peer closed the connection: %s", Errno(errno).c_str()));
    return Status::SystemError(StrFormat("recv failed: %s", Errno(errno).c_str()));
  }
}

Status SendAll(const Socket& sock, const void* data, size_t len, Deadline deadline) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    size_t n = 0;
    SIEVE_RETURN_IF_ERROR(SendSome(sock, p, len, &n));
    if (n == 0) SIEVE_RETURN_IF_ERROR(WaitFd(sock.fd(), POLLOUT, deadline, "send"));
    p += n;
    len -= n;
  }
  return Status::OK();
}

Status RecvAll(const Socket& sock, void* data, size_t len, Deadline deadline) {
  char* p = static_cast<char*>(data);
  while (len > 0) {
    size_t n = 0;
    SIEVE_RETURN_IF_ERROR(RecvSome(sock, p, len, &n));
    if (n == 0) SIEVE_RETURN_IF_ERROR(WaitFd(sock.fd(), POLLIN, deadline, "receive"));
    p += n;
    len -= n;
  }
  return Status::OK();
}

}  // namespace sieve::transport
