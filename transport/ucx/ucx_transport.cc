// UCX tag send/recv with the three outcomes of a posted operation handled
// explicitly: completed inline, in flight (callback later), or failed.
#include "transport/ucx/ucx_transport.h"

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/log.h"

namespace sieve::transport {

namespace {

// Per-operation completion record, passed to UCX as user_data. It outlives a
// cancelled-but-unfinished request (owner is then cleared), and it is valid
// even when UCX runs the callback before the posting call returns.
struct Slot {
  Request* owner;
  uint64_t* completions;
  void* ucx_request;
};

void Finish(void* request, ucs_status_t status, size_t received, void* user_data) {
  auto* slot = static_cast<Slot*>(user_data);
  if (slot->completions != nullptr) ++*slot->completions;
  if (Request* req = slot->owner) {
    req->impl = nullptr;
    req->received_bytes = received;
    if (status == UCS_OK) {
      req->state = Request::kDone;
    } else {
      req->state = Request::kFailed;
      req->error = status == UCS_ERR_MESSAGE_TRUNCATED
                       ? "message longer than the posted receive"
                       : ucs_status_string(status);
    }
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

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct UcxTransport::Impl {
  struct Peer {
    Impl* impl = nullptr;
    int rank = -1;
    std::string address;
    ucp_ep_h ep = nullptr;
    std::string failure;
  };

  int rank = 0;
  int size = 0;
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::string local_address;
  std::vector<Peer> peers;
  uint64_t completions = 0;

  // Marks req pending with a fresh slot; returns the slot to pass as user_data.
  Slot* Begin(Request* req) {
    req->state = Request::kPending;
    auto* slot = new Slot{req, &completions, nullptr};
    return slot;
  }
  // After posting: UCX returned r (pending, or already completed by callback).
  void Track(void* r, Slot* slot, Request* req) {
    if (req->state != Request::kPending) return;  // callback already ran
    slot->ucx_request = r;
    req->impl = slot;
  }

  Status Endpoint(int peer, ucp_ep_h* out);
  void CloseEndpoints(double deadline);
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
  Peer& p = peers[peer];
  if (!p.failure.empty())
    return Status::RemoteError(StrFormat("rank %d is unreachable: %s", peer, p.failure.c_str()));
  if (p.ep == nullptr) {
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = reinterpret_cast<const ucp_address_t*>(p.address.data());
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
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
    while (ucp_request_check_status(req) == UCS_INPROGRESS && Now() < deadline)
      ucp_worker_progress(worker);
    if (ucp_request_check_status(req) != UCS_INPROGRESS) ucp_request_free(req);
  }
}

UcxTransport::UcxTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Status UcxTransport::Create(int rank, int size, std::unique_ptr<UcxTransport>* out) {
  auto impl = std::make_unique<Impl>();
  impl->rank = rank;
  impl->size = size;
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK)
    return Status::SystemError(StrFormat("ucp_config_read: %s", ucs_status_string(st)));
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG;
  params.mt_workers_shared = 0;
  st = ucp_init(&params, config, &impl->context);
  ucp_config_release(config);
  if (st != UCS_OK) return Status::SystemError(StrFormat("ucp_init: %s", ucs_status_string(st)));
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
  impl->local_address.assign(reinterpret_cast<const char*>(addr), addr_len);
  ucp_worker_release_address(impl->worker, addr);
  out->reset(new UcxTransport(std::move(impl)));
  return Status::OK();
}

UcxTransport::~UcxTransport() {
  Shutdown(2.0);
  if (impl_->worker != nullptr) ucp_worker_destroy(impl_->worker);
  if (impl_->context != nullptr) ucp_cleanup(impl_->context);
}

void UcxTransport::Shutdown(double timeout_s) {
  if (impl_->worker == nullptr || impl_->peers.empty()) return;
  double deadline = Now() + timeout_s;
  // Flush first so peers still waiting for our last acknowledgements get them.
  ucp_request_param_t param{};
  void* flush = ucp_worker_flush_nbx(impl_->worker, &param);
  if (flush != nullptr && !UCS_PTR_IS_ERR(flush)) {
    while (ucp_request_check_status(flush) == UCS_INPROGRESS && Now() < deadline)
      ucp_worker_progress(impl_->worker);
    if (ucp_request_check_status(flush) != UCS_INPROGRESS) ucp_request_free(flush);
  }
  impl_->CloseEndpoints(deadline);
  impl_->peers.clear();
}

const std::string& UcxTransport::LocalAddress() const { return impl_->local_address; }

Status UcxTransport::SetPeerAddresses(std::vector<std::string> addresses) {
  if (static_cast<int>(addresses.size()) != impl_->size)
    return Status::Internal("address table size differs from the communicator size");
  impl_->peers.resize(addresses.size());
  for (size_t i = 0; i < addresses.size(); ++i) {
    impl_->peers[i].impl = impl_.get();
    impl_->peers[i].rank = static_cast<int>(i);
    impl_->peers[i].address = std::move(addresses[i]);
  }
  return Status::OK();
}

int UcxTransport::rank() const { return impl_->rank; }
int UcxTransport::size() const { return impl_->size; }

Status UcxTransport::Isend(int peer, uint64_t tag, const void* buf, size_t bytes, Request* req) {
  ucp_ep_h ep = nullptr;
  SIEVE_RETURN_IF_ERROR(impl_->Endpoint(peer, &ep));
  *req = Request();
  req->peer = peer;
  req->tag = tag;
  req->bytes = bytes;
  Slot* slot = impl_->Begin(req);
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  param.cb.send = SendDone;
  param.user_data = slot;
  param.memory_type = UCS_MEMORY_TYPE_HOST;
  void* r = ucp_tag_send_nbx(ep, buf, bytes, tag, &param);
  if (r == nullptr) {  // completed inline: no callback will come
    delete slot;
    req->state = Request::kDone;
    ++impl_->completions;
  } else if (UCS_PTR_IS_ERR(r)) {
    delete slot;
    req->state = Request::kFailed;
    req->error = ucs_status_string(UCS_PTR_STATUS(r));
    return Status::RemoteError(
        StrFormat("send to rank %d failed: %s", peer, req->error.c_str()));
  } else {
    impl_->Track(r, slot, req);
  }
  return Status::OK();
}

Status UcxTransport::Irecv(int peer, uint64_t tag, void* buf, size_t bytes, Request* req) {
  *req = Request();
  req->is_recv = true;
  req->peer = peer;
  req->tag = tag;
  req->bytes = bytes;
  Slot* slot = impl_->Begin(req);
  ucp_request_param_t param{};
  // No inline completion: UCX 1.13 does not report the matched length then,
  // and the length is how a size mismatch between ranks is caught. The
  // callback may run before ucp_tag_recv_nbx returns; the slot handles that.
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_MEMORY_TYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = RecvDone;
  param.user_data = slot;
  param.memory_type = UCS_MEMORY_TYPE_HOST;
  void* r = ucp_tag_recv_nbx(impl_->worker, buf, bytes, tag, ~uint64_t{0}, &param);
  if (r == nullptr) {
    delete slot;
    return Status::Internal("ucp_tag_recv_nbx completed inline despite NO_IMM_CMPL");
  } else if (UCS_PTR_IS_ERR(r)) {
    delete slot;
    req->state = Request::kFailed;
    req->error = ucs_status_string(UCS_PTR_STATUS(r));
    return Status::SystemError(
        StrFormat("receive from rank %d failed: %s", peer, req->error.c_str()));
  } else {
    impl_->Track(r, slot, req);
  }
  return Status::OK();
}

bool UcxTransport::Progress() { return ucp_worker_progress(impl_->worker) != 0; }

void UcxTransport::Cancel(Request* req) {
  if (req->state != Request::kPending || req->impl == nullptr) return;
  auto* slot = static_cast<Slot*>(req->impl);
  ucp_request_cancel(impl_->worker, slot->ucx_request);
  double deadline = Now() + 0.5;
  while (req->state == Request::kPending && Now() < deadline) ucp_worker_progress(impl_->worker);
  if (req->state == Request::kPending) {
    // UCX still owns it (e.g. a send it cannot cancel): detach so its late
    // completion frees the slot without touching `req`.
    slot->owner = nullptr;
    slot->completions = nullptr;
    req->impl = nullptr;
    req->state = Request::kFailed;
    req->error = "cancelled";
  }
}

uint64_t UcxTransport::completions() const { return impl_->completions; }

std::string UcxTransport::PeerFailure(int peer) const {
  if (peer < 0 || peer >= static_cast<int>(impl_->peers.size())) return "";
  return impl_->peers[peer].failure;
}

std::string UcxTransport::Describe() const {
  // ucp_ep_print_info names the transport of each lane; keep the distinct names.
  std::string lanes;
  for (const Impl::Peer& p : impl_->peers) {
    if (p.ep == nullptr || p.rank == impl_->rank) continue;
    char* text = nullptr;
    size_t len = 0;
    FILE* mem = open_memstream(&text, &len);
    if (mem == nullptr) break;
    ucp_ep_print_info(p.ep, mem);
    std::fclose(mem);
    std::string info(text, len);
    std::free(text);
    size_t pos = 0;
    while ((pos = info.find("lane[", pos)) != std::string::npos) {
      size_t colon = info.find(':', pos);
      size_t end = info.find_first_of(" \n", colon + 2);
      if (colon == std::string::npos || end == std::string::npos) break;
      std::string name = info.substr(colon + 2, end - colon - 2);
      if (lanes.find(name) == std::string::npos) lanes += (lanes.empty() ? "" : ",") + name;
      pos = end;
    }
    break;  // one peer is representative for the INFO line
  }
  return StrFormat("UCX %s, lanes %s", ucp_get_version_string(),
                   lanes.empty() ? "(not connected yet)" : lanes.c_str());
}

}  // namespace sieve::transport
