// Membership exchanges over a (possibly failed) communicator's transport: the agreement on the
// failed ranks and the exchange that plans a shrink. Messages are small vectors of int32 in the
// membership tag space; every wait is bounded and never waits on a rank already known dead.
#include "comm/membership.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>

#include "comm/bootstrap_config.h"
#include "core/log.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/tag.h"

namespace sieve::membership {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int32_t kMagic = 0x53564d42;  // "SVMB"
enum Kind : uint32_t { kAgreeRound1 = 1, kAgreeRound2 = 2, kShrink = 3, kSplitChoice = 4,
                       kSplitRoot = 5 };
constexpr size_t kIdWords = 128 / sizeof(int32_t);

// The wait's timeout message (transport/wait.cc) names SIEVE_TIMEOUT; a failure notice carries
// its sender's message, so a rank failed by a stall, directly or through a notice, sees it here.
bool IsStall(const std::string& fatal_error) {
  return fatal_error.find("(SIEVE_TIMEOUT)") != std::string::npos;
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string RankList(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

// One exchange: at most one message to and one from each peer. What is still pending when it
// ends (sends to excluded ranks, receives from ranks found dead) is cancelled.
class Exchange {
 public:
  Exchange(Comm& comm, uint32_t epoch, Kind kind)
      : transport_(comm.transport()),
        me_(comm.rank()),
        index_(((epoch & 0xffffu) << 4) | kind),
        max_words_(2 * static_cast<size_t>(comm.size()) + kIdWords + 16),
        slots_(comm.size()) {
    for (auto& s : slots_) s = std::make_unique<Slot>();
  }
  ~Exchange() {
    std::vector<transport::Request*> pending;
    for (auto& s : slots_) {
      if (s->send.state == transport::Request::kPending) pending.push_back(&s->send);
      if (s->recv.state == transport::Request::kPending) pending.push_back(&s->recv);
    }
    if (!pending.empty()) transport_->Cancel(pending.data(), pending.size());
  }
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  void Send(int peer, const std::vector<int32_t>& body) {
    Slot& s = *slots_[peer];
    s.out = body;
    uint64_t tag = transport::MakeTag(me_, true, transport::kMembershipSeq, index_);
    Status st = transport_->Isend(peer, tag, s.out.data(), s.out.size() * sizeof(int32_t),
                                   transport::MemoryType::kHost, &s.send);
    if (!st.ok()) {
      s.send.state = transport::Request::kFailed;
      s.send.error = st.message();
    }
  }
  void Expect(int peer) {
    Slot& s = *slots_[peer];
    s.in.assign(max_words_, 0);
    uint64_t tag = transport::MakeTag(peer, true, transport::kMembershipSeq, index_);
    Status st = transport_->Irecv(peer, tag, s.in.data(), s.in.size() * sizeof(int32_t),
                                   transport::MemoryType::kHost, &s.recv);
    if (!st.ok()) {
      s.recv.state = transport::Request::kFailed;
      s.recv.error = st.message();
    }
  }
  bool Progress() { return transport_->Progress(); }
  void Idle() { transport_->WaitForEvents(0.001); }

  // The message from `peer` once it arrived whole; false while pending or when it failed.
  bool Received(int peer, std::vector<int32_t>* body) const {
    const Slot& s = *slots_[peer];
    if (s.recv.state != transport::Request::kDone) return false;
    size_t words = s.recv.received_bytes / sizeof(int32_t);
    body->assign(s.in.begin(), s.in.begin() + static_cast<long>(words));
    return true;
  }
  bool ReceiveFailed(int peer) const {
    return slots_[peer]->recv.state == transport::Request::kFailed;
  }
  bool SendPending(int peer) const {
    return slots_[peer]->send.state == transport::Request::kPending;
  }
  bool SendFailed(int peer) const { return slots_[peer]->send.state == transport::Request::kFailed; }
  std::string Failure(int peer) const {
    const Slot& s = *slots_[peer];
    std::string f = transport_->PeerFailure(peer);
    if (f.empty() && s.recv.state == transport::Request::kFailed) f = s.recv.error;
    if (f.empty() && s.send.state == transport::Request::kFailed) f = s.send.error;
    return f;
  }

 private:
  struct Slot {
    transport::Request send, recv;
    std::vector<int32_t> out, in;
  };
  transport::Transport* transport_;
  int me_;
  uint32_t index_;
  size_t max_words_;
  std::vector<std::unique_ptr<Slot>> slots_;  // per peer: requests keep stable addresses
};

bool Aborted(Comm& comm) {
  const std::atomic<bool>* abort = comm.WaitOptions().abort;
  return abort != nullptr && abort->load();
}

// Agreement message: magic, kind, stall (0/1), n, then n failed ranks.
std::vector<int32_t> EncodeAgree(Kind kind, bool stall, const std::vector<char>& dead) {
  std::vector<int32_t> body{kMagic, static_cast<int32_t>(kind), stall ? 1 : 0, 0};
  for (size_t r = 0; r < dead.size(); ++r)
    if (dead[r]) body.push_back(static_cast<int32_t>(r));
  body[3] = static_cast<int32_t>(body.size() - 4);
  return body;
}

Status DecodeAgree(const std::vector<int32_t>& body, Kind kind, int nranks, int from, bool* stall,
                   std::vector<int>* dead) {
  auto bad = [&](const char* what) {
    return Status::RemoteError(
        StrFormat("rank %d sent a malformed failed-rank agreement message (%s)", from, what));
  };
  if (body.size() < 4 || body[0] != kMagic || body[1] != static_cast<int32_t>(kind))
    return bad("header");
  if (body[3] < 0 || static_cast<size_t>(body[3]) != body.size() - 4) return bad("length");
  *stall = body[2] != 0;
  dead->clear();
  for (size_t i = 4; i < body.size(); ++i) {
    if (body[i] < 0 || body[i] >= nranks) return bad("rank out of range");
    dead->push_back(body[i]);
  }
  return Status::OK();
}

}  // namespace

std::vector<int> LocallyFailed(Comm& comm) {
  std::vector<int> failed;
  for (int p = 0; p < comm.size(); ++p)
    if (p != comm.rank() && !comm.transport()->PeerFailure(p).empty()) failed.push_back(p);
  return failed;
}

Status AgreeFailed(Comm& comm, double stall_grace_s, std::vector<int>* failed) {
  const int n = comm.size(), me = comm.rank();
  transport::Transport* t = comm.transport();
  const uint32_t epoch = comm.NextMembershipEpoch();
  std::vector<char> dead(n, 0);
  std::vector<std::string> why(n);  // how this rank learned that each rank failed
  for (int p : LocallyFailed(comm)) {
    dead[p] = 1;
    why[p] = t->PeerFailure(p);
  }
  bool stall = IsStall(comm.FatalError());
  for (Kind round : {kAgreeRound1, kAgreeRound2}) {
    Exchange ex(comm, epoch, round);
    const std::vector<int32_t> body = EncodeAgree(round, stall, dead);
    std::vector<char> expected(n, 0), merged(n, 0);
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      // Also to a rank others count failed: if it lives, it learns so.
      if (t->PeerFailure(p).empty()) ex.Send(p, body);
      if (!dead[p]) {
        expected[p] = 1;
        ex.Expect(p);
      }
    }
    auto last_heard = Clock::now();
    for (;;) {
      bool progressed = ex.Progress();
      std::vector<int> waiting;
      for (int p = 0; p < n; ++p) {
        if (!expected[p] || merged[p] || dead[p]) continue;
        std::vector<int32_t> msg;
        if (ex.Received(p, &msg)) {
          bool their_stall = false;
          std::vector<int> their_dead;
          SIEVE_RETURN_IF_ERROR(DecodeAgree(msg, round, n, p, &their_stall, &their_dead));
          merged[p] = 1;
          last_heard = Clock::now();
          stall = stall || their_stall;
          for (int d : their_dead) {
            if (dead[d]) continue;
            dead[d] = 1;
            why[d] = StrFormat("rank %d counts it failed", p);
          }
        } else if (std::string f = ex.Failure(p); !f.empty()) {
          dead[p] = 1;
          why[p] = f;
        } else {
          waiting.push_back(p);
        }
      }
      // Done once every rank still counted live was heard from and our message left for it.
      bool sends_out = true;
      for (int p = 0; p < n; ++p) sends_out = sends_out && (dead[p] || !ex.SendPending(p));
      if (waiting.empty() && sends_out) break;
      const double bound = stall ? stall_grace_s : comm.config().timeout_s;
      if (SecondsSince(last_heard) > bound) {
        for (int p : waiting) {
          dead[p] = 1;
          why[p] = StrFormat("silent for %.1f s in the agreement%s", bound,
                             stall ? " after a stall" : "");
        }
        break;
      }
      if (Aborted(comm)) return Status::RemoteError("communicator aborted during the agreement");
      if (!progressed) ex.Idle();
    }
  }
  if (dead[me])
    return Status::RemoteError(StrFormat(
        "the live ranks count this rank (%d) as failed (%s); it is not part of what they agree on",
        me, why[me].c_str()));
  failed->clear();
  for (int p = 0; p < n; ++p) {
    if (!dead[p]) continue;
    failed->push_back(p);
    SIEVE_INFO(kLogInit, "agreement: rank %d failed (%s)", p, why[p].c_str());
  }
  return Status::OK();
}

Status PlanShrink(Comm& parent, const std::vector<int>& exclude, ShrinkPlan* plan) {
  const int n = parent.size(), me = parent.rank();
  transport::Transport* t = parent.transport();
  std::vector<char> excluded(n, 0);
  for (int r : exclude) excluded[r] = 1;
  std::vector<int> keep;
  for (int r = 0; r < n; ++r)
    if (!excluded[r]) keep.push_back(r);
  const int leader = keep.front();
  const uint32_t epoch = parent.NextMembershipEpoch();

  // The lowest kept rank hosts the new bootstrap root; its id travels with its list (zeros
  // when its root could not start: everyone then fails naming it).
  char id[128] = {};
  Status root_status;
  if (me == leader)
    root_status = transport::StartBootstrapRoot(parent.config().socket_ifname,
                                                BootstrapTimeoutsOf(parent.config()), id);
  std::vector<int32_t> body{kMagic, static_cast<int32_t>(kShrink),
                            static_cast<int32_t>(exclude.size())};
  body.insert(body.end(), exclude.begin(), exclude.end());
  body.push_back(me == leader && root_status.ok() ? 1 : 0);
  int32_t id_words[kIdWords];
  std::memcpy(id_words, id, sizeof(id_words));
  body.insert(body.end(), id_words, id_words + kIdWords);

  Exchange ex(parent, epoch, kShrink);
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    if (!excluded[p]) {
      ex.Send(p, body);
      ex.Expect(p);
    } else if (t->PeerFailure(p).empty()) {
      ex.Send(p, body);  // best effort: a live excluded rank that calls shrink learns why
    }
  }
  std::vector<std::vector<int32_t>> got(n);
  auto last_heard = Clock::now();
  for (;;) {
    bool progressed = ex.Progress();
    std::vector<int> waiting;
    for (int p : keep) {
      if (p == me || !got[p].empty()) continue;
      if (ex.Received(p, &got[p])) {
        last_heard = Clock::now();
        continue;
      }
      if (std::string f = ex.Failure(p); !f.empty())
        return Status::RemoteError(StrFormat(
            "rank %d, which this shrink keeps, failed during it (%s); exclude it too", p,
            f.c_str()));
      waiting.push_back(p);
    }
    bool sends_out = true;
    for (int p : keep) sends_out = sends_out && !ex.SendPending(p);
    if (waiting.empty() && sends_out) break;
    if (SecondsSince(last_heard) > parent.config().timeout_s)
      return Status::RemoteError(StrFormat(
          "no shrink message for %.1f s (SIEVE_TIMEOUT) from ranks %s, which this rank's list "
          "keeps: they are frozen, have not called the shrink, or exclude this rank",
          parent.config().timeout_s, RankList(waiting).c_str()));
    if (Aborted(parent)) return Status::RemoteError("communicator aborted during the shrink");
    if (!progressed) ex.Idle();
  }

