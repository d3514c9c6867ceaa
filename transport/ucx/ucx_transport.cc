// UCX tag send/recv with the three outcomes of a posted operation handled
// explicitly: completed inline, in flight (callback later), or failed; peer
// liveness (UCX error callbacks, or pids for same-host peers) and failure
// notices between ranks.
#include "transport/ucx/ucx_transport.h"

#include <poll.h>
#include <sched.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/log.h"
#include "transport/failure_notice.h"
#include "transport/tag.h"
#include "transport/ucx/ucx_tuning.h"

namespace sieve::transport {

namespace {

// Starts every address this transport hands out, so a peer that chose
// another transport is recognized (SetPeers) instead of failing in UCX.
constexpr char kAddressPrefix[] = "ucx:";

// A streamed receive (IrecvToSink) is a receive of UCX's generic datatype:
// UCX hands each fragment to Unpack (below) straight from its receive buffer,
// which passes it to the sink, instead of copying it into a buffer of ours.
// The "buffer" UCX is given is the SinkTarget, the count its length in bytes.
struct SinkTarget {
  ByteSink* sink;
  size_t bytes;
};

// Per-operation completion record, passed to UCX as user_data: valid even when
// UCX runs the callback before the posting call returns. The callback deletes
// it; so does Cancel when it hands an unfinished request back to UCX (after
// ucp_request_free no callback comes).
struct Slot {
  Request* owner;
  uint64_t* completions;
  void* ucx_request;
  std::unique_ptr<SinkTarget> target;  // a streamed receive's, released with the slot
};

void Finish(void* request, ucs_status_t status, size_t received, void* user_data) {
  auto* slot = static_cast<Slot*>(user_data);
  ++*slot->completions;
  Request* req = slot->owner;
  req->impl = nullptr;
  req->received_bytes = received;
  if (status == UCS_OK) {
    req->state = Request::kDone;
  } else {
    req->state = Request::kFailed;
    req->truncated = status == UCS_ERR_MESSAGE_TRUNCATED;
    req->error = status == UCS_ERR_MESSAGE_TRUNCATED ? "message longer than the posted receive"
                                                     : ucs_status_string(status);
  }
  delete slot;
  ucp_request_free(request);
}

void SendDone(void* request, ucs_status_t status, void* user_data) {
  Finish(request, status, 0, user_data);
}

void RecvDone(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
              void* user_data) {
  Finish(request, status, info != nullptr ? info->length : 0, user_data);
}

// The generic datatype of streamed receives; nothing is sent with it.
void* StartPack(void*, const void*, size_t) { return nullptr; }  // never sent
size_t PackedSize(void* state) { return state ? static_cast<SinkTarget*>(state)->bytes : 0; }
size_t Pack(void*, size_t, void*, size_t) { return 0; }
void* StartUnpack(void*, void* buffer, size_t) { return buffer; }
ucs_status_t Unpack(void* state, size_t offset, const void* src, size_t length) {
  auto* target = static_cast<SinkTarget*>(state);
  if (offset > target->bytes || length > target->bytes - offset) return UCS_ERR_MESSAGE_TRUNCATED;
  // No sink: the receive was cancelled after it matched and UCX still delivers.
  if (length != 0 && target->sink != nullptr) target->sink->Consume(offset, src, length);
  return UCS_OK;
}
void FinishDatatype(void*) {}

const ucp_generic_dt_ops_t kSinkOps = {StartPack, StartUnpack, PackedSize,
                                       Pack,      Unpack,      FinishDatatype};

// What UCX is told about a buffer's memory. Host memory is declared
// (UCS_MEMORY_TYPE_HOST), so UCX skips its detection on every host message.
// Device memory is left to UCX's detection (UCS_MEMORY_TYPE_UNKNOWN), not
// declared UCS_MEMORY_TYPE_CUDA: Sieve's device buffers are the caller's, and
// may be plain device allocations or managed memory, which UCX handles
// differently (UCS_MEMORY_TYPE_CUDA_MANAGED; cuda_ipc cannot map it), so
// "CUDA" would misinform UCX about managed buffers as "HOST" did about all of
// them. UCX's memory-type cache makes the detection one lookup per message. A
// UCX without CUDA support detects host memory, which is what the fake
// device's "device" memory is (SIEVE_GPU_DIRECT=FORCE in tests).
void SetMemoryType(MemoryType type, ucp_request_param_t* param) {
  if (type == MemoryType::kDevice) return;
  param->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  param->memory_type = UCS_MEMORY_TYPE_HOST;
}

// What `param` tells UCX about the memory, for TRACE lines (tests read them).
const char* MemoryTypeTold(const ucp_request_param_t& param) {
  if ((param.op_attr_mask & UCP_OP_ATTR_FIELD_MEMORY_TYPE) == 0) return "detected by UCX";
  return param.memory_type < UCS_MEMORY_TYPE_LAST ? ucs_memory_type_names[param.memory_type]
                                                  : "unknown";
}

// A process that no longer exists, or a zombie (exited, not yet reaped).
bool ProcessGone(int pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return true;
  char buf[512] = {};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  const char* paren = std::strrchr(buf, ')');  // the state follows "(comm) "
  return n == 0 || paren == nullptr || paren[1] == '\0' || paren[2] == 'Z' || paren[2] == 'X';
}

}  // namespace

struct UcxTransport::Impl {
  struct Peer {
    int rank = -1;
    std::string address;
    bool peer_errors = true;  // UCP_ERR_HANDLING_MODE_PEER on this endpoint
    int local_pid = 0;        // same host: checked for liveness
    double next_liveness_check = 0;
    ucp_ep_h ep = nullptr;
    std::string failure;
  };

