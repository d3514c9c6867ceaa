// FaultTransport: SIEVE_FAULT rules applied in front of the real transport.
#include "transport/fault_transport.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/clock.h"
#include "core/log.h"

namespace sieve::transport {

namespace {

const char* const kOnNames[] = {"send", "recv", "connect"};
const char* const kDoNames[] = {"fail", "drop",  "truncate", "corrupt", "delay",
                                "kill", "exit",  "abort",    "segv",    "stop"};

bool ParseNumber(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 18) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

template <size_t N>
bool ParseName(const std::string& text, const char* const (&names)[N], int* out) {
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i]) {
      *out = static_cast<int>(i);
      return true;
    }
  }
  return false;
}

Status ParseField(const std::string& key, const std::string& value, FaultRule* rule) {
  uint64_t v = 0;
  int name = 0;
  if (key == "on" && ParseName(value, kOnNames, &name)) {
    rule->on = static_cast<FaultRule::On>(name);
  } else if (key == "do" && ParseName(value, kDoNames, &name)) {
    rule->action = static_cast<FaultRule::Do>(name);
  } else if (key == "rank" && ParseNumber(value, &v) && v < (1u << 24)) {
    rule->rank = static_cast<int>(v);
  } else if (key == "peer" && ParseNumber(value, &v) && v < (1u << 24)) {
    rule->peer = static_cast<int>(v);
  } else if (key == "nth" && ParseNumber(value, &v) && v >= 1) {
    rule->nth = v;
  } else if (key == "count" && ParseNumber(value, &v)) {
    rule->count = v;
  } else if (key == "min" && ParseNumber(value, &v)) {
    rule->min_bytes = v;
  } else if (key == "size" && ParseNumber(value, &v)) {
    rule->exact_bytes = v;
  } else if (key == "ms" && ParseNumber(value, &v) && v <= 3600 * 1000) {
    rule->delay_s = static_cast<double>(v) / 1000;
  } else if (key == "byte" && ParseNumber(value, &v)) {
    rule->byte = v;
  } else {
    return Status::InvalidArgument(StrFormat("SIEVE_FAULT: %s=%s is not understood (keys: on, do, "
                                             "rank, peer, nth, count, min, size, ms, byte)",
                                             key.c_str(), value.c_str()));
  }
  return Status::OK();
}

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    if (end > start) parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace

Status ParseFaultRules(const std::string& text, int rank, std::vector<FaultRule>* out) {
  out->clear();
  for (const std::string& rule_text : Split(text, ';')) {
    FaultRule rule;
    for (const std::string& field : Split(rule_text, ',')) {
      size_t eq = field.find('=');
      if (eq == std::string::npos)
        return Status::InvalidArgument(
            StrFormat("SIEVE_FAULT: '%s' is not key=value", field.c_str()));
      SIEVE_RETURN_IF_ERROR(ParseField(field.substr(0, eq), field.substr(eq + 1), &rule));
    }
    if (rule.rank < 0 || rule.rank == rank) out->push_back(rule);
  }
  return Status::OK();
}

FaultTransport::FaultTransport(std::unique_ptr<Transport> inner, std::vector<FaultRule> rules)
    : inner_(std::move(inner)),
      rules_(std::move(rules)),
      contacted_(inner_->size(), false),
      failed_peers_(inner_->size()) {
  for (const FaultRule& r : rules_)
    SIEVE_WARN("SIEVE_FAULT active: %s #%llu%s of >= %zu bytes -> %s", kOnNames[r.on],
               static_cast<unsigned long long>(r.nth), r.count == 1 ? "" : " and later",
               r.min_bytes, kDoNames[r.action]);
}

FaultTransport::~FaultTransport() = default;

Status FaultTransport::SetPeers(std::vector<PeerAddress> peers) {
  return inner_->SetPeers(std::move(peers));
}

FaultRule* FaultTransport::Match(FaultRule::On on, int peer, size_t bytes) {
  for (FaultRule& r : rules_) {
    if (r.on != on || (r.peer >= 0 && r.peer != peer) || bytes < r.min_bytes) continue;
    if (r.exact_bytes != SIZE_MAX && bytes != r.exact_bytes) continue;
    uint64_t n = ++r.seen;
    if (n >= r.nth && (r.count == 0 || n < r.nth + r.count)) return &r;
  }
  return nullptr;
}

Status FaultTransport::Post(bool is_send, int peer, uint64_t tag, void* buf, size_t bytes,
                            MemoryType type, Request* req) {
  return is_send ? inner_->Isend(peer, tag, buf, bytes, type, req)
                 : inner_->Irecv(peer, tag, buf, bytes, type, req);
}

