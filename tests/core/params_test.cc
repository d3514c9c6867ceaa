// Tests of the parameter registry (LoadConfig/DefaultConfig/DumpConfig) and of
// ReadLaunchEnv, against a cleared and restored environment.
#include "core/params.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "support/scoped_env.h"

extern char** environ;

namespace sieve {
namespace {

using ::sieve::testing::ScopedEnvSet;

// Every SIEVE_* name in the registry, in registry order.
std::vector<std::string> RegistryNames() {
  return {
#define SIEVE_PARAM(field, type, kind, env, def, values, doc) env,
#include "core/params.def"
#undef SIEVE_PARAM
  };
}

bool HasPrefix(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string LineOf(const std::string& dump, const std::string& name);

// Clears every variable these tests read, for the test's duration.
class ParamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::string> names = RegistryNames();
    for (const char* n : {"SIEVE_RANK", "SIEVE_NRANKS", "SIEVE_UNIQUE_ID", "RANK", "WORLD_SIZE",
                          "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK",
                          "OMPI_COMM_WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}) {
      names.push_back(n);
    }
    for (char** e = environ; *e != nullptr; ++e) {
      std::string entry(*e);
      std::string name = entry.substr(0, entry.find('='));
      if (HasPrefix(name, "SIEVE_") || HasPrefix(name, "OMPI_") || HasPrefix(name, "SLURM_"))
        names.push_back(name);
    }
    for (const std::string& n : names) env_.Clear(n);
  }
  void Set(const char* name, const char* value) { env_.Set(name, value); }

  // Loads the config expecting InvalidArgument naming `var`; returns the message.
  std::string ExpectBad(const char* var, const char* value) {
    ScopedEnvSet local;
    local.Set(var, value);
    Config c;
    Status s = LoadConfig(&c);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << var << "=" << value << ": " << s.ToString();
    EXPECT_NE(s.message().find(var), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(value), std::string::npos) << s.message();
    return s.message();
  }

  ScopedEnvSet env_;
};

void ExpectSameConfig(const Config& a, const Config& b) {
#define SIEVE_PARAM(field, type, kind, env, def, values, doc) \
  EXPECT_EQ(a.field, b.field) << env;
#include "core/params.def"
#undef SIEVE_PARAM
}

TEST_F(ParamsTest, DefaultsMatchRegistry) {
  Config d = DefaultConfig();
  EXPECT_EQ(d.debug, LogLevel::kWarn);
  EXPECT_EQ(d.debug_subsys, "ALL");
  EXPECT_EQ(d.debug_file, "");
  EXPECT_DOUBLE_EQ(d.timeout_s, 60.0);
  EXPECT_EQ(d.algo, AlgoParam::kAuto);
  EXPECT_EQ(d.tree_threshold, 64u * 1024u);
  EXPECT_EQ(d.segment_bytes, 512u * 1024u);
  EXPECT_EQ(d.socket_ifname, "");
  EXPECT_FALSE(d.param_dump);
}

TEST_F(ParamsTest, LoadWithEmptyEnvironmentEqualsDefaults) {
  Config c;
  c.timeout_s = 123;  // must be overwritten
  c.algo = AlgoParam::kTree;  // must be overwritten too
  ASSERT_TRUE(LoadConfig(&c).ok());
  ExpectSameConfig(c, DefaultConfig());
}

TEST_F(ParamsTest, EmptyValueMeansDefault) {
  Set("SIEVE_TIMEOUT", "");
  Set("SIEVE_ALGO", "");
  Config c;
  ASSERT_TRUE(LoadConfig(&c).ok());
  ExpectSameConfig(c, DefaultConfig());
}

TEST_F(ParamsTest, ParsesSeconds) {
  Set("SIEVE_TIMEOUT", "2.5");
  Config c;
  ASSERT_TRUE(LoadConfig(&c).ok());
  EXPECT_DOUBLE_EQ(c.timeout_s, 2.5);
}

TEST_F(ParamsTest, ParsesBytesWithSuffixes) {
  struct Case {
    const char* text;
    size_t value;
  } cases[] = {{"64k", size_t{64} << 10}, {"1m", size_t{1} << 20},  {"3g", size_t{3} << 30},
               {"4K", size_t{4} << 10},   {"2M", size_t{2} << 20},  {"12345", 12345},
               {"1G", size_t{1} << 30}};
  for (const Case& k : cases) {
    ScopedEnvSet local;
    local.Set("SIEVE_SEGMENT_BYTES", k.text);
    Config c;
    ASSERT_TRUE(LoadConfig(&c).ok()) << k.text;
    EXPECT_EQ(c.segment_bytes, k.value) << k.text;
    EXPECT_EQ(c.tree_threshold, DefaultConfig().tree_threshold);
  }
}

TEST_F(ParamsTest, ParsesEnumCaseInsensitively) {
  for (const char* text : {"ring", "RING", "Ring", "rInG"}) {
    ScopedEnvSet local;
    local.Set("SIEVE_ALGO", text);
    Config c;
    ASSERT_TRUE(LoadConfig(&c).ok()) << text;
    EXPECT_EQ(c.algo, AlgoParam::kRing) << text;
  }
  Set("SIEVE_ALGO", "tree");
  Set("SIEVE_DEBUG", "info");
  Config c;
  ASSERT_TRUE(LoadConfig(&c).ok());
  EXPECT_EQ(c.algo, AlgoParam::kTree);
  EXPECT_EQ(c.debug, LogLevel::kInfo);
}

TEST_F(ParamsTest, ParsesBoolAndString) {
  Set("SIEVE_PARAM_DUMP", "1");
  Set("SIEVE_DEBUG_SUBSYS", "INIT,NET");
  Set("SIEVE_SOCKET_IFNAME", "^docker,lo");
  Config c;
  ASSERT_TRUE(LoadConfig(&c).ok());
  EXPECT_TRUE(c.param_dump);
  EXPECT_EQ(c.debug_subsys, "INIT,NET");
  EXPECT_EQ(c.socket_ifname, "^docker,lo");
}

TEST_F(ParamsTest, BadSecondsNameTheVariable) {
  ExpectBad("SIEVE_TIMEOUT", "abc");
  ExpectBad("SIEVE_TIMEOUT", "-1");
  ExpectBad("SIEVE_TIMEOUT", "0");
  ExpectBad("SIEVE_TIMEOUT", "5s");
}

TEST_F(ParamsTest, BadBytesNameTheVariable) {
  ExpectBad("SIEVE_SEGMENT_BYTES", "12q");
  ExpectBad("SIEVE_SEGMENT_BYTES", "-5");
  ExpectBad("SIEVE_SEGMENT_BYTES", "99999999999g");
  ExpectBad("SIEVE_SEGMENT_BYTES", "k");
  ExpectBad("SIEVE_TREE_THRESHOLD", "64kb");
}

TEST_F(ParamsTest, NegativeBytesWithLeadingSpaceFail) {
  // strtoull skips white space and negates "-5": the result must still be rejected.
  ExpectBad("SIEVE_SEGMENT_BYTES", " -5");
}

TEST_F(ParamsTest, BadEnumListsAcceptedValues) {
  std::string msg = ExpectBad("SIEVE_ALGO", "fast");
  for (const char* v : {"AUTO", "RING", "TREE", "FLAT", "HIER"})
    EXPECT_NE(msg.find(v), std::string::npos) << msg;
  ExpectBad("SIEVE_DEBUG", "verbose");
  // A prefix of an accepted value is not accepted.
  ExpectBad("SIEVE_ALGO", "rin");
}

// Every listed value of every enum parameter lands on the enumerator of that name
// (the mapping is by position: a reordered enum or list fails here).
TEST_F(ParamsTest, EnumValuesMapToTheirEnumerators) {
  struct Case {
    const char* var;
    const char* text;
    std::function<bool(const Config&)> holds;
  } cases[] = {
      {"SIEVE_DEBUG", "NONE", [](const Config& c) { return c.debug == LogLevel::kNone; }},
      {"SIEVE_DEBUG", "WARN", [](const Config& c) { return c.debug == LogLevel::kWarn; }},
      {"SIEVE_DEBUG", "INFO", [](const Config& c) { return c.debug == LogLevel::kInfo; }},
      {"SIEVE_DEBUG", "TRACE", [](const Config& c) { return c.debug == LogLevel::kTrace; }},
      {"SIEVE_ALGO", "AUTO", [](const Config& c) { return c.algo == AlgoParam::kAuto; }},
      {"SIEVE_ALGO", "FLAT", [](const Config& c) { return c.algo == AlgoParam::kFlat; }},
      {"SIEVE_ALGO", "HIER", [](const Config& c) { return c.algo == AlgoParam::kHier; }},
      {"SIEVE_ALGO", "RING", [](const Config& c) { return c.algo == AlgoParam::kRing; }},
      {"SIEVE_ALGO", "TREE", [](const Config& c) { return c.algo == AlgoParam::kTree; }},
      {"SIEVE_BIND", "AUTO", [](const Config& c) { return c.bind == BindParam::kAuto; }},
      {"SIEVE_BIND", "NONE", [](const Config& c) { return c.bind == BindParam::kNone; }},
      {"SIEVE_UCX_PEER_ERRORS", "AUTO",
       [](const Config& c) { return c.ucx_peer_errors == PeerErrorsParam::kAuto; }},
      {"SIEVE_UCX_PEER_ERRORS", "PEER",
       [](const Config& c) { return c.ucx_peer_errors == PeerErrorsParam::kPeer; }},
      {"SIEVE_UCX_PEER_ERRORS", "NONE",
       [](const Config& c) { return c.ucx_peer_errors == PeerErrorsParam::kNone; }},
      {"SIEVE_NCCL_MODE", "dense", [](const Config& c) { return c.nccl_mode == NcclMode::kDense; }},
      {"SIEVE_NCCL_MODE", "auto-mask",
       [](const Config& c) { return c.nccl_mode == NcclMode::kAutoMask; }},
      {"SIEVE_NCCL_MODE", "TERNARY",
       [](const Config& c) { return c.nccl_mode == NcclMode::kTernary; }},
      {"SIEVE_NCCL_MODE", "Auto-Mask+Ternary",
       [](const Config& c) { return c.nccl_mode == NcclMode::kAutoMaskTernary; }},
      {"SIEVE_NCCL_MODE", "auto", [](const Config& c) { return c.nccl_mode == NcclMode::kAuto; }},
      {"SIEVE_NCCL_MODE", "q7", [](const Config& c) { return c.nccl_mode == NcclMode::kQ7; }},
      {"SIEVE_NCCL_MODE", "RS-Ternary+AG8",
       [](const Config& c) { return c.nccl_mode == NcclMode::kRsTernaryAg8; }},
      {"SIEVE_GPU_DIRECT", "AUTO",
       [](const Config& c) { return c.gpu_direct == GpuDirectParam::kAuto; }},
      {"SIEVE_GPU_DIRECT", "0",
       [](const Config& c) { return c.gpu_direct == GpuDirectParam::kOff; }},
      {"SIEVE_GPU_DIRECT", "force",
       [](const Config& c) { return c.gpu_direct == GpuDirectParam::kForce; }},
      {"SIEVE_CPU_ISA", "AUTO", [](const Config& c) { return c.cpu_isa == CpuIsaParam::kAuto; }},
      {"SIEVE_CPU_ISA", "avx512",
       [](const Config& c) { return c.cpu_isa == CpuIsaParam::kAvx512; }},
      {"SIEVE_CPU_ISA", "Avx2", [](const Config& c) { return c.cpu_isa == CpuIsaParam::kAvx2; }},
      {"SIEVE_CPU_ISA", "portable",
       [](const Config& c) { return c.cpu_isa == CpuIsaParam::kPortable; }},
  };
  for (const Case& k : cases) {
    ScopedEnvSet local;
    local.Set(k.var, k.text);
    Config c;
    ASSERT_TRUE(LoadConfig(&c).ok()) << k.var << "=" << k.text;
    EXPECT_TRUE(k.holds(c)) << k.var << "=" << k.text;
  }
}

// ParamText gives the value as the registry lists it, whatever case the user wrote.
TEST_F(ParamsTest, ParamTextSpellsTheListedValue) {
  Set("SIEVE_NCCL_MODE", "AUTO-MASK+TERNARY");
  Set("SIEVE_ALGO", "hier");
  Set("SIEVE_GPU_DIRECT", "0");
  Config c;
  ASSERT_TRUE(LoadConfig(&c).ok());
  EXPECT_STREQ(ParamText(c.nccl_mode), "auto-mask+ternary");
  EXPECT_STREQ(ParamText(c.algo), "HIER");
  EXPECT_STREQ(ParamText(c.gpu_direct), "0");
  EXPECT_STREQ(ParamText(c.debug), "WARN");
  EXPECT_STREQ(ParamText(NcclMode::kDense), "dense");
  EXPECT_NE(LineOf(DumpConfig(c), "SIEVE_NCCL_MODE").find("auto-mask+ternary (set)"),
            std::string::npos);
}

TEST_F(ParamsTest, EveryBadEnumNamesTheVariableAndItsValues) {
  struct Case {
    const char* var;
    const char* bad;
    std::vector<const char*> values;
  } cases[] = {{"SIEVE_DEBUG", "verbose", {"NONE", "WARN", "INFO", "TRACE"}},
               {"SIEVE_BIND", "numa", {"AUTO", "NONE"}},
               {"SIEVE_UCX_PEER_ERRORS", "all", {"AUTO", "PEER", "NONE"}},
               {"SIEVE_NCCL_MODE", "automatic",
                {"dense", "auto-mask", "ternary", "auto-mask+ternary", "auto"}},
               {"SIEVE_NCCL_MODE", "mask+ternary", {"auto-mask+ternary"}},
               {"SIEVE_GPU_DIRECT", "1", {"AUTO", "0", "FORCE"}}};
  for (const Case& k : cases) {
    std::string msg = ExpectBad(k.var, k.bad);
    for (const char* v : k.values) EXPECT_NE(msg.find(v), std::string::npos) << msg;
  }
}

// A seed is a number, not a size: no k/m/g suffix, no sign; every 64-bit value.
TEST_F(ParamsTest, TernarySeedIsADecimalInteger) {
  for (const char* bad : {"4k", "1m", "-1", " 7", "0x10", "1.5", "18446744073709551616"})
    ExpectBad("SIEVE_TERNARY_SEED", bad);
  struct Case {
    const char* text;
    uint64_t value;
  } cases[] = {{"0", 0}, {"4096", 4096}, {"18446744073709551615", ~uint64_t{0}}};
  for (const Case& k : cases) {
    ScopedEnvSet local;
    local.Set("SIEVE_TERNARY_SEED", k.text);
    Config c;
    ASSERT_TRUE(LoadConfig(&c).ok()) << k.text;
    EXPECT_EQ(c.ternary_seed, k.value) << k.text;
  }
  EXPECT_EQ(DefaultConfig().ternary_seed, 1u);
}

TEST_F(ParamsTest, BadBoolNamesTheVariable) {
  ExpectBad("SIEVE_PARAM_DUMP", "2");
  ExpectBad("SIEVE_PARAM_DUMP", "yes");
}

TEST_F(ParamsTest, FailedLoadLeavesOutputUntouched) {
  Set("SIEVE_TIMEOUT", "7");
  Set("SIEVE_ALGO", "fast");
  Config c;
  c.timeout_s = 42;
  EXPECT_FALSE(LoadConfig(&c).ok());
  EXPECT_DOUBLE_EQ(c.timeout_s, 42);
}

// The line of `dump` that starts with "NAME ".
std::string LineOf(const std::string& dump, const std::string& name) {
  size_t at = 0;
  while (at < dump.size()) {
    size_t end = dump.find('\n', at);
    std::string line = dump.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (HasPrefix(line, (name + " ").c_str())) return line;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return "";
}

TEST_F(ParamsTest, DumpNamesEveryParameterAndMarksSetOnes) {
  std::vector<std::string> names = RegistryNames();
  ASSERT_GE(names.size(), 9u);
  Set("SIEVE_TIMEOUT", "5");
  Set("SIEVE_ALGO", "tree");
  Config c;
  ASSERT_TRUE(LoadConfig(&c).ok());
  std::string dump = DumpConfig(c);
  for (const std::string& n : names) {
    std::string line = LineOf(dump, n);
    ASSERT_FALSE(line.empty()) << n << " missing from:\n" << dump;
    bool set = n == "SIEVE_TIMEOUT" || n == "SIEVE_ALGO";
    EXPECT_EQ(line.find("(set)") != std::string::npos, set) << line;
    EXPECT_EQ(line.find("(default") != std::string::npos, !set) << line;
  }
  EXPECT_NE(LineOf(dump, "SIEVE_TIMEOUT").find("5"), std::string::npos);
  EXPECT_NE(LineOf(dump, "SIEVE_ALGO").find("TREE"), std::string::npos);
  EXPECT_NE(LineOf(dump, "SIEVE_SEGMENT_BYTES").find("524288"), std::string::npos);
  // Defaults only: nothing is marked as set.
  EXPECT_EQ(DumpConfig(DefaultConfig()).find("(set)"), std::string::npos);
}

TEST_F(ParamsTest, DumpHidesTheBootstrapSecret) {
  Set("SIEVE_BOOTSTRAP_SECRET", "hunter2-correct-horse");
  Set("SIEVE_BOOTSTRAP_HANDSHAKE_TIMEOUT", "2.5");
  Config c;
  ASSERT_TRUE(LoadConfig(&c).ok());
  EXPECT_EQ(c.bootstrap_secret, "hunter2-correct-horse");
  EXPECT_EQ(c.bootstrap_handshake_s, 2.5);
  std::string dump = DumpConfig(c);
  EXPECT_EQ(dump.find("hunter2"), std::string::npos) << dump;
  EXPECT_NE(LineOf(dump, "SIEVE_BOOTSTRAP_SECRET").find("<hidden>"), std::string::npos);
  ExpectBad("SIEVE_BOOTSTRAP_HANDSHAKE_TIMEOUT", "0");
}

TEST_F(ParamsTest, LaunchEnvSieveRun) {
  std::string id(256, 'a');
  Set("SIEVE_RANK", "1");
  Set("SIEVE_NRANKS", "4");
  Set("SIEVE_UNIQUE_ID", id.c_str());
  LaunchEnv e;
  ASSERT_TRUE(ReadLaunchEnv(&e).ok());
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.nranks, 4);
  EXPECT_EQ(e.unique_id_hex, id);
  EXPECT_NE(e.source.find("SIEVE_RANK"), std::string::npos) << e.source;
}

TEST_F(ParamsTest, LaunchEnvTorchrun) {
  Set("RANK", "2");
  Set("WORLD_SIZE", "3");
  Set("MASTER_ADDR", "10.1.2.3");
  Set("MASTER_PORT", "29500");
  LaunchEnv e;
  ASSERT_TRUE(ReadLaunchEnv(&e).ok());
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.nranks, 3);
  EXPECT_EQ(e.master_addr, "10.1.2.3");
  EXPECT_EQ(e.master_port, 29500);
  EXPECT_TRUE(e.unique_id_hex.empty());
  EXPECT_NE(e.source.find("RANK"), std::string::npos) << e.source;
}

TEST_F(ParamsTest, LaunchEnvOpenMpi) {
  Set("OMPI_COMM_WORLD_RANK", "5");
  Set("OMPI_COMM_WORLD_SIZE", "6");
  Set("MASTER_ADDR", "node7");
  Set("MASTER_PORT", "1234");
  LaunchEnv e;
  ASSERT_TRUE(ReadLaunchEnv(&e).ok());
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.nranks, 6);
  EXPECT_EQ(e.master_addr, "node7");
  EXPECT_EQ(e.master_port, 1234);
  EXPECT_NE(e.source.find("OMPI"), std::string::npos) << e.source;
}