  int rank = 0;
  int size = 0;
  PeerErrorsParam peer_errors = PeerErrorsParam::kAuto;
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  int event_fd = -1;  // the worker's wake-up fd; -1: WaitForEvents only yields
  std::string local_address;  // kAddressPrefix + the worker's address
  std::vector<Peer> peers;
  uint64_t completions = 0;
  // The generic datatype of streamed receives (kSinkOps); false if UCX refused it.
  ucp_datatype_t sink_datatype = 0;
  bool has_sink_datatype = false;
  // Messages shorter than this go eagerly (the RNDV_THRESH Sieve set); 0: unknown.
  size_t eager_below = 0;
  // Targets of streamed receives cancelled while UCX still owned them: kept
  // (without their sink) until the worker is gone, as UCX may still unpack.
  std::vector<std::unique_ptr<SinkTarget>> orphaned_targets;

  // Failure notices: one receive (from any rank) always posted, and what we sent.
  char notice_buffer[kNoticeBytes] = {};
  Request notice_recv;
  Notice notice;  // the earliest received
  std::unique_ptr<std::string> notice_body;
  std::vector<std::unique_ptr<Request>> notices_sent;

  Status Endpoint(int peer, ucp_ep_h* out);
  void CloseEndpoints(double deadline);
  // Marks req pending with a fresh slot; returns the slot to pass as user_data.
  Slot* Begin(Request* req) {
    req->state = Request::kPending;
    return new Slot{req, &completions, nullptr, nullptr};
  }
  // After posting: UCX returned r (pending, or already completed by callback).
  void Track(void* r, Slot* slot, Request* req) {
    if (req->state != Request::kPending) return;  // the callback already ran
    slot->ucx_request = r;
    req->impl = slot;
  }
  // With `target`, a streamed receive into target->sink (buf is unused).
  Status PostRecv(void* buf, size_t bytes, uint64_t tag, uint64_t mask, MemoryType type,
                  Request* req, std::unique_ptr<SinkTarget> target = nullptr);
  void PostNoticeReceive();
  void ProgressFor(double seconds) {
    double deadline = MonotonicSeconds() + seconds;
    while (MonotonicSeconds() < deadline) ucp_worker_progress(worker);
  }
};

namespace {

void PeerError(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* peer = static_cast<UcxTransport::Impl::Peer*>(arg);
  if (peer->failure.empty()) {
    peer->failure = ucs_status_string(status);
    SIEVE_INFO(kLogNet, "connection to rank %d failed: %s", peer->rank, peer->failure.c_str());
  }
}

}  // namespace

Status UcxTransport::Impl::Endpoint(int peer, ucp_ep_h* out) {
  if (peer < 0 || peer >= static_cast<int>(peers.size()))
    return Status::Internal(StrFormat("rank %d is not a peer of this transport (%zu peers: not "
                                      "connected yet, or shut down)",
                                      peer, peers.size()));
  Peer& p = peers[peer];
  if (!p.failure.empty())
    return Status::RemoteError(StrFormat("rank %d is unreachable: %s", peer, p.failure.c_str()));
  if (p.ep == nullptr) {
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = reinterpret_cast<const ucp_address_t*>(p.address.data());
    params.err_mode = p.peer_errors ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    params.err_handler.cb = PeerError;
    params.err_handler.arg = &p;
    ucs_status_t st = ucp_ep_create(worker, &params, &p.ep);
    if (st != UCS_OK) {
      p.ep = nullptr;
      return Status::RemoteError(
          StrFormat("cannot connect to rank %d: %s", peer, ucs_status_string(st)));
    }
    SIEVE_TRACE(kLogNet, "endpoint to rank %d created", peer);
  }
  *out = p.ep;
  return Status::OK();
}

void UcxTransport::Impl::CloseEndpoints(double deadline) {
  std::vector<void*> closing;
  for (Peer& p : peers) {
    if (p.ep == nullptr) continue;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = p.failure.empty() ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
    void* req = ucp_ep_close_nbx(p.ep, &param);
    if (req != nullptr && !UCS_PTR_IS_ERR(req)) closing.push_back(req);
    p.ep = nullptr;
  }
  for (void* req : closing) {
    while (ucp_request_check_status(req) == UCS_INPROGRESS && MonotonicSeconds() < deadline)
      ucp_worker_progress(worker);
    if (ucp_request_check_status(req) != UCS_INPROGRESS) ucp_request_free(req);
  }
}

Status UcxTransport::Impl::PostRecv(void* buf, size_t bytes, uint64_t tag, uint64_t mask,
                                    MemoryType type, Request* req,
                                    std::unique_ptr<SinkTarget> target) {
  Slot* slot = Begin(req);
  ucp_request_param_t param{};
  // No inline completion: UCX 1.13 does not report the matched length then,
  // and the length is how a size mismatch between ranks is caught. The
  // callback may run before ucp_tag_recv_nbx returns; the slot handles that.
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = RecvDone;
  param.user_data = slot;
  SetMemoryType(type, &param);
  if (target != nullptr) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = sink_datatype;
    buf = target.get();
    slot->target = std::move(target);
  }
  SIEVE_TRACE(kLogNet, "UCX recv %zu bytes tag 0x%016llx, %s %s, memory type %s", bytes,
              static_cast<unsigned long long>(tag), MemoryTypeName(type),
              slot->target ? "sink" : "buffer", MemoryTypeTold(param));
  void* r = ucp_tag_recv_nbx(worker, buf, bytes, tag, mask, &param);
  if (r == nullptr || UCS_PTR_IS_ERR(r)) {
    delete slot;
    req->state = Request::kFailed;
    req->error = r == nullptr ? "completed inline despite NO_IMM_CMPL"
                              : ucs_status_string(UCS_PTR_STATUS(r));
    return Status::SystemError(StrFormat("receive failed: %s", req->error.c_str()));
  }
  Track(r, slot, req);
  return Status::OK();
}

