// NUMA placement of the GPU path over a fake device: the progress thread binds
// to the communicator's node and pinned staging is placed there (seen through
// a recording placer); refusals fall back and never fail; on this machine the
// real (hwloc) placer is a harmless no-op when there is one NUMA node.
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu/progress_engine.h"
#include "support/fake_device.h"
#include "support/staged_transform.h"
#include "topo/machine.h"

namespace {

using sieve::Status;
using sieve::gpu::ProgressEngine;

// Records which node each part asked for; maps plain page-aligned memory.
class RecordingPlacer : public sieve::gpu::NumaPlacer {
 public:
  Status BindThisThread(int numa, bool* bound, std::string* what) override {
    std::lock_guard<std::mutex> lock(mu_);
    bind_nodes.push_back(numa);
    bind_thread = std::this_thread::get_id();
    if (refuse_bind) return Status::SystemError("sched_setaffinity: refused (test)");
    *bound = true;
    *what = "bound to NUMA node " + std::to_string(numa) + " (recorded)";
    return Status::OK();
  }
  void* MapOnNode(size_t bytes, int numa, std::string*) override {
    std::lock_guard<std::mutex> lock(mu_);
    map_nodes.push_back(numa);
    ++live;
    return std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  }
  void Unmap(void* addr, size_t) override {
    std::lock_guard<std::mutex> lock(mu_);
    --live;
    std::free(addr);
  }

  bool refuse_bind = false;
  std::vector<int> bind_nodes, map_nodes;
  std::thread::id bind_thread;
  int live = 0;

 private:
  std::mutex mu_;
};

ProgressEngine::Options OnNode(int numa, sieve::gpu::NumaPlacer* placer) {
  ProgressEngine::Options o;
  o.staging_cap = 64 << 20;
  o.drain_timeout_s = 2;
  o.numa = numa;
  o.placer = placer;
  return o;
}

// The progress thread's id; RunHost returns after its start (and binding).
std::thread::id ProgressThreadOf(ProgressEngine& engine) {
  std::thread::id id;
  Status st = engine.RunHost([&id] {
    id = std::this_thread::get_id();
    return Status::OK();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return id;
}

// Runs a staged transform of fresh random words through the engine and checks it.
void RunTransform(ProgressEngine& engine, uint32_t seed) {
  sieve_test::FakeStream stream;
  std::vector<uint32_t> in = sieve_test::RandomWords(3001, seed), out(in.size(), 0);
  Status st = engine.Enqueue(
      sieve_test::Transform(stream.handle(), in.data(), out.data(), in.size(), 500, 3));
  ASSERT_TRUE(st.ok()) << st.ToString();
  stream.Drain();
  sieve_test::ExpectTransformed(in, out);
}

TEST(NumaBinding, ProgressThreadAndStagingUseTheGivenNode) {
  sieve_test::FakeDeviceOps ops;
  RecordingPlacer placer;
  {
    ProgressEngine engine(&ops, OnNode(1, &placer));
    std::thread::id progress = ProgressThreadOf(engine);
    ASSERT_EQ(placer.bind_nodes, std::vector<int>{1});
    EXPECT_EQ(placer.bind_thread, progress);  // the progress thread itself, not the caller
    EXPECT_NE(progress, std::this_thread::get_id());
    EXPECT_EQ(engine.thread_binding(), "bound to NUMA node 1 (recorded)");
    RunTransform(engine, 11);
    RunTransform(engine, 12);
    // Every slot was placed on node 1 and registered; none came from AllocPinned.
    EXPECT_EQ(placer.map_nodes.size(), engine.pool().slot_count());
    for (int node : placer.map_nodes) EXPECT_EQ(node, 1);
    EXPECT_GT(ops.registers, 0);
    EXPECT_EQ(ops.registers, static_cast<int>(placer.map_nodes.size()));
    EXPECT_EQ(ops.allocs, 0);
  }
  // Destroyed: unregistered before unmapped, nothing left.
  EXPECT_EQ(ops.unregisters, ops.registers);
  EXPECT_EQ(placer.live, 0);
}

TEST(NumaBinding, NoNodeMeansNoBindingAndDriverMemory) {
  sieve_test::FakeDeviceOps ops;
  RecordingPlacer placer;
  {
    ProgressEngine engine(&ops, OnNode(-1, &placer));  // SIEVE_BIND=NONE
    ProgressThreadOf(engine);
    EXPECT_NE(engine.thread_binding().find("not bound"), std::string::npos)
        << engine.thread_binding();
    RunTransform(engine, 21);
    EXPECT_GT(ops.allocs, 0);
  }
  EXPECT_TRUE(placer.bind_nodes.empty());
  EXPECT_TRUE(placer.map_nodes.empty());
  EXPECT_EQ(ops.registers, 0);
  EXPECT_EQ(ops.frees, ops.allocs);
}

TEST(NumaBinding, RefusalsAreReportedAndTheEngineStillWorks) {
  sieve_test::FakeDeviceOps ops;
  ops.fail_register = true;  // the driver will not pin the placed memory
  RecordingPlacer placer;
  placer.refuse_bind = true;
  {
    ProgressEngine engine(&ops, OnNode(0, &placer));
    ProgressThreadOf(engine);
    EXPECT_EQ(engine.thread_binding(), "not bound (sched_setaffinity: refused (test))");
    RunTransform(engine, 31);
    // Each slot was mapped on node 0, refused, unmapped, then driver-allocated.
    EXPECT_FALSE(placer.map_nodes.empty());
    EXPECT_EQ(placer.live, 0);
    EXPECT_EQ(ops.allocs, static_cast<int>(placer.map_nodes.size()));
  }
  EXPECT_EQ(ops.frees, ops.allocs);
}

TEST(NumaBinding, RealPlacerOnThisMachineNeverFails) {
  const sieve::topo::Machine& machine = sieve::topo::LoadMachine();
  sieve_test::FakeDeviceOps ops;
  {
    ProgressEngine engine(&ops, OnNode(0, nullptr));  // hwloc
    ProgressThreadOf(engine);
    const std::string binding = engine.thread_binding();
    RunTransform(engine, 41);
    if (machine.numa_nodes < 2) {
      EXPECT_EQ(binding, "not bound (one NUMA node: nothing to choose)");
      EXPECT_EQ(ops.registers, 0);  // a no-op: the driver's own pinned memory
      EXPECT_GT(ops.allocs, 0);
    } else {
      EXPECT_TRUE(binding.rfind("bound to NUMA node 0", 0) == 0 ||
                  binding.rfind("not bound (none of this process's CPUs", 0) == 0)
          << binding;
      EXPECT_GT(ops.registers, 0);
    }
  }
  EXPECT_EQ(ops.unregisters, ops.registers);
  EXPECT_EQ(ops.frees, ops.allocs);
}

}  // namespace
