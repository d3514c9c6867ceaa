// Fingerprint/verdict wire format, the table of collectives and the SIEVE_FAULT rule parser.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "algo/op_header.h"
#include "gpu/device_collectives.h"
#include "transport/fault_transport.h"

namespace sieve {
namespace {

algo::OpFingerprint RandomFingerprint(std::mt19937_64& rng) {
  algo::OpFingerprint fp;
  fp.kind = static_cast<algo::OpKind>(1 + rng() % 10);
  fp.dtype = static_cast<uint8_t>(rng() % 10);
  fp.op = static_cast<uint8_t>(rng() % 5);
  fp.algo = static_cast<algo::OpAlgo>(1 + rng() % 3);
  fp.root = static_cast<int32_t>(rng() % 1000) - 1;
  fp.count = rng();
  fp.segment_bytes = rng();
  fp.mode = rng();
  fp.segments = static_cast<uint32_t>(rng());
  fp.bitmaps = static_cast<algo::BitmapSource>(rng() % 4);
  fp.levels = static_cast<uint8_t>(rng() % 128);
  return fp;
}

TEST(OpHeaderTest, FingerprintRoundTripsAndNamesEveryDifferingField) {
  std::mt19937_64 rng(std::random_device{}());
  for (int i = 0; i < 200; ++i) {
    algo::OpFingerprint fp = RandomFingerprint(rng), back;
    uint32_t seq = static_cast<uint32_t>(rng()), seq_back = 0;
    uint8_t wire[algo::kFingerprintBytes];
    algo::EncodeFingerprint(seq, fp, wire);
    ASSERT_TRUE(algo::DecodeFingerprint(wire, sizeof(wire), &seq_back, &back));
    EXPECT_EQ(seq_back, seq);
    EXPECT_TRUE(back == fp);
    EXPECT_EQ(algo::FingerprintDiff(fp, back, 1), "");
  }
  algo::OpFingerprint a, b;
  a.count = 7;
  b.count = 8;
  b.root = 2;
  std::string diff = algo::FingerprintDiff(a, b, 3);
  EXPECT_NE(diff.find("count 7 here, 8 on rank 3"), std::string::npos) << diff;
  EXPECT_NE(diff.find("root -1 here, 2 on rank 3"), std::string::npos) << diff;
  EXPECT_EQ(diff.find("datatype"), std::string::npos) << diff;
}

// The ternary mode word keeps block_size exactly (up to the API's 2^34) and tells a
// block_size mismatch from a seed, step or mask one; a masked call's kept count and
// mask are named as such.
TEST(OpHeaderTest, TernaryAndMaskedModesAreNamedInTheUsersTerms) {
  algo::OpFingerprint a, b;
  a.kind = b.kind = algo::OpKind::kTernaryAllReduce;
  a.mode = algo::TernaryMode(7, 3, uint64_t{1} << 34);
  b.mode = algo::TernaryMode(7, 3, 256);
  std::string diff = algo::FingerprintDiff(a, b, 2);
  EXPECT_EQ(diff, "block_size 17179869184 here, 256 on rank 2");
  EXPECT_NE(algo::DescribeFingerprint(b).find("block_size 256"), std::string::npos);
  for (uint64_t step : {4u, 5u, 1000u}) {
    b.mode = algo::TernaryMode(7, step, uint64_t{1} << 34);
    diff = algo::FingerprintDiff(a, b, 1);
    EXPECT_EQ(diff.find("block_size"), std::string::npos) << diff;
    EXPECT_NE(diff.find("seed, step or mask"), std::string::npos) << step;
  }
  b.mode = algo::TernaryMode(8, 3, uint64_t{1} << 34);
  EXPECT_NE(algo::FingerprintDiff(a, b, 1).find("seed, step or mask"), std::string::npos);
  a.kind = b.kind = algo::OpKind::kMaskedAllReduce;
  a.mode = 10;
  b.mode = 12;
  EXPECT_EQ(algo::FingerprintDiff(a, b, 1), "mask (kept elements) 10 here, 12 on rank 1");
  // The same kept count, other elements: the mask's digest.
  a.mode = algo::MaskedMode(10, 0x1234567800000000ull);
  b.mode = algo::MaskedMode(10, 0x8765432100000000ull);
  EXPECT_EQ(algo::FingerprintDiff(a, b, 1),
            "mask (which elements it keeps: hash) 1234567800000000 here, 8765432100000000 on "
            "rank 1");
  // A masked ternary call's digest changes the hash bits only.
  a.kind = b.kind = algo::OpKind::kTernaryAllReduce;
  a.mode = algo::WithMaskDigest(algo::TernaryMode(7, 3, 256, 7), 1);
  b.mode = algo::WithMaskDigest(algo::TernaryMode(7, 3, 256, 7), 2);
  EXPECT_EQ(algo::FingerprintDiff(a, b, 1).find("block_size"), std::string::npos);
  EXPECT_EQ(algo::FingerprintDiff(a, b, 1).find("levels"), std::string::npos);
  EXPECT_NE(algo::FingerprintDiff(a, b, 1).find("seed, step or mask"), std::string::npos);
}

TEST(OpHeaderTest, SubnetFieldsTravelAndAreNamed) {
  algo::OpFingerprint a, b;
  a.kind = b.kind = algo::OpKind::kD2ftAllReduce;
  a.segments = 3;
  b.segments = 4;
  a.bitmaps = algo::BitmapSource::kGathered;
  b.bitmaps = algo::BitmapSource::kScheduleChecked;
  a.mode = 1;
  b.mode = 2;
  a.levels = 7;  // the quantized subnet calls' level count travels in its own byte
  b.levels = 3;
  uint8_t wire[algo::kFingerprintBytes];
  algo::EncodeFingerprint(9, b, wire);
  uint32_t seq = 0;
  algo::OpFingerprint back;
  ASSERT_TRUE(algo::DecodeFingerprint(wire, sizeof(wire), &seq, &back));
  EXPECT_TRUE(back == b);
  EXPECT_TRUE(back != a);
  std::string diff = algo::FingerprintDiff(a, back, 2);
  EXPECT_NE(diff.find("layout segments 3 here, 4 on rank 2"), std::string::npos) << diff;
  EXPECT_NE(diff.find("touched bitmaps here, schedule table, checked on rank 2"),
            std::string::npos)
      << diff;
  EXPECT_NE(diff.find("layout (hash)"), std::string::npos) << diff;
  EXPECT_NE(diff.find("levels (0: dense) 7 here, 3 on rank 2"), std::string::npos) << diff;
  EXPECT_EQ(diff.find("collective"), std::string::npos) << diff;
  b.kind = algo::OpKind::kSubnetAllReduce;
  diff = algo::FingerprintDiff(a, b, 1);
  EXPECT_NE(diff.find("collective d2ft allreduce here, subnet allreduce on rank 1"),
            std::string::npos)
      << diff;
  EXPECT_NE(algo::DescribeFingerprint(a).find("3 segments"), std::string::npos);
  EXPECT_NE(algo::DescribeFingerprint(a).find("levels 7"), std::string::npos);
  // A dense collective's fingerprint leaves the subnet fields zero on the wire.
  algo::EncodeFingerprint(1, algo::OpFingerprint(), wire);
  EXPECT_EQ(wire[6], 0);
  EXPECT_EQ(wire[7], 0);
  for (int i = 20; i < 24; ++i) EXPECT_EQ(wire[i], 0) << i;
}

TEST(OpHeaderTest, DecodersRejectWrongLengthMagicAndVersion) {
  uint8_t wire[algo::kFingerprintBytes];
  algo::EncodeFingerprint(5, algo::OpFingerprint(), wire);
  uint32_t seq;
  algo::OpFingerprint fp;
  EXPECT_FALSE(algo::DecodeFingerprint(wire, sizeof(wire) - 1, &seq, &fp));
  uint8_t bad[algo::kFingerprintBytes];
  for (int byte : {0, 4}) {  // magic, version
    std::memcpy(bad, wire, sizeof(bad));
    bad[byte] ^= 1;
    EXPECT_FALSE(algo::DecodeFingerprint(bad, sizeof(bad), &seq, &fp)) << "byte " << byte;
  }
  uint8_t v[algo::kVerdictBytes];
  bool ok = false;
  algo::EncodeVerdict(9, true, v);
  ASSERT_TRUE(algo::DecodeVerdict(v, sizeof(v), &seq, &ok));
  EXPECT_EQ(seq, 9u);
  EXPECT_TRUE(ok);
  algo::EncodeVerdict(10, false, v);
  ASSERT_TRUE(algo::DecodeVerdict(v, sizeof(v), &seq, &ok));
  EXPECT_FALSE(ok);
  v[8] = 7;  // neither ok nor failed
  EXPECT_FALSE(algo::DecodeVerdict(v, sizeof(v), &seq, &ok));
  EXPECT_FALSE(algo::DecodeVerdict(v, 3, &seq, &ok));
}

TEST(FaultRulesTest, ParsesRulesForThisRankOnly) {
  std::vector<transport::FaultRule> rules;
  ASSERT_TRUE(transport::ParseFaultRules(
                  "rank=2,on=recv,nth=3,do=truncate;on=send,min=4096,count=0,do=delay,ms=250;"
                  "rank=1,do=kill", 2, &rules)
                  .ok());
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].on, transport::FaultRule::kRecv);
  EXPECT_EQ(rules[0].action, transport::FaultRule::kTruncate);
  EXPECT_EQ(rules[0].nth, 3u);
  EXPECT_EQ(rules[1].action, transport::FaultRule::kDelay);
  EXPECT_EQ(rules[1].count, 0u);
  EXPECT_EQ(rules[1].min_bytes, 4096u);
  EXPECT_DOUBLE_EQ(rules[1].delay_s, 0.25);
}