void UcxTransport::Impl::PostNoticeReceive() {
  notice_recv = Request();
  notice_recv.is_recv = true;
  if (!PostRecv(notice_buffer, kNoticeBytes - 1, NoticeTag(0), kNoticeTagMask, MemoryType::kHost,
                &notice_recv)
           .ok())
    SIEVE_WARN("cannot post the failure-notice receive; peer failures are found by timeout");
}

UcxTransport::UcxTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

namespace {

// A UCP context for tag matching, with options applied over the UCX_* environment.
// *eager_below: the rendezvous threshold applied (messages below it are sent
// eagerly), 0 where UCX chooses.
Status InitContext(const UcxOptions& options, ucp_context_h* out, size_t* eager_below) {
  *eager_below = 0;
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK)
    return Status::SystemError(StrFormat("ucp_config_read: %s", ucs_status_string(st)));
  if (!options.net_devices.empty()) {
    st = ucp_config_modify(config, "NET_DEVICES", options.net_devices.c_str());
    if (st != UCS_OK) {
      ucp_config_release(config);
      return Status::InvalidArgument(StrFormat("UCX rejects net devices '%s': %s",
                                               options.net_devices.c_str(), ucs_status_string(st)));
    }
  }
  std::vector<UcxSetting> settings =
      ChooseUcxSettings(options.tls, options.user_set, options.largest_segment);
  for (UcxSetting& s : ChooseTcpBuffers(options.tls, options.user_set, options.link_rtt_s,
                                        options.link_rate_Bps, ReadTcpBufferLimits()))
    settings.push_back(std::move(s));
  for (const UcxSetting& s : settings) {
    st = ucp_config_modify(config, s.name.c_str(), s.value.c_str());
    if (st == UCS_OK) {
      if (s.name == "RNDV_THRESH") *eager_below = std::strtoull(s.value.c_str(), nullptr, 10);
      SIEVE_INFO(kLogNet, "%s=%s (%s; set %s to override)", s.variable.c_str(),
                 s.value.c_str(), s.why.c_str(), s.variable.c_str());
    } else {
      SIEVE_WARN("UCX rejects %s=%s: %s", s.variable.c_str(), s.value.c_str(),
                 ucs_status_string(st));
    }
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  // WAKEUP: the worker gets an event fd, so idle waits sleep instead of spinning.
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  st = ucp_init(&params, config, out);
  ucp_config_release(config);
  if (st != UCS_OK) return Status::SystemError(StrFormat("ucp_init: %s", ucs_status_string(st)));
  return Status::OK();
}

// The text a UCX printing function writes to a FILE*.
template <typename PrintFn>
std::string Capture(PrintFn print) {
  char* text = nullptr;
  size_t len = 0;
  FILE* mem = open_memstream(&text, &len);
  if (mem == nullptr) return "";
  print(mem);
  std::fclose(mem);
  std::string out(text, len);
  std::free(text);
  return out;
}

}  // namespace