  // Every kept rank must have passed the same list.
  std::string disagreement;
  for (int p : keep) {
    if (p == me) continue;
    const std::vector<int32_t>& m = got[p];
    if (m.size() < 3 || m[0] != kMagic || m[1] != static_cast<int32_t>(kShrink) || m[2] < 0 ||
        m.size() != 3 + static_cast<size_t>(m[2]) + 1 + kIdWords)
      return Status::RemoteError(StrFormat("rank %d sent a malformed shrink message", p));
    std::vector<int> theirs(m.begin() + 3, m.begin() + 3 + m[2]);
    if (theirs == exclude) continue;
    bool excludes_me = std::find(theirs.begin(), theirs.end(), me) != theirs.end();
    disagreement += StrFormat("; rank %d excludes %s%s", p, RankList(theirs).c_str(),
                              excludes_me ? " (this rank among them)" : "");
  }
  if (!disagreement.empty())
    return Status::InvalidUsage(
        StrFormat("the ranks disagree on the exclude list: this rank (%d) excludes %s%s", me,
                  RankList(exclude).c_str(), disagreement.c_str()));
  if (me == leader) {
    SIEVE_RETURN_IF_ERROR(root_status.WithContext("starting the shrunk communicator's bootstrap root"));
  } else {
    const std::vector<int32_t>& m = got[leader];
    if (m[3 + m[2]] == 0)
      return Status::RemoteError(StrFormat(
          "rank %d, the lowest kept rank, could not start the new communicator's bootstrap root "
          "(see its log)",
          leader));
    std::memcpy(id, m.data() + 3 + m[2] + 1, sizeof(id));
  }
  plan->new_size = static_cast<int>(keep.size());
  plan->new_rank = static_cast<int>(std::find(keep.begin(), keep.end(), me) - keep.begin());
  std::memcpy(plan->id, id, sizeof(id));
  return Status::OK();
}