Status FaultTransport::Apply(FaultRule& rule, bool is_send, int peer, uint64_t tag, void* buf,
                             size_t bytes, MemoryType type, Request* req) {
  const char* what = is_send ? "send to" : "receive from";
  SIEVE_WARN("SIEVE_FAULT: %s %s rank %d (%zu bytes, %s #%llu)", kDoNames[rule.action], what,
             peer, bytes, kOnNames[rule.on], static_cast<unsigned long long>(rule.seen));
  *req = Request();
  req->is_recv = !is_send;
  req->peer = peer;
  req->tag = tag;
  req->bytes = bytes;
  switch (rule.action) {
    case FaultRule::kFail:
      if (rule.on == FaultRule::kConnect) failed_peers_[peer] = "injected connect failure";
      req->state = Request::kFailed;
      req->error = "injected fault (SIEVE_FAULT)";
      return Status::RemoteError(StrFormat("%s rank %d failed: %s", what, peer,
                                           req->error.c_str()));
    case FaultRule::kDrop:
      if (is_send) {  // reported sent, never delivered
        req->state = Request::kDone;
        ++own_completions_;
      } else {  // never completes
        req->state = Request::kPending;
        held_.push_back({false, peer, tag, buf, bytes, type, req,
                         std::numeric_limits<double>::infinity()});
      }
      return Status::OK();
    case FaultRule::kTruncate:
      return Post(is_send, peer, tag, buf, bytes / 2, type, req);
    case FaultRule::kCorrupt: {
      if (!is_send || bytes == 0) return Post(is_send, peer, tag, buf, bytes, type, req);
      if (type == MemoryType::kDevice) {  // the host cannot copy it here (no device runtime)
        req->state = Request::kFailed;
        req->error = "injected fault (SIEVE_FAULT): corrupt on device memory fails the send";
        return Status::RemoteError(StrFormat("%s rank %d failed: %s", what, peer,
                                             req->error.c_str()));
      }
      auto copy = std::make_unique<std::vector<char>>(static_cast<char*>(buf),
                                                      static_cast<char*>(buf) + bytes);
      (*copy)[rule.byte % bytes] ^= 0x5a;
      void* data = copy->data();
      corrupted_.push_back(std::move(copy));
      return Post(true, peer, tag, data, bytes, MemoryType::kHost, req);
    }
    case FaultRule::kDelay:
      req->state = Request::kPending;
      held_.push_back(
          {is_send, peer, tag, buf, bytes, type, req, MonotonicSeconds() + rule.delay_s});
      return Status::OK();
    case FaultRule::kStop:
      std::fflush(nullptr);
      raise(SIGSTOP);
      return Post(is_send, peer, tag, buf, bytes, type, req);
    case FaultRule::kKill:
      std::fflush(nullptr);
      raise(SIGKILL);
      break;
    case FaultRule::kExit:
      std::exit(1);
    case FaultRule::kAbort:
      std::abort();
    case FaultRule::kSegv:
      std::fflush(nullptr);
      raise(SIGSEGV);
      break;
  }
  _exit(1);  // a signal above was blocked or ignored: still leave, as the rule asked
}

Status FaultTransport::Isend(int peer, uint64_t tag, const void* buf, size_t bytes,
                             MemoryType type, Request* req) {
  void* data = const_cast<void*>(buf);
  if (!failed_peers_[peer].empty()) {
    *req = Request();
    req->state = Request::kFailed;
    req->error = failed_peers_[peer];
    return Status::RemoteError(StrFormat("rank %d is unreachable: %s", peer,
                                         failed_peers_[peer].c_str()));
  }
  if (!contacted_[peer]) {
    contacted_[peer] = true;
    if (FaultRule* r = Match(FaultRule::kConnect, peer, bytes))
      return Apply(*r, true, peer, tag, data, bytes, type, req);
  }
  if (FaultRule* r = Match(FaultRule::kSend, peer, bytes))
    return Apply(*r, true, peer, tag, data, bytes, type, req);
  return inner_->Isend(peer, tag, buf, bytes, type, req);
}

Status FaultTransport::Irecv(int peer, uint64_t tag, void* buf, size_t bytes, MemoryType type,
                             Request* req) {
  if (FaultRule* r = Match(FaultRule::kRecv, peer, bytes))
    return Apply(*r, false, peer, tag, buf, bytes, type, req);
  return inner_->Irecv(peer, tag, buf, bytes, type, req);
}

bool FaultTransport::StreamsReceives(size_t bytes) const {
  for (const FaultRule& r : rules_)
    if (r.on == FaultRule::kRecv) return false;
  return inner_->StreamsReceives(bytes);
}

bool FaultTransport::Progress() {
  bool any = inner_->Progress();
  double now = MonotonicSeconds();
  for (size_t i = 0; i < held_.size();) {
    if (held_[i].due > now) {
      ++i;
      continue;
    }
    Held h = held_[i];
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
    Status st = Post(h.is_send, h.peer, h.tag, h.buf, h.bytes, h.type, h.req);
    if (!st.ok() && h.req->state == Request::kPending) {
      h.req->state = Request::kFailed;
      h.req->error = st.message();
    }
    any = true;
  }
  return any;
}

void FaultTransport::WaitForEvents(double timeout_s) {
  double now = MonotonicSeconds();
  for (const Held& h : held_) timeout_s = std::min(timeout_s, h.due - now);
  if (timeout_s <= 0) return;  // something is due: progress posts it
  inner_->WaitForEvents(timeout_s);
}

void FaultTransport::Cancel(Request* const* reqs, size_t count) {
  std::vector<Request*> posted;
  for (size_t i = 0; i < count; ++i) {
    bool was_held = false;
    for (auto it = held_.begin(); it != held_.end(); ++it) {
      if (it->req != reqs[i]) continue;
      held_.erase(it);
      reqs[i]->state = Request::kFailed;
      reqs[i]->error = "cancelled";
      was_held = true;
      break;
    }
    if (!was_held) posted.push_back(reqs[i]);
  }
  if (!posted.empty()) inner_->Cancel(posted.data(), posted.size());
}

std::string FaultTransport::PeerFailure(int peer) const {
  if (peer >= 0 && peer < static_cast<int>(failed_peers_.size()) && !failed_peers_[peer].empty())
    return failed_peers_[peer];
  return inner_->PeerFailure(peer);
}

std::string FaultTransport::Describe() const {
  return inner_->Describe() + " (SIEVE_FAULT active)";
}

}  // namespace sieve::transport