Status UcxTransport::Query(const UcxOptions& options, UcxInfo* out) {
  ucp_context_h context = nullptr;
  size_t eager_below = 0;
  SIEVE_RETURN_IF_ERROR(InitContext(options, &context, &eager_below));
  UcxInfo info;
  info.version = ucp_get_version_string();
  // Lines look like "#      resource 2  :  md 1  dev 2  flags -- tcp/eth0".
  std::string text = Capture([&](FILE* f) { ucp_context_print_info(context, f); });
  size_t pos = 0;
  while ((pos = text.find("resource", pos)) != std::string::npos) {
    size_t eol = text.find('\n', pos);
    std::string line = text.substr(pos, eol == std::string::npos ? eol : eol - pos);
    if (size_t dash = line.find("-- "); dash != std::string::npos)
      info.resources.push_back(line.substr(dash + 3));
    pos = eol == std::string::npos ? text.size() : eol;
  }
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(context, &attr) == UCS_OK) {
    static const char* const kNames[] = {"host", "cuda", "cuda-managed", "rocm", "rocm-managed"};
    for (int t = 0; t < UCS_MEMORY_TYPE_LAST && t < 5; ++t)
      if (attr.memory_types & (uint64_t{1} << t)) info.memory_types.push_back(kNames[t]);
  }
  ucp_cleanup(context);
  *out = std::move(info);
  return Status::OK();
}