TEST(FaultRulesTest, BadRulesAreErrorsNamingThem) {
  std::vector<transport::FaultRule> rules;
  for (const char* bad : {"do=explode", "on=sned", "nth=0", "rank=x", "peer", "ms=-1", "oops=1"}) {
    Status st = transport::ParseFaultRules(bad, 0, &rules);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("SIEVE_FAULT"), std::string::npos) << st.message();
  }
}

// core/collectives.def: the fingerprint bytes ranks compare and the names in messages
// stay what every released build sends and prints.
TEST(CollectiveTable, WireBytesAndNamesArePinned) {
  struct Row {
    algo::OpKind kind;
    int wire;
    const char* name;
  } rows[] = {{algo::OpKind::kAllReduce, 1, "allreduce"},
              {algo::OpKind::kBroadcast, 2, "broadcast"},
              {algo::OpKind::kReduce, 3, "reduce"},
              {algo::OpKind::kAllGather, 4, "allgather"},
              {algo::OpKind::kReduceScatter, 5, "reducescatter"},
              {algo::OpKind::kMaskedAllReduce, 6, "masked allreduce"},
              {algo::OpKind::kTernaryAllReduce, 7, "allreduce-ternary"},
              {algo::OpKind::kMaskUnion, 8, "mask union"},
              {algo::OpKind::kSubnetAllReduce, 9, "subnet allreduce"},
              {algo::OpKind::kD2ftAllReduce, 10, "d2ft allreduce"},
              {algo::OpKind::kQuantizedReduceScatter, 11, "reducescatter-quantized"},
              {algo::OpKind::kQuantizedAllGather, 12, "allgather-quantized"},
              {algo::OpKind::kTopkAllReduce, 13, "allreduce-topk"}};
  for (const Row& r : rows) {
    EXPECT_EQ(static_cast<int>(r.kind), r.wire) << r.name;
    EXPECT_STREQ(algo::OpKindName(r.kind), r.name);
  }
  EXPECT_STREQ(algo::OpKindName(static_cast<algo::OpKind>(0)), "unknown collective");
  EXPECT_STREQ(algo::OpKindName(static_cast<algo::OpKind>(14)), "unknown collective");
}

// The device kinds are the table's dense rows, named as the table names them.
TEST(CollectiveTable, DeviceKindsShareTheTableNames) {
  using gpu::CollKind;
  struct Row {
    CollKind device;
    algo::OpKind kind;
  } rows[] = {{CollKind::kAllReduce, algo::OpKind::kAllReduce},
              {CollKind::kBroadcast, algo::OpKind::kBroadcast},
              {CollKind::kReduce, algo::OpKind::kReduce},
              {CollKind::kAllGather, algo::OpKind::kAllGather},
              {CollKind::kReduceScatter, algo::OpKind::kReduceScatter},
              {CollKind::kAllReduceWhole, algo::OpKind::kAllReduce},
              {CollKind::kReduceScatterWhole, algo::OpKind::kReduceScatter},
              {CollKind::kAllGatherWhole, algo::OpKind::kAllGather}};
  for (const Row& r : rows) EXPECT_STREQ(gpu::CollKindName(r.device), algo::OpKindName(r.kind));
}

}  // namespace
}  // namespace sieve
