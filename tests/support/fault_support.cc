// Shared board, watcher thread and the survivors' fresh communicator.
#include "support/fault_support.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <new>
#include <random>
#include <regex>
#include <vector>

#include "support/splitmix.h"

namespace sieve_test {

double NowS() {
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool WaitFor(const std::function<bool()>& pred, double timeout_s) {
  auto start = Clock::now();
  while (!pred()) {
    if (SecondsSince(start) > timeout_s) return pred();
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return true;
}

char ProcState(pid_t pid) {
  // read(2), not a stream: the process may die between open and read (ESRCH), which
  // libstdc++'s filebuf reports by throwing.
  int fd = open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[512];
  ssize_t got = read(fd, buf, sizeof(buf));
  close(fd);
  if (got <= 0) return 0;
  std::string stat(buf, static_cast<size_t>(got));
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return 0;
  return stat[paren + 2];
}

bool NamesRank(const std::string& msg, int r) {
  std::regex re("\\branks? (?:\\d+, )*" + std::to_string(r) + "\\b");
  return std::regex_search(msg, re);
}

SharedFaultBoard::SharedFaultBoard() {
  void* mem = mmap(nullptr, sizeof(FaultBoard), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) std::abort();
  board_ = new (mem) FaultBoard();
  for (int r = 0; r < kMaxFaultRanks; ++r) {
    board_->pid[r].store(0);
    board_->result[r].store(-1);
    board_->result_s[r].store(0);
  }
  board_->started.store(0);
  board_->reported.store(0);
  board_->rejoined.store(0);
  board_->event_s.store(0);
  board_->cont_s.store(0);
  board_->id_ready.store(0);
  board_->seed.store(std::random_device()() * 0x100000001ull + 12345);
}

SharedFaultBoard::~SharedFaultBoard() {
  board_->~FaultBoard();
  munmap(board_, sizeof(FaultBoard));
}

std::function<void()> VictimWatch(FaultBoard* board, int nranks, int victim, bool stopped,
                                  int cont_after_reports) {
  return [=] {
    auto all_forked = [&] {
      for (int r = 0; r < nranks; ++r)
        if (board->pid[r].load() == 0) return false;
      return true;
    };
    if (!WaitFor(all_forked, 60)) return;
    pid_t pid = board->pid[victim].load();
    auto happened = [&] {
      char s = ProcState(pid);
      return stopped ? s == 'T' : (s == 'Z' || s == 'X' || s == 0);
    };
    if (!WaitFor(happened, 60)) return;
    board->event_s.store(NowS());
    if (cont_after_reports <= 0) return;
    WaitFor([&] { return board->reported.load() >= cont_after_reports; }, 60);
    board->cont_s.store(NowS());
    kill(pid, SIGCONT);
  };
}

namespace {

int32_t Value(uint64_t seed, int rank, size_t i) {
  uint64_t z = seed + kGoldenGamma * (static_cast<uint64_t>(rank) * 1000003 + i + 1);
  return static_cast<int32_t>(SplitMixFinalize(z) % 2001) - 1000;
}

}  // namespace

int RejoinAndCheck(FaultBoard* board, int rank, int nranks, int victim, size_t count) {
  const int new_rank = rank - (rank > victim ? 1 : 0);
  const int new_n = nranks - 1;
  if (new_rank == 0) {
    sieveUniqueId id;
    if (sieveGetUniqueId(&id) != sieveSuccess) {
      std::fprintf(stderr, "rank %d: new id failed: %s\n", rank, sieveGetLastError(nullptr));
      return 1;
    }
    board->new_id = id;
    board->id_ready.store(1);
  } else if (!WaitFor([&] { return board->id_ready.load() == 1; }, 30)) {
    std::fprintf(stderr, "rank %d: no id for the survivors' communicator\n", rank);
    return 1;
  }
  sieveComm_t comm = nullptr;
  if (sieveCommInitRank(&comm, new_n, board->new_id, new_rank) != sieveSuccess) {
    std::fprintf(stderr, "rank %d: survivors' init failed: %s\n", rank, sieveGetLastError(nullptr));
    return 1;
  }
  uint64_t seed = board->seed.load();
  std::vector<int32_t> send(count), recv(count, 0);
  for (size_t i = 0; i < count; ++i) send[i] = Value(seed, new_rank, i);
  sieveResult_t res =
      sieveAllReduce(send.data(), recv.data(), count, sieveInt32, sieveSum, comm, nullptr);
  long wrong = 0;
  for (size_t i = 0; i < count && res == sieveSuccess; ++i) {
    int64_t want = 0;
    for (int r = 0; r < new_n; ++r) want += Value(seed, r, i);
    wrong += recv[i] != want;
  }
  board->rejoined.fetch_add(1);
  sieveCommDestroy(comm);
  if (res != sieveSuccess || wrong != 0) {
    std::fprintf(stderr, "rank %d: survivors' all-reduce returned %d with %ld wrong: %s\n", rank,
                 int(res), wrong, sieveGetLastError(nullptr));
    return 1;
  }
  return 0;
}

long CheckedAllReduce(sieveComm_t comm, int rank, int nranks, size_t count, sieveResult_t* res) {
  std::vector<float> send(count), recv(count, -1.0f);
  for (size_t i = 0; i < count; ++i) send[i] = float((rank + 1) * int(i % 11 + 1));
  *res = sieveAllReduce(send.data(), recv.data(), count, sieveFloat32, sieveSum, comm, nullptr);
  if (*res != sieveSuccess) return -1;
  long wrong = 0;
  float ranks_sum = float(nranks * (nranks + 1) / 2);
  for (size_t i = 0; i < count; ++i) wrong += recv[i] != ranks_sum * float(i % 11 + 1);
  return wrong;
}

}  // namespace sieve_test