Status UcxTransport::Create(int rank, int size, const UcxOptions& options,
                            std::unique_ptr<UcxTransport>* out) {
  auto impl = std::make_unique<Impl>();
  impl->rank = rank;
  impl->size = size;
  impl->peer_errors = options.peer_errors;
  SIEVE_RETURN_IF_ERROR(InitContext(options, &impl->context, &impl->eager_below));
  ucs_status_t st;
  ucp_worker_params_t wparams{};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
  st = ucp_worker_create(impl->context, &wparams, &impl->worker);
  if (st != UCS_OK) {
    ucp_cleanup(impl->context);
    return Status::SystemError(StrFormat("ucp_worker_create: %s", ucs_status_string(st)));
  }
  ucp_address_t* addr = nullptr;
  size_t addr_len = 0;
  st = ucp_worker_get_address(impl->worker, &addr, &addr_len);
  if (st != UCS_OK) {
    ucp_worker_destroy(impl->worker);
    ucp_cleanup(impl->context);
    return Status::SystemError(StrFormat("ucp_worker_get_address: %s", ucs_status_string(st)));
  }
  impl->local_address = kAddressPrefix;
  impl->local_address.append(reinterpret_cast<const char*>(addr), addr_len);
  ucp_worker_release_address(impl->worker, addr);
  st = ucp_dt_create_generic(&kSinkOps, nullptr, &impl->sink_datatype);
  impl->has_sink_datatype = st == UCS_OK;
  if (st != UCS_OK)
    SIEVE_INFO(kLogNet, "no UCX generic datatype (%s): receives are copied into buffers",
               ucs_status_string(st));
  st = ucp_worker_get_efd(impl->worker, &impl->event_fd);
  if (st != UCS_OK) {
    impl->event_fd = -1;
    SIEVE_INFO(kLogNet, "no UCX wake-up fd (%s): idle waits spin and yield",
               ucs_status_string(st));
  }
  out->reset(new UcxTransport(std::move(impl)));
  return Status::OK();
}

UcxTransport::~UcxTransport() {
  Shutdown(2.0, false);
  if (impl_->worker != nullptr) ucp_worker_destroy(impl_->worker);
  if (impl_->has_sink_datatype) ucp_dt_destroy(impl_->sink_datatype);
  impl_->orphaned_targets.clear();
  if (impl_->context != nullptr) ucp_cleanup(impl_->context);
}

void UcxTransport::Shutdown(double timeout_s, bool force) {
  if (impl_->worker == nullptr || impl_->peers.empty()) return;
  double deadline = MonotonicSeconds() + timeout_s;
  std::vector<Request*> mine = {&impl_->notice_recv};
  for (auto& req : impl_->notices_sent) mine.push_back(req.get());
  Cancel(mine.data(), mine.size());
  if (force) {
    for (Impl::Peer& p : impl_->peers)
      if (p.failure.empty()) p.failure = "communicator aborted";
  } else {
    // Flush first so peers still waiting for our last acknowledgements get them.
    ucp_request_param_t param{};
    void* flush = ucp_worker_flush_nbx(impl_->worker, &param);
    if (flush != nullptr && !UCS_PTR_IS_ERR(flush)) {
      while (ucp_request_check_status(flush) == UCS_INPROGRESS && MonotonicSeconds() < deadline)
        ucp_worker_progress(impl_->worker);
      if (ucp_request_check_status(flush) != UCS_INPROGRESS) ucp_request_free(flush);
    }
  }
  impl_->CloseEndpoints(deadline);
  impl_->peers.clear();
}

