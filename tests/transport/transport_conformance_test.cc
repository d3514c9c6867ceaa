// The matching semantics every transport of the factory keeps, checked on the
// UCX transport and the loopback transport alike (several ranks in this
// process, progressed from one thread): tags match whoever sent them, equal
// tags in send order, a shorter message completes a receive with its length,
// a longer one fails it, a cancelled receive leaves its message for the next,
// large (rendezvous) messages and both memory types arrive intact, streamed
// receives hand every byte to their sink once, failure
// notices reach every peer, a silent peer times out, and ranks that chose
// different transports fail to connect. Then what only the loopback can show
// in one process: a shut-down rank is a failed peer, and a cancelled
// rendezvous send is never read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "transport/factory.h"
#include "transport/loopback/loopback_transport.h"
#include "transport/tag.h"
#include "transport/wait.h"

namespace sieve::transport {
namespace {

// n connected transports of one kind in this process.
class Ranks {
 public:
  Ranks(TransportParam kind, int n) {
    TransportOptions options;
    options.kind = kind;
    std::vector<PeerAddress> addresses(n);
    t_.resize(n);
    for (int r = 0; r < n; ++r) {
      Status st = CreateTransport(options, r, n, &t_[r]);
      EXPECT_TRUE(st.ok()) << st.ToString();
      if (!st.ok()) return;
      addresses[r].address = t_[r]->LocalAddress();
      addresses[r].same_host = true;
      addresses[r].pid = static_cast<int>(getpid());
    }
    for (int r = 0; r < n; ++r) {
      Status st = t_[r]->SetPeers(addresses);
      EXPECT_TRUE(st.ok()) << st.ToString();
    }
  }
  Transport& operator[](int r) { return *t_[r]; }
  // Progresses every rank until done() (false after 10 s).
  bool Until(const std::function<bool()>& done) {
    const double deadline = MonotonicSeconds() + 10;
    while (!done()) {
      if (MonotonicSeconds() > deadline) return false;
      for (auto& t : t_) t->Progress();
    }
    return true;
  }
  void Settle(double seconds) {
    const double until = MonotonicSeconds() + seconds;
    while (MonotonicSeconds() < until)
      for (auto& t : t_) t->Progress();
  }

