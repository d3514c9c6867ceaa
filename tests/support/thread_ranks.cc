// RunThreadRanks: one unique id, one thread per rank, a hang guard.
#include "support/thread_ranks.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "support/scoped_env.h"

namespace sieve_test {

std::string RunThreadRanks(const RankSpec& spec, const RankFn& fn) {
  if (!spec.absent.empty() || spec.setup) return "RunThreadRanks: absent ranks and setup unsupported";
  std::vector<std::unique_ptr<sieve::testing::ScopedEnv>> env;
  env.push_back(std::make_unique<sieve::testing::ScopedEnv>("SIEVE_TRANSPORT", "LOOPBACK"));
  for (const auto& kv : spec.env)
    env.push_back(std::make_unique<sieve::testing::ScopedEnv>(kv.first, kv.second.c_str()));
  sieveUniqueId id;
  if (sieveGetUniqueId(&id) != sieveSuccess)
    return std::string("sieveGetUniqueId: ") + sieveGetLastError(nullptr);

  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  std::vector<int> rc(spec.nranks, -1);
  std::vector<std::thread> threads;
  for (int r = 0; r < spec.nranks; ++r) {
    threads.emplace_back([&, r] {
      int code = fn(r, spec.nranks, id);
      std::lock_guard<std::mutex> lock(mu);
      rc[r] = code;
      ++finished;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    const auto limit = std::chrono::milliseconds(static_cast<long>(spec.kill_after_s * 1000));
    if (!cv.wait_for(lock, limit, [&] { return finished == spec.nranks; })) {
      for (int r = 0; r < spec.nranks; ++r)
        if (rc[r] == -1) std::fprintf(stderr, "rank %d (thread) still running after %.0f s\n", r,
                                      spec.kill_after_s);
      std::fflush(nullptr);
      std::abort();  // threads cannot be killed; a hang must not pass as a slow test
    }
  }
  for (std::thread& t : threads) t.join();
  std::string failures;
  for (int r = 0; r < spec.nranks; ++r)
    if (rc[r] != 0) failures += "rank " + std::to_string(r) + ": exit code " + std::to_string(rc[r]) + "\n";
  return failures;
}

}  // namespace sieve_test