const std::string& UcxTransport::LocalAddress() const { return impl_->local_address; }

Status UcxTransport::SetPeers(std::vector<PeerAddress> peers) {
  if (static_cast<int>(peers.size()) != impl_->size)
    return Status::Internal("address table size differs from the communicator size");
  const std::string prefix = kAddressPrefix;
  for (size_t i = 0; i < peers.size(); ++i)
    if (peers[i].address.compare(0, prefix.size(), prefix) != 0)
      return Status::InvalidUsage(StrFormat(
          "rank %zu does not use the UCX transport (SIEVE_TRANSPORT differs between ranks)", i));
  const PeerErrorsParam peer_errors = impl_->peer_errors;
  impl_->peers.resize(peers.size());
  for (size_t i = 0; i < peers.size(); ++i) {
    Impl::Peer& p = impl_->peers[i];
    p.rank = static_cast<int>(i);
    p.address = peers[i].address.substr(prefix.size());
    p.peer_errors = peer_errors == PeerErrorsParam::kPeer ||
                    (peer_errors == PeerErrorsParam::kAuto && !peers[i].same_host);
    p.local_pid = peers[i].same_host ? peers[i].pid : 0;
  }
  impl_->PostNoticeReceive();
  return Status::OK();
}

int UcxTransport::rank() const { return impl_->rank; }
int UcxTransport::size() const { return impl_->size; }

Status UcxTransport::Isend(int peer, uint64_t tag, const void* buf, size_t bytes, MemoryType type,
                           Request* req) {
  ucp_ep_h ep = nullptr;
  SIEVE_RETURN_IF_ERROR(impl_->Endpoint(peer, &ep));
  *req = Request();
  req->peer = peer;
  req->tag = tag;
  req->bytes = bytes;
  Slot* slot = impl_->Begin(req);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = SendDone;
  param.user_data = slot;
  SetMemoryType(type, &param);
  SIEVE_TRACE(kLogNet, "UCX send %zu bytes to rank %d tag 0x%016llx, %s buffer, memory type %s",
              bytes, peer, static_cast<unsigned long long>(tag), MemoryTypeName(type),
              MemoryTypeTold(param));
  void* r = ucp_tag_send_nbx(ep, buf, bytes, tag, &param);
  if (r == nullptr) {  // completed inline: no callback will come
    delete slot;
    req->state = Request::kDone;
    ++impl_->completions;
  } else if (UCS_PTR_IS_ERR(r)) {
    delete slot;
    req->state = Request::kFailed;
    req->error = ucs_status_string(UCS_PTR_STATUS(r));
    return Status::RemoteError(StrFormat("send to rank %d failed: %s", peer, req->error.c_str()));
  } else {
    impl_->Track(r, slot, req);
  }
  return Status::OK();
}

Status UcxTransport::Irecv(int peer, uint64_t tag, void* buf, size_t bytes, MemoryType type,
                           Request* req) {
  *req = RecvRequest(peer, tag, bytes);
  return impl_->PostRecv(buf, bytes, tag, ~uint64_t{0}, type, req)
      .WithContext(StrFormat("rank %d", peer));
}

bool UcxTransport::StreamsReceives(size_t bytes) const {
  return impl_->has_sink_datatype && bytes < impl_->eager_below;
}

Status UcxTransport::IrecvToSink(int peer, uint64_t tag, ByteSink* sink, size_t bytes,
                                 Request* req) {
  *req = RecvRequest(peer, tag, bytes);
  if (!impl_->has_sink_datatype)
    return Status::Internal("streamed receive without UCX's generic datatype");
  return impl_
      ->PostRecv(nullptr, bytes, tag, ~uint64_t{0}, MemoryType::kHost, req,
                 std::make_unique<SinkTarget>(SinkTarget{sink, bytes}))
      .WithContext(StrFormat("rank %d", peer));
}

