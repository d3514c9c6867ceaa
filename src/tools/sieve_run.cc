// sieve-run: a local launcher. Starts N ranks of a program as child processes with the
// SIEVE_RANK/SIEVE_NRANKS/SIEVE_UNIQUE_ID environment, forwards their output line by line
// with a "[rank] " prefix, and tears the whole job down as soon as one rank fails.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "sieve.h"

extern char** environ;

namespace {

constexpr int64_t kKillGraceMs = 3000;   // SIGTERM -> SIGKILL delay during teardown.
constexpr int64_t kDrainGraceMs = 1000;  // How long to wait for pipes after the last exit.
constexpr size_t kMaxLineBytes = 1 << 20;
constexpr int kMaxRanks = 4096;

int g_signal_pipe[2] = {-1, -1};  // Written by the SIGINT/SIGTERM/SIGCHLD handler.

struct Options {
  int nranks = 0;
  double timeout_s = 0;     // 0: no limit.
  std::vector<char*> argv;  // PROGRAM ARGS..., NULL-terminated.
};

// One pipe from a child's stdout or stderr and the bytes of its unfinished line.
struct Stream {
  int fd = -1;
  int out_fd = -1;
  std::string pending;
};

struct Child {
  pid_t pid = -1;
  bool running = false;
  bool exec_failed = false;  // Already reported; its exit status says nothing more.
  Stream out, err;
};

int64_t NowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

std::string FormatSeconds(double s) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

void PrintUsage(FILE* f) {
  fprintf(f,
          "Usage: sieve-run -n N [--timeout S] PROGRAM [ARGS...]\n"
          "Runs N ranks of PROGRAM on this machine with SIEVE_RANK, SIEVE_NRANKS and\n"
          "SIEVE_UNIQUE_ID set (SIEVE_SOCKET_IFNAME and UCX_NET_DEVICES default to \"lo\").\n"
          "Output lines are prefixed with \"[rank] \". If a rank fails, the others get\n"
          "SIGTERM, then SIGKILL after 3 s; the exit code is the first failing rank's\n"
          "(128+signal if it was killed), 0 iff every rank exits 0.\n"
          "  -n N          number of ranks (1..%d)\n"
          "  --timeout S   kill the job after S seconds (exit code 124)\n"
          "  -h, --help    this text\n",
          kMaxRanks);
}

// Parses argv into *opts. Returns -1 to go on, else the exit code to return.
int ParseArgs(int argc, char** argv, Options* opts) {
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      PrintUsage(stdout);
      return 0;
    }
    bool is_n = arg.rfind("-n", 0) == 0, is_t = arg.rfind("--timeout", 0) == 0;
    if (!is_n && !is_t) {
      fprintf(stderr, "sieve-run: unknown option '%s' (try --help)\n", arg.c_str());
      return 2;
    }
    size_t name_len = is_n ? 2 : 9;
    if (arg.size() > name_len) {
      value = arg.substr(arg[name_len] == '=' ? name_len + 1 : name_len);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      fprintf(stderr, "sieve-run: option '%s' needs a value\n", arg.c_str());
      return 2;
    }
    char* end = nullptr;
    errno = 0;
    if (is_n) {
      long n = strtol(value.c_str(), &end, 10);
      if (errno || *end || value.empty() || n < 1 || n > kMaxRanks) {
        fprintf(stderr, "sieve-run: bad -n '%s': need an integer in 1..%d\n", value.c_str(),
                kMaxRanks);
        return 2;
      }
      opts->nranks = static_cast<int>(n);
    } else {
      opts->timeout_s = strtod(value.c_str(), &end);
      if (errno || *end || value.empty() || !(opts->timeout_s >= 0)) {
        fprintf(stderr, "sieve-run: bad --timeout '%s': need seconds >= 0\n", value.c_str());
        return 2;
      }
    }
  }
  if (opts->nranks == 0 || i >= argc) {
    fprintf(stderr, "sieve-run: %s\n", opts->nranks == 0 ? "-n N is required" : "no PROGRAM");
    PrintUsage(stderr);
    return 2;
  }
  for (; i < argc; ++i) opts->argv.push_back(argv[i]);
  opts->argv.push_back(nullptr);
  return -1;
}

void OnSignal(int sig) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(sig);
  if (write(g_signal_pipe[1], &byte, 1) < 0) {
    // The pipe is full: a wake-up is already pending.
  }
  errno = saved;
}

