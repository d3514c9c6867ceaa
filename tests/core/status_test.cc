// Tests of sieve::Status: codes, messages, ToString/WithContext, StrFormat and
// the two control-flow macros SIEVE_RETURN_IF_ERROR and SIEVE_ASSERT.
#include "core/status.h"

#include <gtest/gtest.h>

#include <string>

namespace sieve {
namespace {

TEST(StatusTest, DefaultAndOkAreOk) {
  Status def;
  EXPECT_TRUE(def.ok());
  EXPECT_EQ(def.code(), Code::kOk);
  EXPECT_TRUE(def.message().empty());
  EXPECT_EQ(def.ToString(), "ok");
  Status ok = Status::OK();
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.code(), Code::kOk);
  EXPECT_EQ(ok.ToString(), "ok");
}

TEST(StatusTest, CodesMatchSieveResultValues) {
  // The C boundary casts Code to sieveResult_t: the numbers must be NCCL's.
  EXPECT_EQ(static_cast<int>(Code::kOk), 0);
  EXPECT_EQ(static_cast<int>(Code::kCudaError), 1);
  EXPECT_EQ(static_cast<int>(Code::kSystemError), 2);
  EXPECT_EQ(static_cast<int>(Code::kInternalError), 3);
  EXPECT_EQ(static_cast<int>(Code::kInvalidArgument), 4);
  EXPECT_EQ(static_cast<int>(Code::kInvalidUsage), 5);
  EXPECT_EQ(static_cast<int>(Code::kRemoteError), 6);
  EXPECT_EQ(static_cast<int>(Code::kInProgress), 7);
}

TEST(StatusTest, FactoriesSetCodeAndMessage) {
  struct Case {
    Status status;
    Code code;
    const char* prefix;
  };
  const Case cases[] = {
      {Status::CudaError("m1"), Code::kCudaError, "cuda error"},
      {Status::SystemError("m2"), Code::kSystemError, "system error"},
      {Status::Internal("m3"), Code::kInternalError, "internal error"},
      {Status::InvalidArgument("m4"), Code::kInvalidArgument, "invalid argument"},
      {Status::InvalidUsage("m5"), Code::kInvalidUsage, "invalid usage"},
      {Status::RemoteError("m6"), Code::kRemoteError, "remote error"},
  };
  int i = 1;
  for (const Case& c : cases) {
    std::string msg = "m" + std::to_string(i++);
    EXPECT_FALSE(c.status.ok()) << msg;
    EXPECT_EQ(c.status.code(), c.code) << msg;
    EXPECT_EQ(c.status.message(), msg);
    EXPECT_EQ(c.status.ToString(), std::string(c.prefix) + ": " + msg);
  }
}

TEST(StatusTest, ToStringShowsCodeAndMessage) {
  Status s = Status::InvalidArgument("count overflows");
  EXPECT_EQ(s.ToString(), "invalid argument: count overflows");
}

TEST(StatusTest, WithContextPrependsAndKeepsCode) {
  Status s = Status::RemoteError("rank 2 did not answer");
  Status c = s.WithContext("allreduce #3");
  EXPECT_EQ(c.code(), Code::kRemoteError);
  EXPECT_EQ(c.message(), "allreduce #3: rank 2 did not answer");
  // The original is unchanged (WithContext returns a copy).
  EXPECT_EQ(s.message(), "rank 2 did not answer");
  Status cc = c.WithContext("sieveAllReduce");
  EXPECT_EQ(cc.message(), "sieveAllReduce: allreduce #3: rank 2 did not answer");
  EXPECT_EQ(cc.ToString(), "remote error: sieveAllReduce: allreduce #3: rank 2 did not answer");
}

TEST(StatusTest, WithContextOnOkStaysOk) {
  Status c = Status::OK().WithContext("ctx");
  EXPECT_TRUE(c.ok());
  EXPECT_TRUE(c.message().empty());
  EXPECT_EQ(c.ToString(), "ok");
}

TEST(StrFormatTest, FormatsLikePrintf) {
  EXPECT_EQ(StrFormat("rank %d of %d: %s", 3, 8, "late"), "rank 3 of 8: late");
  EXPECT_EQ(StrFormat("%zu bytes, %.2f s, 0x%x", static_cast<size_t>(65536), 2.5, 255u),
            "65536 bytes, 2.50 s, 0xff");
  EXPECT_EQ(StrFormat("%s", ""), "");
  EXPECT_EQ(StrFormat("100%%"), "100%");
}

TEST(StrFormatTest, LongStringsAreNotTruncated) {
  std::string big;
  for (int i = 0; i < 5000; ++i) big.push_back(static_cast<char>('a' + i % 26));
  std::string out = StrFormat("<%s>|%d", big.c_str(), 42);
  ASSERT_EQ(out.size(), big.size() + 5);
  EXPECT_EQ(out, "<" + big + ">|42");
  // Width padding alone past 1 KiB.
  std::string padded = StrFormat("%3000d", 7);
  ASSERT_EQ(padded.size(), 3000u);
  EXPECT_EQ(padded.back(), '7');
  EXPECT_EQ(padded.find_first_not_of(' '), 2999u);
}

TEST(StrFormatTest, ExactlyAtBufferLikeBoundaries) {
  for (size_t n : {255u, 256u, 1023u, 1024u, 1025u, 4096u}) {
    std::string s(n, 'x');
    s[n / 2] = 'y';
    EXPECT_EQ(StrFormat("%s", s.c_str()), s) << n;
  }
}

// Helpers for the macro tests: `reached` counts statements after the macro.
Status Propagate(const Status& inner, int* evaluated, int* reached) {
  SIEVE_RETURN_IF_ERROR((++*evaluated, inner));
  ++*reached;
  return Status::InvalidUsage("after");
}

TEST(StatusMacroTest, ReturnIfErrorPropagatesError) {
  int evaluated = 0, reached = 0;
  Status s = Propagate(Status::SystemError("socket closed"), &evaluated, &reached);
  EXPECT_EQ(s.code(), Code::kSystemError);
  EXPECT_EQ(s.message(), "socket closed");
  EXPECT_EQ(evaluated, 1);
  EXPECT_EQ(reached, 0);
}

TEST(StatusMacroTest, ReturnIfErrorContinuesOnOk) {
  int evaluated = 0, reached = 0;
  Status s = Propagate(Status::OK(), &evaluated, &reached);
  EXPECT_EQ(evaluated, 1);
  EXPECT_EQ(reached, 1);
  EXPECT_EQ(s.code(), Code::kInvalidUsage);
  EXPECT_EQ(s.message(), "after");
}

Status Checked(int x, int* reached) {
  SIEVE_ASSERT(x > 3 && x != 7);
  ++*reached;
  return Status::OK();
}

TEST(StatusMacroTest, AssertPassesWhenTrue) {
  int reached = 0;
  EXPECT_TRUE(Checked(5, &reached).ok());
  EXPECT_EQ(reached, 1);
}

TEST(StatusMacroTest, AssertReturnsInternalNamingCondition) {
  int reached = 0;
  for (int x : {2, 7}) {
    Status s = Checked(x, &reached);
    EXPECT_EQ(s.code(), Code::kInternalError) << x;
    EXPECT_NE(s.message().find("x > 3 && x != 7"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("assertion failed"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("status_test.cc"), std::string::npos) << s.message();
  }
  EXPECT_EQ(reached, 0);
}

}  // namespace
}  // namespace sieve