bool UcxTransport::Progress() { return ucp_worker_progress(impl_->worker) != 0; }

void UcxTransport::WaitForEvents(double timeout_s) {
  if (impl_->event_fd < 0) {
    sched_yield();
    return;
  }
  // UCX's protocol: arm only once progress finds nothing; BUSY means events
  // arrived since, which progressing (the caller's next step) consumes. An
  // armed worker's fd becomes readable on any later event, so none is lost.
  if (ucp_worker_progress(impl_->worker) != 0) return;
  ucs_status_t st = ucp_worker_arm(impl_->worker);
  if (st == UCS_ERR_BUSY) return;
  if (st != UCS_OK) {
    sched_yield();
    return;
  }
  // The bound also covers a transport whose completions do not signal the fd.
  const int64_t ns = std::llround(std::max(0.0, std::min(timeout_s, 1.0)) * 1e9);
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  pollfd fd{impl_->event_fd, POLLIN, 0};
  ppoll(&fd, 1, &ts, nullptr);  // EINTR or timeout: the caller re-checks everything
}

void UcxTransport::Cancel(Request* const* reqs, size_t count) {
  std::vector<Request*> pending;
  for (size_t i = 0; i < count; ++i) {
    if (reqs[i]->state != Request::kPending || reqs[i]->impl == nullptr) continue;
    ucp_request_cancel(impl_->worker, static_cast<Slot*>(reqs[i]->impl)->ucx_request);
    pending.push_back(reqs[i]);
  }
  // One short bounded wait for all of them, not one per request.
  double deadline = MonotonicSeconds() + 0.1;
  auto any_pending = [&] {
    return std::any_of(pending.begin(), pending.end(),
                       [](Request* r) { return r->state == Request::kPending; });
  };
  while (any_pending() && MonotonicSeconds() < deadline) ucp_worker_progress(impl_->worker);
  for (Request* req : pending) {
    if (req->state != Request::kPending) continue;
    // UCX still owns it (e.g. a rendezvous send, which it cannot cancel): hand
    // it back, so UCX finishes or drops it on its own and destroying the worker
    // does not find it unreleased. UCX calls no callback after the free, so
    // the slot goes now (it leaked until the fuzzer's request_leak reproducer).
    auto* slot = static_cast<Slot*>(req->impl);
    ucp_request_free(slot->ucx_request);
    if (slot->target != nullptr) {
      slot->target->sink = nullptr;
      impl_->orphaned_targets.push_back(std::move(slot->target));
    }
    delete slot;
    req->impl = nullptr;
    req->state = Request::kFailed;
    req->error = "cancelled";
  }
}

uint64_t UcxTransport::completions() const { return impl_->completions; }

std::string UcxTransport::PeerFailure(int peer) const {
  if (peer < 0 || peer >= static_cast<int>(impl_->peers.size())) return "";
  Impl::Peer& p = impl_->peers[peer];
  if (p.failure.empty() && p.local_pid > 0 && MonotonicSeconds() >= p.next_liveness_check) {
    p.next_liveness_check = MonotonicSeconds() + 0.1;
    if (ProcessGone(p.local_pid))
      p.failure = StrFormat("process %d (same host) exited", p.local_pid);
  }
  return p.failure;
}

void UcxTransport::NotifyPeersOfFailure(uint32_t first_failed_seq, const std::string& what) {
  if (impl_->notice_body || impl_->peers.empty()) return;  // one notice per communicator
  impl_->notice_body =
      std::make_unique<std::string>(EncodeNotice(first_failed_seq, impl_->rank, what));
  for (int peer = 0; peer < impl_->size; ++peer) {
    if (peer == impl_->rank || !impl_->peers[peer].failure.empty()) continue;
    auto req = std::make_unique<Request>();
    SIEVE_TRACE(kLogNet, "failure notice to rank %d", peer);
    const std::string& body = *impl_->notice_body;
    if (Isend(peer, NoticeTag(impl_->rank), body.data(), body.size(), MemoryType::kHost, req.get())
            .ok())
      impl_->notices_sent.push_back(std::move(req));
  }
  impl_->ProgressFor(0.02);  // push them out; Shutdown cancels what is left
}

