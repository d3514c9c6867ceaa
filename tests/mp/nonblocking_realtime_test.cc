// SIEVE_WORKER_REALTIME=1 puts a non-blocking communicator's background thread under SCHED_RR
// (where the process may: root, CAP_SYS_NICE or RLIMIT_RTPRIO; skipped otherwise); without it
// no thread of the process is real-time.
#include <gtest/gtest.h>

#include <dirent.h>
#include <pthread.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "support/mp_harness.h"

namespace sieve_test {
namespace {

// Threads of this process whose policy (field 41 of /proc/self/task/T/stat) is SCHED_RR.
int RealtimeThreads() {
  int count = 0;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::string path = std::string("/proc/self/task/") + e->d_name + "/stat";
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) continue;
    char buf[1024] = {};
    size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    std::string stat(buf, n);
    size_t pos = stat.rfind(')');  // the name may hold spaces; fields follow its ')'
    int field = 2;
    for (; pos != std::string::npos && field < 41; ++field) pos = stat.find(' ', pos + 1);
    if (pos != std::string::npos && std::atoi(stat.c_str() + pos + 1) == SCHED_RR) ++count;
  }
  closedir(dir);
  return count;
}

bool MayUseRealtime() {
  bool ok = false;
  std::thread([&] {
    sched_param p{};
    p.sched_priority = sched_get_priority_min(SCHED_RR);
    ok = pthread_setschedparam(pthread_self(), SCHED_RR, &p) == 0;
  }).join();
  return ok;
}

// Every rank counts its real-time threads once its non-blocking communicator exists.
void CheckRealtimeThreads(const char* realtime) {
  RankSpec spec;
  spec.nranks = 2;
  spec.kill_after_s = 60;
  spec.env = {{"SIEVE_TIMEOUT", "30"}, {"SIEVE_WORKER_REALTIME", realtime}};
  std::string failures = RunRanks(spec, [&](int rank, int nranks, const sieveUniqueId& id) {
    sieveComm_t comm = nullptr;
    sieveConfig_t config = SIEVE_CONFIG_INITIALIZER;
    config.blocking = 0;
    RANK_CHECK(sieveCommInitRankConfig(&comm, nranks, id, rank, &config) == sieveInProgress,
               "%s", sieveGetLastError(nullptr));
    sieveResult_t async = sieveInternalError;
    RANK_CHECK(sieveCommWaitAsyncError(comm, -1, &async) == sieveSuccess && async == sieveSuccess,
               "init: %s", sieveGetLastError(comm));
    int rt = RealtimeThreads();
    if (realtime[0] == '1') {
      RANK_CHECK(rt >= 1, "SIEVE_WORKER_REALTIME=1: %d real-time threads", rt);
    } else {
      RANK_CHECK(rt == 0, "default: %d real-time threads", rt);
    }
    RANK_CHECK(sieveCommDestroy(comm) == sieveSuccess, "destroy");
    return 0;
  });
  EXPECT_EQ(failures, "") << "SIEVE_WORKER_REALTIME=" << realtime;
}

TEST(NonBlockingTest, WorkerRealtimeRunsTheBackgroundThreadUnderSchedRr) {
  CheckRealtimeThreads("0");
  if (!MayUseRealtime()) GTEST_SKIP() << "this process may not use SCHED_RR";
  CheckRealtimeThreads("1");
}

}  // namespace
}  // namespace sieve_test