namespace {

// Progresses `ex` until a message arrived from each of `from` and every send is out; fails
// naming a rank that failed, or those silent for SIEVE_TIMEOUT.
Status ReceiveAll(Comm& comm, Exchange& ex, const std::vector<int>& from,
                  std::vector<std::vector<int32_t>>* got, const char* what) {
  auto last_heard = Clock::now();
  for (;;) {
    bool progressed = ex.Progress();
    std::vector<int> waiting;
    for (int p : from) {
      if (!(*got)[p].empty()) continue;
      if (ex.Received(p, &(*got)[p])) {
        last_heard = Clock::now();
        continue;
      }
      if (std::string f = ex.Failure(p); !f.empty())
        return Status::RemoteError(StrFormat("rank %d failed during the %s (%s)", p, what, f.c_str()));
      waiting.push_back(p);
    }
    bool sends_out = true;
    for (int p = 0; p < comm.size(); ++p) sends_out = sends_out && !ex.SendPending(p);
    if (waiting.empty() && sends_out) return Status::OK();
    if (SecondsSince(last_heard) > comm.config().timeout_s)
      return Status::RemoteError(StrFormat("no %s message for %.1f s (SIEVE_TIMEOUT) from ranks %s",
                                           what, comm.config().timeout_s,
                                           RankList(waiting).c_str()));
    if (Aborted(comm)) return Status::RemoteError(StrFormat("communicator aborted during the %s", what));
    if (!progressed) ex.Idle();
  }
}

}  // namespace