void InstallSignalHandlers() {
  if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    perror("sieve-run: pipe");
    exit(1);
  }
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGCHLD}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// Writes all of buf to fd; gives up silently when the reader has gone.
void WriteAll(int fd, const std::string& buf) {
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = write(fd, buf.data() + done, buf.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// The environment of every rank but SIEVE_RANK: the launcher's own, minus the variables
// sieve-run sets, plus the job's id and the loopback defaults.
std::vector<std::string> BaseEnvironment(int nranks, const char* id_hex) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("SIEVE_RANK=", 0) == 0 || kv.rfind("SIEVE_NRANKS=", 0) == 0 ||
        kv.rfind("SIEVE_UNIQUE_ID=", 0) == 0)
      continue;
    env.push_back(kv);
  }
  env.push_back("SIEVE_NRANKS=" + std::to_string(nranks));
  env.push_back(std::string("SIEVE_UNIQUE_ID=") + id_hex);
  if (!getenv("SIEVE_SOCKET_IFNAME")) env.push_back("SIEVE_SOCKET_IFNAME=lo");
  if (!getenv("UCX_NET_DEVICES")) env.push_back("UCX_NET_DEVICES=lo");
  return env;
}

// Runs the ranks and multiplexes their output, exits and the launcher's signals.
class Launcher {
 public:
  explicit Launcher(const Options& opts) : opts_(opts), children_(opts.nranks) {}

  // Returns the launcher's exit code. REQUIRES: InstallSignalHandlers() was called.
  int Run(const std::vector<std::string>& base_env) {
    if (opts_.timeout_s > 0) timeout_at_ = NowMs() + static_cast<int64_t>(opts_.timeout_s * 1e3);
    for (int r = 0; r < opts_.nranks && exit_code_ == 0; ++r) Spawn(r, base_env);
    EventLoop();
    return exit_code_;
  }

 private:
  // Forks rank r. On exec failure the child reports errno through a close-on-exec pipe.
  void Spawn(int rank, std::vector<std::string> env) {
    env.push_back("SIEVE_RANK=" + std::to_string(rank));
    std::vector<char*> envp;
    for (std::string& kv : env) envp.push_back(&kv[0]);
    envp.push_back(nullptr);
    int out[2], err[2], exec_status[2];
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || pipe2(exec_status, O_CLOEXEC)) {
      return Fail(1, "sieve-run: pipe: " + std::string(strerror(errno)));
    }
    pid_t pid = fork();
    if (pid < 0) return Fail(1, "sieve-run: fork: " + std::string(strerror(errno)));
    if (pid == 0) ExecChild(out[1], err[1], exec_status[1], envp.data());
    setpgid(pid, pid);
    close(out[1]);
    close(err[1]);
    close(exec_status[1]);
    Child& c = children_[rank];
    c.pid = pid;
    c.running = true;
    c.out.fd = out[0];
    c.out.out_fd = STDOUT_FILENO;
    c.err.fd = err[0];
    c.err.out_fd = STDERR_FILENO;
    int child_errno = 0;
    ssize_t n;
    while ((n = read(exec_status[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
    }
    close(exec_status[0]);
    if (n == static_cast<ssize_t>(sizeof child_errno)) {
      c.exec_failed = true;
      Fail(127,
           "sieve-run: cannot run '" + std::string(opts_.argv[0]) + "': " + strerror(child_errno));
    }
  }

  // In the child after fork: only async-signal-safe calls until exec.
  [[noreturn]] void ExecChild(int out_fd, int err_fd, int status_fd, char** envp) {
    setpgid(0, 0);
    struct sigaction sa = {};
    sa.sa_handler = SIG_DFL;
    for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE}) sigaction(sig, &sa, nullptr);
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    execvpe(opts_.argv[0], opts_.argv.data(), envp);
    int e = errno;
    if (write(status_fd, &e, sizeof e) < 0) _exit(126);
    _exit(127);
  }