 private:
  std::vector<std::unique_ptr<Transport>> t_;
};

bool Finished(const Request& r) { return r.state != Request::kPending; }

std::vector<char> Pattern(size_t bytes, int salt) {
  std::vector<char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<char>(i * 131 + salt * 7 + (i >> 9));
  return v;
}

uint64_t Tag(int src, uint32_t index) { return MakeTag(src, false, 5, index); }

class ConformanceTest : public ::testing::TestWithParam<TransportParam> {};

TEST_P(ConformanceTest, TagsMatchWhoeverPostedFirst) {
  Ranks ranks(GetParam(), 2);
  std::vector<char> a = Pattern(64, 1), b = Pattern(64, 2), got_a(64), got_b(64);
  Request ra, rb, sa, sb;
  // Receives posted in the opposite order of the sends.
  ASSERT_TRUE(ranks[0].Irecv(1, Tag(1, 2), got_b.data(), 64, MemoryType::kHost, &rb).ok());
  ASSERT_TRUE(ranks[0].Irecv(1, Tag(1, 1), got_a.data(), 64, MemoryType::kHost, &ra).ok());
  ASSERT_TRUE(ranks[1].Isend(0, Tag(1, 1), a.data(), 64, MemoryType::kHost, &sa).ok());
  ASSERT_TRUE(ranks[1].Isend(0, Tag(1, 2), b.data(), 64, MemoryType::kHost, &sb).ok());
  ASSERT_TRUE(ranks.Until([&] { return Finished(ra) && Finished(rb) && Finished(sa) && Finished(sb); }));
  EXPECT_EQ(ra.state, Request::kDone);
  EXPECT_EQ(rb.state, Request::kDone);
  EXPECT_EQ(got_a, a);
  EXPECT_EQ(got_b, b);
  EXPECT_EQ(ra.received_bytes, 64u);
}

TEST_P(ConformanceTest, EqualTagsMatchInSendOrderPostedOrNot) {
  Ranks ranks(GetParam(), 3);
  // Rank 2 sends three messages with one tag before rank 0 posts anything.
  std::vector<std::vector<char>> sent = {Pattern(100, 1), Pattern(20000, 2), Pattern(7, 3)};
  std::vector<Request> sends(3), recvs(3);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(ranks[2].Isend(0, Tag(2, 9), sent[i].data(), sent[i].size(), MemoryType::kHost,
                               &sends[i]).ok());
  ranks.Settle(0.05);
  std::vector<std::vector<char>> got = {std::vector<char>(100), std::vector<char>(20000),
                                        std::vector<char>(7)};
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(ranks[0].Irecv(2, Tag(2, 9), got[i].data(), got[i].size(), MemoryType::kHost,
                               &recvs[i]).ok());
  ASSERT_TRUE(ranks.Until([&] {
    for (int i = 0; i < 3; ++i)
      if (!Finished(sends[i]) || !Finished(recvs[i])) return false;
    return true;
  }));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(recvs[i].state, Request::kDone) << i << ": " << recvs[i].error;
    EXPECT_EQ(got[i], sent[i]) << i;
  }
}

TEST_P(ConformanceTest, ShorterMessageCompletesWithItsLengthLongerFails) {
  Ranks ranks(GetParam(), 2);
  std::vector<char> small = Pattern(40, 1), big = Pattern(100, 2), buf1(100), buf2(40);
  Request r1, r2, s1, s2;
  ASSERT_TRUE(ranks[0].Irecv(1, Tag(1, 1), buf1.data(), 100, MemoryType::kHost, &r1).ok());
  ASSERT_TRUE(ranks[0].Irecv(1, Tag(1, 2), buf2.data(), 40, MemoryType::kHost, &r2).ok());
  ASSERT_TRUE(ranks[1].Isend(0, Tag(1, 1), small.data(), 40, MemoryType::kHost, &s1).ok());
  ASSERT_TRUE(ranks[1].Isend(0, Tag(1, 2), big.data(), 100, MemoryType::kHost, &s2).ok());
  ASSERT_TRUE(ranks.Until([&] { return Finished(r1) && Finished(r2) && Finished(s1) && Finished(s2); }));
  EXPECT_EQ(r1.state, Request::kDone);
  EXPECT_EQ(r1.received_bytes, 40u);
  EXPECT_EQ(0, std::memcmp(buf1.data(), small.data(), 40));
  EXPECT_EQ(r2.state, Request::kFailed);
  EXPECT_EQ(r2.error, "message longer than the posted receive");
  EXPECT_EQ(s2.state, Request::kDone);  // the sender does not learn of it
}

TEST_P(ConformanceTest, LargeMessagesOfBothMemoryTypesArriveIntact) {
  Ranks ranks(GetParam(), 2);
  for (size_t bytes : {size_t{1}, size_t{8192}, size_t{8193}, size_t{(1 << 20) + 3}}) {
    for (MemoryType type : {MemoryType::kHost, MemoryType::kDevice}) {
      // Host memory passed as device: UCX detects it (see ucx_transport.cc).
      std::vector<char> out = Pattern(bytes, 3), back = Pattern(bytes, 4), in(bytes), in2(bytes);
      Request r, s, r2, s2;
      ASSERT_TRUE(ranks[1].Irecv(0, Tag(0, 3), in.data(), bytes, type, &r).ok());
      ASSERT_TRUE(ranks[0].Isend(1, Tag(0, 3), out.data(), bytes, type, &s).ok());
      ASSERT_TRUE(ranks[1].Isend(0, Tag(1, 3), back.data(), bytes, type, &s2).ok());
      ASSERT_TRUE(ranks[0].Irecv(1, Tag(1, 3), in2.data(), bytes, type, &r2).ok());
      ASSERT_TRUE(ranks.Until([&] { return Finished(r) && Finished(s) && Finished(r2) && Finished(s2); }));
      EXPECT_EQ(r.state, Request::kDone) << bytes << " " << r.error;
      EXPECT_EQ(s.state, Request::kDone) << bytes << " " << s.error;
      EXPECT_TRUE(in == out) << bytes << " bytes, " << MemoryTypeName(type);
      EXPECT_TRUE(in2 == back) << bytes << " bytes, " << MemoryTypeName(type);
    }
  }
}

TEST_P(ConformanceTest, CancelledReceiveLeavesItsMessageForTheNext) {
  Ranks ranks(GetParam(), 2);
  std::vector<char> msg = Pattern(32, 5), first(32), second(32);
  Request r1, r2, s;
  ASSERT_TRUE(ranks[0].Irecv(1, Tag(1, 4), first.data(), 32, MemoryType::kHost, &r1).ok());
  Request* cancel[] = {&r1};
  ranks[0].Cancel(cancel, 1);
  EXPECT_EQ(r1.state, Request::kFailed);
  ASSERT_TRUE(ranks[1].Isend(0, Tag(1, 4), msg.data(), 32, MemoryType::kHost, &s).ok());
  ASSERT_TRUE(ranks[0].Irecv(1, Tag(1, 4), second.data(), 32, MemoryType::kHost, &r2).ok());
  ASSERT_TRUE(ranks.Until([&] { return Finished(r2) && Finished(s); }));
  EXPECT_EQ(r2.state, Request::kDone);
  EXPECT_EQ(second, msg);
  EXPECT_NE(first, msg);
}

TEST_P(ConformanceTest, FailureNoticeReachesEveryPeerEarliestKept) {
  Ranks ranks(GetParam(), 3);
  ranks[1].NotifyPeersOfFailure(9, "allreduce #9: boom");
  ranks[2].NotifyPeersOfFailure(7, "allreduce #7: earlier");
  ASSERT_TRUE(ranks.Until([&] {
    Transport::Notice n = ranks[0].FailureNotice();
    return n.received && n.first_failed_seq == 7;
  }));
  EXPECT_EQ(ranks[0].FailureNotice().text, "rank 2 failed allreduce #7: earlier");
  ASSERT_TRUE(ranks.Until([&] { return ranks[2].FailureNotice().received; }));
  EXPECT_EQ(ranks[2].FailureNotice().first_failed_seq, 9u);
  ASSERT_TRUE(ranks.Until([&] { return ranks[1].FailureNotice().received; }));
  EXPECT_EQ(ranks[1].FailureNotice().first_failed_seq, 7u);  // never its own
}

TEST_P(ConformanceTest, ASilentPeerTimesOutNamingWhatIsPending) {
  Ranks ranks(GetParam(), 2);
  std::vector<char> buf(16);
  Request r;
  ASSERT_TRUE(ranks[0].Irecv(1, Tag(1, 1), buf.data(), 16, MemoryType::kHost, &r).ok());
  WaitOptions wait;
  wait.timeout_s = 0.2;
  wait.describe_pending = [] { return std::string("rank 1 (receive)"); };
  const double start = MonotonicSeconds();
  Status st = ProgressUntil(&ranks[0], [&] { return Finished(r); }, wait);
  EXPECT_EQ(st.code(), Code::kRemoteError);
  EXPECT_NE(st.message().find("no progress for"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("rank 1 (receive)"), std::string::npos) << st.ToString();
  EXPECT_LT(MonotonicSeconds() - start, 5.0);
  Request* cancel[] = {&r};
  ranks[0].Cancel(cancel, 1);
}

// A streamed receive's sink that records every byte and how often it came.
class RecordingSink : public ByteSink {
 public:
  explicit RecordingSink(size_t bytes) : data(bytes), seen(bytes) {}
  void Consume(size_t offset, const void* piece, size_t bytes) override {
    ++pieces;
    if (offset > data.size() || bytes > data.size() - offset) {
      ++out_of_range;
      return;
    }
    std::memcpy(data.data() + offset, piece, bytes);
    for (size_t i = offset; i < offset + bytes; ++i) ++seen[i];
  }
  // Every byte of the first `bytes` exactly once, none after them.
  bool Once(size_t bytes) const {
    for (size_t i = 0; i < seen.size(); ++i)
      if (seen[i] != (i < bytes ? 1 : 0)) return false;
    return out_of_range == 0;
  }
  std::vector<char> data;
  std::vector<int> seen;
  int pieces = 0, out_of_range = 0;
};

TEST_P(ConformanceTest, StreamedReceivesSeeEveryByteOncePostedOrNot) {
  // Any size works; StreamsReceives only says where it saves a copy.
  Ranks ranks(GetParam(), 2);
  for (size_t bytes : {size_t{1}, size_t{8193}, size_t{(1 << 20) + 3}}) {
    for (bool posted_first : {true, false}) {
      std::vector<char> out = Pattern(bytes, 6);
      RecordingSink sink(bytes);
      Request r, s;
      if (posted_first) {
        ASSERT_TRUE(ranks[0].IrecvToSink(1, Tag(1, 6), &sink, bytes, &r).ok());
      }
      ASSERT_TRUE(ranks[1].Isend(0, Tag(1, 6), out.data(), bytes, MemoryType::kHost, &s).ok());
      if (!posted_first) {
        ranks.Settle(0.02);  // the message waits unexpected
        ASSERT_TRUE(ranks[0].IrecvToSink(1, Tag(1, 6), &sink, bytes, &r).ok());
      }
      ASSERT_TRUE(ranks.Until([&] { return Finished(r) && Finished(s); }));
      EXPECT_EQ(r.state, Request::kDone) << bytes << " " << r.error;
      EXPECT_EQ(r.received_bytes, bytes);
      EXPECT_TRUE(sink.Once(bytes)) << bytes << " bytes, posted first " << posted_first;
      EXPECT_TRUE(sink.data == out) << bytes << " bytes, posted first " << posted_first;
      if (bytes > (1 << 20)) {
        EXPECT_GT(sink.pieces, 1);  // streamed, not one copy
      }
    }
  }
}

TEST_P(ConformanceTest, StreamedReceiveOfAShorterMessageCompletesALongerOneFails) {
  Ranks ranks(GetParam(), 2);
  std::vector<char> small = Pattern(40000, 1), big = Pattern(100, 2);
  RecordingSink s1(100000), s2(40);
  Request r1, r2, send1, send2;
  ASSERT_TRUE(ranks[0].IrecvToSink(1, Tag(1, 7), &s1, 100000, &r1).ok());
  ASSERT_TRUE(ranks[0].IrecvToSink(1, Tag(1, 8), &s2, 40, &r2).ok());
  ASSERT_TRUE(ranks[1].Isend(0, Tag(1, 7), small.data(), 40000, MemoryType::kHost, &send1).ok());
  ASSERT_TRUE(ranks[1].Isend(0, Tag(1, 8), big.data(), 100, MemoryType::kHost, &send2).ok());
  ASSERT_TRUE(ranks.Until(
      [&] { return Finished(r1) && Finished(r2) && Finished(send1) && Finished(send2); }));
  EXPECT_EQ(r1.state, Request::kDone);
  EXPECT_EQ(r1.received_bytes, 40000u);
  EXPECT_TRUE(s1.Once(40000));
  EXPECT_EQ(0, std::memcmp(s1.data.data(), small.data(), 40000));
  EXPECT_EQ(r2.state, Request::kFailed);
  EXPECT_TRUE(r2.truncated);
  EXPECT_EQ(s2.out_of_range, 0);  // nothing past the posted length reached the sink
}

INSTANTIATE_TEST_SUITE_P(Transports, ConformanceTest,
                         ::testing::Values(TransportParam::kUcx, TransportParam::kLoopback),
                         [](const auto& info) { return std::string(ParamText(info.param)); });

TEST(TransportFactoryTest, RanksThatChoseDifferentTransportsFailToConnect) {
  TransportOptions ucx, loopback;
  loopback.kind = TransportParam::kLoopback;
  std::unique_ptr<Transport> a, b;
  ASSERT_TRUE(CreateTransport(ucx, 0, 2, &a).ok());
  ASSERT_TRUE(CreateTransport(loopback, 1, 2, &b).ok());
  std::vector<PeerAddress> peers(2);
  peers[0].address = a->LocalAddress();
  peers[1].address = b->LocalAddress();
  Status st = a->SetPeers(peers);
  EXPECT_EQ(st.code(), Code::kInvalidUsage);
  EXPECT_NE(st.message().find("rank 1 does not use the UCX transport"), std::string::npos)
      << st.ToString();
  st = b->SetPeers(peers);
  EXPECT_EQ(st.code(), Code::kInvalidUsage);
  EXPECT_NE(st.message().find("rank 0 does not use the loopback transport"), std::string::npos)
      << st.ToString();
}

TEST(TransportFactoryTest, BadFaultRulesAreErrorsAndGoodOnesWrapTheTransport) {
  TransportOptions options;
  std::unique_ptr<Transport> t;
  options.kind = TransportParam::kLoopback;
  options.fault = "do=sideways";
  EXPECT_EQ(CreateTransport(options, 0, 1, &t).code(), Code::kInvalidArgument);
  options.fault = "rank=0,on=send,do=fail";
  ASSERT_TRUE(CreateTransport(options, 0, 1, &t).ok());
  EXPECT_NE(t->Describe().find("SIEVE_FAULT active"), std::string::npos) << t->Describe();
}

TEST(LoopbackTest, OnlyRanksOfThisProcessJoin) {
  TransportOptions options;
  options.kind = TransportParam::kLoopback;
  std::unique_ptr<Transport> t;
  ASSERT_TRUE(CreateTransport(options, 0, 2, &t).ok());
  std::vector<PeerAddress> peers(2);
  peers[0].address = t->LocalAddress();
  peers[1].address = "loopback:" + std::to_string(getpid() + 1) + ":1";
  Status st = t->SetPeers(peers);
  EXPECT_EQ(st.code(), Code::kInvalidUsage);
  EXPECT_NE(st.message().find("threads of one process"), std::string::npos) << st.ToString();
}

TEST(LoopbackTest, AShutDownRankIsAFailedPeerWhoseEarlierMessagesStillArrive) {
  Ranks ranks(TransportParam::kLoopback, 3);
  std::vector<char> msg = Pattern(64, 8), got(64);
  Request s, r;
  ASSERT_TRUE(ranks[1].Isend(0, Tag(1, 1), msg.data(), 64, MemoryType::kHost, &s).ok());
  EXPECT_EQ(ranks[0].PeerFailure(1), "");
  ranks[1].Shutdown(0.5, /*force=*/true);
  EXPECT_EQ(ranks[0].PeerFailure(1), "its communicator was aborted");
  EXPECT_EQ(ranks[2].PeerFailure(1), "its communicator was aborted");
  ASSERT_TRUE(ranks[0].Irecv(1, Tag(1, 1), got.data(), 64, MemoryType::kHost, &r).ok());
  ASSERT_TRUE(ranks.Until([&] { return Finished(r); }));
  EXPECT_EQ(r.state, Request::kDone);
  EXPECT_EQ(got, msg);
  Request to_gone;
  Status st = ranks[2].Isend(1, Tag(2, 1), msg.data(), 64, MemoryType::kHost, &to_gone);
  EXPECT_EQ(st.code(), Code::kRemoteError);
  EXPECT_NE(st.message().find("rank 1 is unreachable: its communicator was aborted"),
            std::string::npos)
      << st.ToString();
  EXPECT_EQ(to_gone.state, Request::kFailed);
  ranks[2].Shutdown(0.5, /*force=*/false);
  EXPECT_EQ(ranks[0].PeerFailure(2), "its communicator was destroyed");
}

TEST(LoopbackTest, RendezvousSendCompletesWhenReadAndACancelledOneIsNeverRead) {
  Ranks ranks(TransportParam::kLoopback, 2);
  const size_t bytes = LoopbackTransport::kEagerBytes + 1;
  std::vector<char> first = Pattern(bytes, 1), second = Pattern(bytes, 2), got(bytes);
  Request s1, s2, r;
  ASSERT_TRUE(ranks[0].Isend(1, Tag(0, 6), first.data(), bytes, MemoryType::kHost, &s1).ok());
  ASSERT_TRUE(ranks[0].Isend(1, Tag(0, 6), second.data(), bytes, MemoryType::kHost, &s2).ok());
  ranks.Settle(0.02);
  EXPECT_EQ(s1.state, Request::kPending);  // nobody has read it yet
  Request* cancel[] = {&s1};
  ranks[0].Cancel(cancel, 1);
  EXPECT_EQ(s1.state, Request::kFailed);
  first.assign(bytes, 0);  // the caller may free it now; the receiver must not see it
  ASSERT_TRUE(ranks[1].Irecv(0, Tag(0, 6), got.data(), bytes, MemoryType::kHost, &r).ok());
  ASSERT_TRUE(ranks.Until([&] { return Finished(r) && Finished(s2); }));
  EXPECT_EQ(r.state, Request::kDone);
  EXPECT_EQ(s2.state, Request::kDone);
  EXPECT_TRUE(got == second);
}

}  // namespace
}  // namespace sieve::transport