Status PlanSplit(Comm& parent, int color, int key, int nocolor, SplitPlan* plan) {
  const int n = parent.size(), me = parent.rank();
  const uint32_t epoch = parent.NextMembershipEpoch();
  std::vector<int> others;
  for (int p = 0; p < n; ++p)
    if (p != me) others.push_back(p);
  std::vector<int32_t> colors(n), keys(n);
  {
    Exchange ex(parent, epoch, kSplitChoice);
    for (int p : others) {
      ex.Send(p, {kMagic, static_cast<int32_t>(kSplitChoice), color, key});
      ex.Expect(p);
    }
    std::vector<std::vector<int32_t>> got(n);
    SIEVE_RETURN_IF_ERROR(ReceiveAll(parent, ex, others, &got, "split"));
    colors[me] = color;
    keys[me] = key;
    for (int p : others) {
      if (got[p].size() != 4 || got[p][0] != kMagic || got[p][1] != static_cast<int32_t>(kSplitChoice))
        return Status::RemoteError(StrFormat("rank %d sent a malformed split message", p));
      colors[p] = got[p][2];
      keys[p] = got[p][3];
    }
  }
  for (int r = 0; r < n; ++r)
    if (colors[r] < 0 && colors[r] != nocolor)
      return Status::InvalidArgument(StrFormat(
          "rank %d passed color %d; a color is >= 0 or SIEVE_SPLIT_NOCOLOR (%d)", r, colors[r],
          nocolor));
  if (color == nocolor) return Status::OK();
  std::vector<int> members;
  for (int r = 0; r < n; ++r)
    if (colors[r] == color) members.push_back(r);
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return keys[a] < keys[b]; });
  const int leader = members.front();
  char id[128] = {};
  Exchange ex(parent, epoch, kSplitRoot);
  if (me == leader) {
    Status root = transport::StartBootstrapRoot(parent.config().socket_ifname,
                                                BootstrapTimeoutsOf(parent.config()), id);
    std::vector<int32_t> body{kMagic, static_cast<int32_t>(kSplitRoot), root.ok() ? 1 : 0};
    int32_t words[kIdWords];
    std::memcpy(words, id, sizeof(words));
    body.insert(body.end(), words, words + kIdWords);
    for (int p : members)
      if (p != me) ex.Send(p, body);  // zeros when the root failed: its members fail too
    std::vector<std::vector<int32_t>> none(n);
    SIEVE_RETURN_IF_ERROR(ReceiveAll(parent, ex, {}, &none, "split"));
    SIEVE_RETURN_IF_ERROR(root.WithContext("starting the split communicator's bootstrap root"));
  } else {
    ex.Expect(leader);
    std::vector<std::vector<int32_t>> got(n);
    SIEVE_RETURN_IF_ERROR(ReceiveAll(parent, ex, {leader}, &got, "split"));
    const std::vector<int32_t>& m = got[leader];
    if (m.size() != 3 + kIdWords || m[0] != kMagic || m[1] != static_cast<int32_t>(kSplitRoot))
      return Status::RemoteError(StrFormat("rank %d sent a malformed split message", leader));
    if (m[2] == 0)
      return Status::RemoteError(StrFormat(
          "rank %d, the first member of this color, could not start the new communicator's "
          "bootstrap root (see its log)",
          leader));
    std::memcpy(id, m.data() + 3, sizeof(id));
  }
  plan->member = true;
  plan->new_size = static_cast<int>(members.size());
  plan->new_rank = static_cast<int>(std::find(members.begin(), members.end(), me) - members.begin());
  std::memcpy(plan->id, id, sizeof(id));
  return Status::OK();
}

Status JoinNew(const char id[128], int nranks, int rank, Config config, uint64_t parent_serial,
               std::unique_ptr<Comm>* out) {
  config.fault.clear();
  std::unique_ptr<Comm> comm;
  SIEVE_RETURN_IF_ERROR(Comm::Create(id, nranks, rank, config, &comm));
  comm->SetParentSerial(parent_serial);
  *out = std::move(comm);
  return Status::OK();
}

}  // namespace sieve::membership