TEST_F(ParamsTest, LaunchEnvSieveRunWinsOverTorchrun) {
  Set("SIEVE_RANK", "0");
  Set("SIEVE_NRANKS", "2");
  Set("SIEVE_UNIQUE_ID", "ff");
  Set("RANK", "1");
  Set("WORLD_SIZE", "9");
  LaunchEnv e;
  ASSERT_TRUE(ReadLaunchEnv(&e).ok());
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.nranks, 2);
}

TEST_F(ParamsTest, LaunchEnvMissingIsInvalidUsage) {
  LaunchEnv e;
  e.rank = 77;
  Status s = ReadLaunchEnv(&e);
  EXPECT_EQ(s.code(), Code::kInvalidUsage) << s.ToString();
  EXPECT_FALSE(s.message().empty());
  EXPECT_EQ(e.rank, 77);  // untouched on failure
}

TEST_F(ParamsTest, LaunchEnvWithoutAddressIsInvalidUsage) {
  Set("RANK", "0");
  Set("WORLD_SIZE", "2");
  LaunchEnv e;
  Status s = ReadLaunchEnv(&e);
  EXPECT_EQ(s.code(), Code::kInvalidUsage) << s.ToString();
  Set("MASTER_ADDR", "host");
  s = ReadLaunchEnv(&e);
  EXPECT_EQ(s.code(), Code::kInvalidUsage) << s.ToString();
  EXPECT_NE(s.message().find("MASTER_PORT"), std::string::npos) << s.message();
}