  void EventLoop() {
    int64_t last_exit_at = -1;
    while (true) {
      std::vector<pollfd> fds = {{g_signal_pipe[0], POLLIN, 0}};
      std::vector<Stream*> streams = {nullptr};
      for (Child& c : children_) {
        for (Stream* s : {&c.out, &c.err}) {
          if (s->fd < 0) continue;
          fds.push_back({s->fd, POLLIN, 0});
          streams.push_back(s);
        }
      }
      int live = Reap();
      if (live == 0 && last_exit_at < 0) last_exit_at = NowMs();
      if (fds.size() == 1 && live == 0) return;
      if (live == 0 && NowMs() - last_exit_at > kDrainGraceMs) return CloseAllStreams();
      CheckDeadlines();
      if (poll(fds.data(), fds.size(), 100) < 0 && errno != EINTR) return;
      if (fds[0].revents) HandleSignals();
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents) Pump(streams[i]);
      }
    }
  }

  // Reads what is available on s and forwards its complete lines.
  void Pump(Stream* s) {
    char buf[65536];
    ssize_t n = read(s->fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) return;
    if (n > 0) {
      s->pending.append(buf, static_cast<size_t>(n));
      return Emit(s, false);
    }
    Emit(s, true);
    close(s->fd);
    s->fd = -1;
  }

  // Writes the finished lines of s (and, at EOF or when huge, the rest) with the prefix.
  void Emit(Stream* s, bool at_eof) {
    const std::string prefix = "[" + std::to_string(RankOf(s)) + "] ";
    std::string out;
    size_t start = 0, nl;
    while ((nl = s->pending.find('\n', start)) != std::string::npos) {
      out += prefix;
      out.append(s->pending, start, nl + 1 - start);
      start = nl + 1;
    }
    s->pending.erase(0, start);
    if (!s->pending.empty() && (at_eof || s->pending.size() > kMaxLineBytes)) {
      out += prefix + s->pending + "\n";
      s->pending.clear();
    }
    if (!out.empty()) WriteAll(s->out_fd, out);
  }

  int RankOf(const Stream* s) const {
    for (size_t r = 0; r < children_.size(); ++r) {
      if (s == &children_[r].out || s == &children_[r].err) return static_cast<int>(r);
    }
    return -1;
  }

  // Collects exited children; returns how many are still running.
  int Reap() {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      for (size_t r = 0; r < children_.size(); ++r) {
        if (children_[r].pid == pid && children_[r].running) {
          children_[r].running = false;
          OnExit(static_cast<int>(r), status);
        }
      }
    }
    int live = 0;
    for (const Child& c : children_) live += c.running;
    return live;
  }

  void OnExit(int rank, int status) {
    if ((WIFEXITED(status) && WEXITSTATUS(status) == 0) || children_[rank].exec_failed) return;
    char what[128];
    int code;
    if (WIFSIGNALED(status)) {
      int sig = WTERMSIG(status);
      snprintf(what, sizeof what, "was killed by signal %d (%s)", sig, strsignal(sig));
      code = 128 + sig;
    } else {
      code = WEXITSTATUS(status);
      snprintf(what, sizeof what, "exited with code %d", code);
    }
    const char* note = teardown_ ? " during teardown" : "";
    Fail(code, "sieve-run: rank " + std::to_string(rank) + " (pid " +
                   std::to_string(children_[rank].pid) + ") " + what + note);
  }

  // Records the first failure, reports it and starts the teardown.
  void Fail(int code, const std::string& message) {
    fflush(stdout);
    WriteAll(STDERR_FILENO, message + "\n");
    if (exit_code_ == 0) exit_code_ = code;
    BeginTeardown(SIGTERM);
  }

  void BeginTeardown(int sig) {
    if (!teardown_) kill_at_ = NowMs() + kKillGraceMs;
    teardown_ = true;
    SignalAll(sig);
  }

  void SignalAll(int sig) {
    for (const Child& c : children_) {
      if (c.running && kill(-c.pid, sig) != 0) kill(c.pid, sig);
    }
  }

  void HandleSignals() {
    unsigned char sigs[64];
    ssize_t n = read(g_signal_pipe[0], sigs, sizeof sigs);
    for (ssize_t i = 0; i < n; ++i) {
      if (sigs[i] == SIGCHLD) continue;
      WriteAll(STDERR_FILENO, std::string("sieve-run: got ") + strsignal(sigs[i]) +
                                  ", forwarding it to the ranks\n");
      BeginTeardown(sigs[i]);
    }
  }

  void CheckDeadlines() {
    int64_t now = NowMs();
    if (timeout_at_ > 0 && now >= timeout_at_) {
      timeout_at_ = 0;
      Fail(124, "sieve-run: timeout after " + FormatSeconds(opts_.timeout_s));
    }
    if (teardown_ && kill_at_ > 0 && now >= kill_at_) {
      kill_at_ = 0;
      SignalAll(SIGKILL);
    }
  }

  void CloseAllStreams() {
    for (Child& c : children_) {
      for (Stream* s : {&c.out, &c.err}) {
        if (s->fd < 0) continue;
        Emit(s, true);
        close(s->fd);
        s->fd = -1;
      }
    }
  }

  const Options& opts_;
  std::vector<Child> children_;
  int exit_code_ = 0;
  bool teardown_ = false;
  int64_t kill_at_ = 0;
  int64_t timeout_at_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  int rc = ParseArgs(argc, argv, &opts);
  if (rc >= 0) return rc;
  sieveUniqueId id;
  char id_hex[SIEVE_UNIQUE_ID_STRING_BYTES];
  sieveResult_t res = sieveGetUniqueId(&id);
  if (res == sieveSuccess) res = sieveUniqueIdToString(&id, id_hex, sizeof id_hex);
  if (res != sieveSuccess) {
    fprintf(stderr, "sieve-run: cannot create the job id: %s: %s\n", sieveGetErrorString(res),
            sieveGetLastError(nullptr));
    return 1;
  }
  InstallSignalHandlers();
  Launcher launcher(opts);
  return launcher.Run(BaseEnvironment(opts.nranks, id_hex));
}