Transport::Notice UcxTransport::FailureNotice() {
  Impl& im = *impl_;
  if (im.notice_recv.state == Request::kDone) {
    TakeNotice(im.notice_buffer, im.notice_recv.received_bytes, &im.notice);
    im.PostNoticeReceive();  // each peer may send one: keep listening for an earlier one
  }
  return im.notice;
}

bool UcxTransport::SupportsCudaMemory() const {
  ucp_context_attr_t attr;
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (ucp_context_query(impl_->context, &attr) != UCS_OK) return false;
  return (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
}

namespace {

// "posix/memory,tcp/lo": the distinct transports of an endpoint's lanes, from
// ucp_ep_print_info lines such as "lane[0]:  8:posix/memory.0 md[4] ...".
std::string EndpointLanes(ucp_ep_h ep) {
  char* text = nullptr;
  size_t len = 0;
  FILE* mem = open_memstream(&text, &len);
  if (mem == nullptr) return "?";
  ucp_ep_print_info(ep, mem);
  std::fclose(mem);
  std::string info(text, len);
  std::free(text);
  std::string lanes;
  size_t pos = 0;
  while ((pos = info.find("lane[", pos)) != std::string::npos) {
    size_t start = info.find_first_not_of(' ', info.find(':', pos) + 1);
    size_t end = info.find_first_of(" \n", start);
    if (start == std::string::npos || end == std::string::npos) break;
    std::string name = info.substr(start, end - start);
    if (size_t c = name.find(':'); c != std::string::npos) name = name.substr(c + 1);
    if (size_t dot = name.rfind('.'); dot != std::string::npos) name = name.substr(0, dot);
    if (("," + lanes + ",").find("," + name + ",") == std::string::npos)
      lanes += (lanes.empty() ? "" : ",") + name;
    pos = end;
  }
  return lanes.empty() ? "?" : lanes;
}

}  // namespace

PeerRoute UcxTransport::DescribePeer(int peer) {
  ucp_ep_h ep = nullptr;
  PeerRoute route;
  if (peer < 0 || peer >= static_cast<int>(impl_->peers.size()) || peer == impl_->rank ||
      !impl_->Endpoint(peer, &ep).ok())
    return route;
  route.lanes = EndpointLanes(ep);
  for (const char* tl : {"sysv", "posix", "cma", "xpmem", "knem"})
    route.shared_memory = route.shared_memory || route.lanes.find(tl) != std::string::npos;
  return route;
}

std::string UcxTransport::Describe() const {
  // Peers grouped by (lanes, how their failure is found): one clause per group.
  std::vector<std::pair<std::string, std::string>> groups;  // description, ranks
  for (const Impl::Peer& p : impl_->peers) {
    if (p.rank == impl_->rank) continue;
    std::string what = p.ep == nullptr ? "not connected" : "lanes " + EndpointLanes(p.ep);
    what += p.peer_errors   ? ", failure reported by UCX (peer-error mode)"
            : p.local_pid > 0 ? ", failure found by pid (same host)"
                              : ", failure found only by SIEVE_TIMEOUT";
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == what; });
    if (it == groups.end()) {
      groups.push_back({what, std::to_string(p.rank)});
    } else {
      it->second += "," + std::to_string(p.rank);
    }
  }
  std::string out = StrFormat("UCX %s (SIEVE_UCX_PEER_ERRORS=%s)", ucp_get_version_string(),
                              ParamText(impl_->peer_errors));
  for (const auto& g : groups) out += StrFormat("; rank(s) %s: %s", g.second.c_str(), g.first.c_str());
  return out;
}

}  // namespace sieve::transport