TEST_F(ParamsTest, LaunchEnvRankNotBelowSize) {
  for (const char* rank : {"3", "4"}) {
    ScopedEnvSet local;
    local.Set("RANK", rank);
    local.Set("WORLD_SIZE", "3");
    local.Set("MASTER_ADDR", "h");
    local.Set("MASTER_PORT", "80");
    LaunchEnv e;
    Status s = ReadLaunchEnv(&e);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << rank << ": " << s.ToString();
    EXPECT_NE(s.message().find("RANK"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("WORLD_SIZE"), std::string::npos) << s.message();
  }
}

TEST_F(ParamsTest, LaunchEnvBadNumbers) {
  struct Case {
    const char* var;
    const char* value;
  } cases[] = {{"SIEVE_RANK", "-1"}, {"SIEVE_RANK", "x"},   {"SIEVE_NRANKS", "0"},
               {"SIEVE_NRANKS", "2.5"}, {"SIEVE_RANK", ""}};
  for (const Case& k : cases) {
    ScopedEnvSet local;
    local.Set("SIEVE_RANK", "0");
    local.Set("SIEVE_NRANKS", "2");
    local.Set("SIEVE_UNIQUE_ID", "00");
    local.Set(k.var, k.value);
    LaunchEnv e;
    Status s = ReadLaunchEnv(&e);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << k.var << "=" << k.value << ": "
                                                << s.ToString();
  }
}

TEST_F(ParamsTest, LaunchEnvBadPort) {
  for (const char* port : {"0", "65536", "70000", "http", "-80", "12ab"}) {
    ScopedEnvSet local;
    local.Set("RANK", "0");
    local.Set("WORLD_SIZE", "2");
    local.Set("MASTER_ADDR", "h");
    local.Set("MASTER_PORT", port);
    LaunchEnv e;
    Status s = ReadLaunchEnv(&e);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << port << ": " << s.ToString();
    EXPECT_NE(s.message().find("MASTER_PORT"), std::string::npos) << s.message();
  }
  Set("RANK", "0");
  Set("WORLD_SIZE", "2");
  Set("MASTER_ADDR", "h");
  Set("MASTER_PORT", "65535");
  LaunchEnv e;
  ASSERT_TRUE(ReadLaunchEnv(&e).ok());
  EXPECT_EQ(e.master_port, 65535);
}

// ---- Launchers through ParseLaunchEnv (a map instead of the environment).

using Vars = std::map<std::string, std::string>;

Status Parse(const Vars& vars, LaunchEnv* e) {
  return ParseLaunchEnv(
      [&](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      e);
}

// Parsing must fail with `code` and a message naming every variable in `names`.
void ExpectError(const Vars& vars, Code code, std::vector<std::string> names) {
  LaunchEnv e;
  e.rank = 42;
  Status s = Parse(vars, &e);
  EXPECT_EQ(s.code(), code) << s.ToString();
  for (const std::string& n : names)
    EXPECT_NE(s.message().find(n), std::string::npos) << n << ": " << s.message();
  EXPECT_EQ(e.rank, 42);  // untouched on failure
}

TEST(LaunchEnvParse, TorchrunWithLocalRank) {
  LaunchEnv e;
  ASSERT_TRUE(Parse({{"RANK", "5"},
                     {"WORLD_SIZE", "8"},
                     {"LOCAL_RANK", "1"},
                     {"LOCAL_WORLD_SIZE", "4"},
                     {"MASTER_ADDR", "n0"},
                     {"MASTER_PORT", "29500"}},
                    &e)
                  .ok());
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.nranks, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_addr, "n0");
  EXPECT_EQ(e.master_port, 29500);
  EXPECT_NE(e.source.find("torchrun"), std::string::npos) << e.source;
}

TEST(LaunchEnvParse, OpenMpiWithLocalRank) {
  LaunchEnv e;
  ASSERT_TRUE(Parse({{"OMPI_COMM_WORLD_RANK", "3"},
                     {"OMPI_COMM_WORLD_SIZE", "4"},
                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                     {"SIEVE_COMM_ID", "10.0.0.1:4000"}},
                    &e)
                  .ok());
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_addr, "10.0.0.1");
  EXPECT_EQ(e.master_port, 4000);
  EXPECT_NE(e.source.find("Open MPI"), std::string::npos) << e.source;
}

