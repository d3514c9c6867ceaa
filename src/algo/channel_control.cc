// Agreement and mismatch detection for one collective (see op_header.h).
//
// Rule: a rank returns success for collective #s only when (1) its own data
// phase succeeded, (2) every peer's fingerprint equals its own, and (3) every
// peer sent an "ok" verdict — except peers whose connection or process is
// gone, which report nothing (unless a verdict or failure notice they sent
// before leaving is still queued: it is read first). A rank that fails sends "failed" to everyone,
// so a survivor still waiting for verdicts fails too. Hence a crash at any
// point leaves every survivor with the same verdict for #s; only a freeze or
// partition between a rank's verdict sends to different peers can split it.
#include <chrono>

#include "algo/channel.h"
#include "algo/channel_control.h"
#include "core/log.h"
#include "transport/tag.h"

namespace sieve::algo {

using transport::Request;

void Channel::StartControl(const OpControl& spec) {
  control_ = std::make_unique<Control>();
  Control& c = *control_;
  c.spec = spec;
  const int n = transport_->size();
  c.peer_fingerprint.resize(n);
  c.peer_verdict.resize(n);
  c.fingerprint_recv.assign(n, nullptr);
  c.verdict_recv.assign(n, nullptr);
  EncodeFingerprint(seq_, spec.fingerprint, c.fingerprint);
  // Failing to post is handled like a message that never comes: the waits
  // below name the peer (or a dead peer is waived).
  const std::vector<int> others = OtherRanks();
  for (int p : others) {
    c.requests.emplace_back();
    c.fingerprint_recv[p] = &c.requests.back();
    (void)transport_->Irecv(p, transport::MakeTag(p, false, seq_, transport::kFingerprintIndex),
                            c.peer_fingerprint[p].data(), kFingerprintBytes,
                            transport::MemoryType::kHost, c.fingerprint_recv[p]);
    if (!spec.agree) continue;
    c.requests.emplace_back();
    c.verdict_recv[p] = &c.requests.back();
    (void)transport_->Irecv(p, transport::MakeTag(p, false, seq_, transport::kVerdictIndex),
                            c.peer_verdict[p].data(), kVerdictBytes, transport::MemoryType::kHost,
                            c.verdict_recv[p]);
  }
  for (int p : others) {
    c.requests.emplace_back();
    c.sends.push_back(&c.requests.back());
    uint64_t tag = transport::MakeTag(transport_->rank(), false, seq_, transport::kFingerprintIndex);
    (void)transport_->Isend(p, tag, c.fingerprint, kFingerprintBytes, transport::MemoryType::kHost,
                            c.sends.back());
  }
}

std::vector<int> Channel::OtherRanks() const {
  std::vector<int> others;
  for (int i = 0; i < size(); ++i)
    if (i != rank()) others.push_back(Global(i));
  return others;
}

bool Channel::PeerGone(int peer) const { return !transport_->PeerFailure(peer).empty(); }

Status Channel::ControlFailures() {
  Control& c = *control_;
  std::string diffs;
  for (int p = 0; p < transport_->size(); ++p) {
    const Request* fr = c.fingerprint_recv[p];
    if (fr == nullptr || fr->state == Request::kPending) continue;
    uint32_t seq = 0;
    OpFingerprint theirs;
    bool decoded = fr->state == Request::kDone &&
                   DecodeFingerprint(c.peer_fingerprint[p].data(), fr->received_bytes, &seq,
                                     &theirs);
    if (fr->state == Request::kFailed && PeerGone(p)) continue;  // its data phase decides
    if (!decoded || seq != seq_) {
      diffs += StrFormat("%srank %d sent an unreadable fingerprint (%s)", diffs.empty() ? "" : "; ",
                         p, fr->state == Request::kFailed ? fr->error.c_str() : "bad header");
    } else if (theirs != c.spec.fingerprint) {
      diffs += (diffs.empty() ? "" : "; ") + FingerprintDiff(c.spec.fingerprint, theirs, p);
    }
  }
  if (!diffs.empty()) {
    if (c.spec.mismatch != nullptr) *c.spec.mismatch = true;
    return Status::InvalidUsage(StrFormat(
        "ranks called different collectives at this sequence number (this rank: %s): %s",
        DescribeFingerprint(c.spec.fingerprint).c_str(), diffs.c_str()));
  }
  for (int p = 0; p < transport_->size(); ++p) {
    const Request* vr = c.verdict_recv[p];
    if (vr == nullptr || vr->state != Request::kDone) continue;
    uint32_t seq = 0;
    bool ok = false;
    if (!DecodeVerdict(c.peer_verdict[p].data(), vr->received_bytes, &seq, &ok) || seq != seq_)
      return Status::RemoteError(StrFormat("rank %d sent an unreadable verdict", p));
    if (!ok) {
      // The failing rank's notice usually says why (it sends it right after
      // its verdict, so give it a moment); name it too.
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
      while (!transport_->FailureNotice().received && std::chrono::steady_clock::now() < until)
        transport_->Progress();
      transport::Transport::Notice notice = transport_->FailureNotice();
      return Status::RemoteError(StrFormat(
          "rank %d failed this operation, so no rank reports success for it%s%s", p,
          notice.received ? "; " : "", notice.received ? notice.text.c_str() : ""));
    }
  }
  return Status::OK();
}

Status Channel::WaitControl(bool verdicts) {
  Control& c = *control_;
  std::vector<Request*>& recvs = verdicts ? c.verdict_recv : c.fingerprint_recv;
  auto done = [&] {
    for (const Request* s : c.sends)
      if (s->state == Request::kPending && !PeerGone(s->peer)) return false;
    for (int p = 0; p < transport_->size(); ++p) {
      const Request* r = recvs[p];
      if (r != nullptr && r->state == Request::kPending && !PeerGone(p)) return false;
    }
    return true;
  };
  SIEVE_RETURN_IF_ERROR(transport::ProgressUntil(transport_, done, wait_).WithContext(name_));
  // The loop above stops without progressing once every peer it waits for is
  // gone, but a peer that failed and exited before we got here (we were slow,
  // e.g. starved of CPU) may have left its "failed" verdict queued for us.
  DrainFromGone(recvs);
  // A peer that failed at once (its receive failed, nothing arrived) and is
  // not gone could not confirm: the operation cannot be declared a success.
  for (int p = 0; p < transport_->size(); ++p) {
    const Request* r = recvs[p];
    if (r != nullptr && r->state == Request::kFailed && !PeerGone(p))
      return Status::RemoteError(StrFormat("%s: no %s from rank %d: %s", name_.c_str(),
                                           verdicts ? "verdict" : "fingerprint", p,
                                           r->error.c_str()));
  }
  SIEVE_RETURN_IF_ERROR(ControlFailures().WithContext(name_));
  // A failure notice covering this operation means its sender did not
  // succeed here (it may have left before its verdict reached us).
  if (NoticeCoversThis())
    return Status::RemoteError(transport_->FailureNotice().text).WithContext(name_);
  return Status::OK();
}

void Channel::DrainFromGone(const std::vector<Request*>& recvs) {
  auto pending_from_gone = [&] {
    for (int p = 0; p < transport_->size(); ++p)
      if (recvs[p] != nullptr && recvs[p]->state == Request::kPending && PeerGone(p)) return true;
    return false;
  };
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  while (pending_from_gone() && std::chrono::steady_clock::now() < until) transport_->Progress();
}

bool Channel::NoticeCoversThis() {
  transport::Transport::Notice notice = transport_->FailureNotice();
  return notice.received && static_cast<int32_t>(notice.first_failed_seq - seq_) <= 0;
}

void Channel::SendVerdict(bool ok) {
  Control& c = *control_;
  if (c.verdict_sent) return;
  c.verdict_sent = true;
  EncodeVerdict(seq_, ok, c.verdict);
  for (int p : OtherRanks()) {
    if (PeerGone(p)) continue;
    c.requests.emplace_back();
    c.sends.push_back(&c.requests.back());
    uint64_t tag = transport::MakeTag(transport_->rank(), false, seq_, transport::kVerdictIndex);
    (void)transport_->Isend(p, tag, c.verdict, kVerdictBytes, transport::MemoryType::kHost,
                            c.sends.back());
  }
}

bool Channel::Vouch() {
  if (!control_ || !control_->spec.agree || control_->verdict_sent) return false;
  for (const Request& req : requests_)
    if (req.state != Request::kDone || (req.is_recv && req.received_bytes != req.bytes))
      return false;
  for (const Request* fr : control_->fingerprint_recv)
    if (fr != nullptr && fr->state != Request::kDone) return false;
  if (!ControlFailures().ok() || NoticeCoversThis()) return false;
  SIEVE_TRACE(kLogNet, "%s: every message complete, verdict sent before the local work",
              name_.c_str());
  SendVerdict(true);
  return true;
}

Status Channel::AwaitFingerprints() {
  return control_ ? WaitControl(/*verdicts=*/false) : Status::OK();
}

Status Channel::Conclude(Status data) {
  if (!control_) return data;
  Control& c = *control_;
  if (!data.ok()) {
    // Vouch() promised this cannot happen; should it, the failure notice the
    // communicator sends still fails the peers' next call.
    if (c.verdict_sent)
      SIEVE_WARN("%s: failed after it said ok: %s", name_.c_str(), data.message().c_str());
    data = Failed(data);  // in case the error did not come through this channel
    // A size error is usually a mismatch, and so may be the failure another
    // rank reported (its notice can overtake a slow rank's fingerprint): give
    // the live peers' fingerprints a moment to arrive, and read those a gone
    // peer left queued, so the message names the field that differs.
    if (data.code() == Code::kInvalidUsage || NoticeCoversThis()) {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
      auto pending_from_live = [&] {
        for (int p = 0; p < transport_->size(); ++p)
          if (c.fingerprint_recv[p] != nullptr &&
              c.fingerprint_recv[p]->state == Request::kPending && !PeerGone(p))
            return true;
        return false;
      };
      while (std::chrono::steady_clock::now() < deadline && pending_from_live())
        transport_->Progress();
    }
    DrainFromGone(c.fingerprint_recv);
    Status mismatch = ControlFailures();
    SendVerdict(false);
    transport_->Progress();
    if (!mismatch.ok() && mismatch.code() == Code::kInvalidUsage)
      return mismatch.WithContext(name_);
    return data;
  }
  Status st = WaitControl(/*verdicts=*/false);
  if (c.spec.agree || !st.ok()) SendVerdict(st.ok());
  if (st.ok() && c.spec.agree) st = WaitControl(/*verdicts=*/true);
  if (!st.ok()) {
    SIEVE_INFO(kLogNet, "%s: data complete here, but %s", name_.c_str(), st.message().c_str());
    return st;
  }
  if (c.spec.completed_seq != nullptr &&
      static_cast<int32_t>(seq_ + 1 - *c.spec.completed_seq) > 0)
    *c.spec.completed_seq = seq_ + 1;
  return Status::OK();
}

}  // namespace sieve::algo