TEST(LaunchEnvParse, Slurm) {
  LaunchEnv e;
  ASSERT_TRUE(Parse({{"SLURM_PROCID", "6"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_LOCALID", "2"},
                     {"SLURM_NTASKS_PER_NODE", "4"},
                     {"MASTER_ADDR", "node1"},
                     {"MASTER_PORT", "29400"}},
                    &e)
                  .ok());
  EXPECT_EQ(e.rank, 6);
  EXPECT_EQ(e.nranks, 8);
  EXPECT_EQ(e.local_rank, 2);
  EXPECT_EQ(e.master_addr, "node1");
  EXPECT_NE(e.source.find("Slurm"), std::string::npos) << e.source;
  // Slurm's "2(x3)" task counts are not a contradiction.
  ASSERT_TRUE(Parse({{"SLURM_PROCID", "6"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_LOCALID", "2"},
                     {"SLURM_NTASKS_PER_NODE", "4(x2)"},
                     {"SIEVE_COMM_ID", "[fe80::1]:7"}},
                    &e)
                  .ok());
  EXPECT_EQ(e.master_addr, "fe80::1");
  EXPECT_EQ(e.master_port, 7);
}

// torchrun's own store holds MASTER_PORT: Sieve's rendezvous goes elsewhere.
TEST(LaunchEnvParse, CommIdWinsOverMasterAddr) {
  LaunchEnv e;
  ASSERT_TRUE(Parse({{"RANK", "0"},
                     {"WORLD_SIZE", "2"},
                     {"MASTER_ADDR", "a"},
                     {"MASTER_PORT", "29500"},
                     {"SIEVE_COMM_ID", "b:29501"}},
                    &e)
                  .ok());
  EXPECT_EQ(e.master_addr, "b");
  EXPECT_EQ(e.master_port, 29501);
}

TEST(LaunchEnvParse, InnermostLauncherWins) {
  LaunchEnv e;
  // torchrun started by srun: every worker inherits SLURM_PROCID of its srun task.
  ASSERT_TRUE(Parse({{"RANK", "3"},
                     {"WORLD_SIZE", "4"},
                     {"SLURM_PROCID", "1"},
                     {"SLURM_NTASKS", "2"},
                     {"MASTER_ADDR", "a"},
                     {"MASTER_PORT", "1"}},
                    &e)
                  .ok());
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.nranks, 4);
  // mpirun inside an sbatch script.
  ASSERT_TRUE(Parse({{"OMPI_COMM_WORLD_RANK", "2"},
                     {"OMPI_COMM_WORLD_SIZE", "3"},
                     {"SLURM_PROCID", "0"},
                     {"SLURM_NTASKS", "1"},
                     {"SIEVE_COMM_ID", "h:9"}},
                    &e)
                  .ok());
  EXPECT_EQ(e.rank, 2);
}

TEST(LaunchEnvParse, MissingVariablesAreNamed) {
  ExpectError({{"SLURM_PROCID", "0"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}},
              Code::kInvalidUsage, {"SLURM_PROCID", "SLURM_NTASKS"});
  ExpectError({{"SLURM_NTASKS", "2"}}, Code::kInvalidUsage, {"SLURM_PROCID", "SLURM_NTASKS"});
  ExpectError({{"WORLD_SIZE", "2"}}, Code::kInvalidUsage, {"RANK", "WORLD_SIZE"});
  ExpectError({{"OMPI_COMM_WORLD_RANK", "0"}}, Code::kInvalidUsage,
              {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"});
  // No rendezvous.
  ExpectError({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}, Code::kInvalidUsage,
              {"Slurm", "MASTER_ADDR", "MASTER_PORT", "SIEVE_COMM_ID"});
  ExpectError({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "80"}}, Code::kInvalidUsage,
              {"MASTER_ADDR"});
  ExpectError({}, Code::kInvalidUsage, {"SLURM_PROCID", "OMPI_COMM_WORLD", "RANK"});
}

TEST(LaunchEnvParse, ContradictoryVariablesAreNamed) {
  ExpectError({{"RANK", "3"},
               {"WORLD_SIZE", "4"},
               {"LOCAL_RANK", "2"},
               {"LOCAL_WORLD_SIZE", "2"},
               {"MASTER_ADDR", "a"},
               {"MASTER_PORT", "1"}},
              Code::kInvalidArgument, {"LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2"});
  ExpectError({{"SLURM_PROCID", "0"},
               {"SLURM_NTASKS", "4"},
               {"SLURM_LOCALID", "1"},
               {"MASTER_ADDR", "a"},
               {"MASTER_PORT", "1"}},
              Code::kInvalidArgument, {"SLURM_LOCALID=1", "SLURM_PROCID=0"});
  ExpectError(
      {{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"SIEVE_COMM_ID", "h:1"}},
      Code::kInvalidArgument, {"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=4"});
  for (const char* bad : {"nohost", ":80", "h:0", "h:port", "h:70000"})
    ExpectError({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"SIEVE_COMM_ID", bad}},
                Code::kInvalidArgument, {"SIEVE_COMM_ID"});
}

}  // namespace
}  // namespace sieve
