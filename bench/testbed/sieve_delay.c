/* sieve-delay: a userspace delay router over a TUN device, for kernels without sch_netem.
 *
 *   sieve-delay --dev NAME --delay TIME [--loss P] [--queue BYTES] [--seed N]
 *               [--no-offload] [--realtime] [--daemon] [--pidfile FILE] [--log FILE]
 *
 * Creates the TUN device NAME in the current network namespace and writes every packet
 * routed into it back after TIME (25ms, 500us, 0.05s; a bare number is milliseconds).
 * sieve-testbed routes a host's egress into it and forwards what comes back out of the
 * shaped interface, so TIME is a one-way delay and two hosts see RTT = 2 x TIME.
 *
 * The device takes TCP segmentation offload (IFF_VNET_HDR, TUNSETOFFLOAD): TCP hands it
 * up to 64 KiB per packet, as veth does, so 1 Gbit/s costs a few thousand packets a
 * second rather than 83 thousand. --loss P drops each packet with probability P; it
 * turns the offload off so that a packet is one MTU frame (--no-offload alone does that
 * too). --queue bounds the bytes held (default 32 MiB): a packet that finds it full is
 * dropped, like a full router buffer. --realtime runs the loop at a SCHED_FIFO priority, so
 * on a loaded machine a packet is late by microseconds rather than by a time slice of
 * another process (it sleeps between packets; the kernel's RT throttling still bounds
 * it). --daemon returns once the device exists and runs
 * in the background (pid in --pidfile); SIGTERM stops it, the device goes with it, and
 * the counters go to --log (or stderr). Exit codes: 0 ok, 1 failure, 2 bad usage. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "delay_loop.h"
#include "delay_queue.h"

/* A TUN read returns one virtio-net header and up to a 64 KiB GSO packet. */
enum { kMaxPacket = 65536 + 256 };

static volatile sig_atomic_t g_stop;
static void on_stop(int sig) { (void)sig; g_stop = 1; }

static void usage(void) {
  fprintf(stderr,
          "usage: sieve-delay --dev NAME --delay TIME [--loss P] [--queue BYTES] [--seed N]\n"
          "                   [--no-offload] [--realtime] [--daemon] [--pidfile FILE]\n"
          "                   [--log FILE]\n");
  exit(2);
}

/* "25ms", "500us", "0.05s", "25" (ms) -> nanoseconds; -1 when malformed. */
static long long parse_time_ns(const char *s) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || v < 0) return -1;
  double scale = 1e6;
  if (strcmp(end, "s") == 0) scale = 1e9;
  else if (strcmp(end, "ms") == 0 || *end == '\0') scale = 1e6;
  else if (strcmp(end, "us") == 0) scale = 1e3;
  else if (strcmp(end, "ns") == 0) scale = 1;
  else return -1;
  return (long long)(v * scale + 0.5);
}

static int open_tun(const char *name, int offload) {
  int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    perror("sieve-delay: /dev/net/tun");
    return -1;
  }
  struct ifreq ifr;
  memset(&ifr, 0, sizeof(ifr));
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
  snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
  if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
    fprintf(stderr, "sieve-delay: creating TUN device %s: %s\n", name, strerror(errno));
    close(fd);
    return -1;
  }
  /* Offloads on: the kernel may hand us unchecksummed TSO packets; written back with
   * the same virtio-net header, it finishes them on the way out. */
  unsigned offloads = offload ? (TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) : 0;
  if (ioctl(fd, TUNSETOFFLOAD, offloads) < 0) {
    fprintf(stderr, "sieve-delay: TUNSETOFFLOAD on %s: %s\n", name, strerror(errno));
    close(fd);
    return -1;
  }
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
    perror("sieve-delay: O_NONBLOCK");
    close(fd);
    return -1;
  }
  return fd;
}

/* Forks; the parent waits until the child is ready (its pid file written) and exits. */
static int daemonize(const char *pidfile, const char *logfile) {
  int ready[2];
  if (pipe(ready) < 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid > 0) {
    close(ready[1]);
    char ok = 0;
    ssize_t got = read(ready[0], &ok, 1);
    _exit(got == 1 && ok == 1 ? 0 : 1);
  }
  close(ready[0]);
  setsid();
  int devnull = open("/dev/null", O_RDWR);
  int log = logfile ? open(logfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : devnull;
  if (devnull < 0 || log < 0) return -1;
  dup2(devnull, 0);
  dup2(devnull, 1);
  dup2(log, 2);
  if (pidfile) {
    FILE *f = fopen(pidfile, "w");
    if (f == NULL) return -1;
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
  }
  char ok = 1;
  if (write(ready[1], &ok, 1) != 1) return -1;
  close(ready[1]);
  return 0;
}

int main(int argc, char **argv) {
  const char *dev = NULL, *pidfile = NULL, *logfile = NULL;
  long long delay_ns = -1;
  double loss = 0;
  size_t queue_bytes = 32u << 20;
  unsigned long long seed = 1;
  int offload = 1, daemon = 0, realtime = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--no-offload") == 0) { offload = 0; continue; }
    if (strcmp(a, "--daemon") == 0) { daemon = 1; continue; }
    if (strcmp(a, "--realtime") == 0) { realtime = 1; continue; }
    if (v == NULL) usage();
    ++i;
    char *end = NULL;
    if (strcmp(a, "--dev") == 0) dev = v;
    else if (strcmp(a, "--delay") == 0) delay_ns = parse_time_ns(v);
    else if (strcmp(a, "--loss") == 0) loss = strtod(v, &end);
    else if (strcmp(a, "--queue") == 0) queue_bytes = strtoull(v, &end, 10);
    else if (strcmp(a, "--seed") == 0) seed = strtoull(v, &end, 10);
    else if (strcmp(a, "--pidfile") == 0) pidfile = v;
    else if (strcmp(a, "--log") == 0) logfile = v;
    else usage();
    if (end != NULL && *end != '\0') {
      fprintf(stderr, "sieve-delay: %s: '%s' is not a number\n", a, v);
      return 2;
    }
  }
  if (dev == NULL || delay_ns < 0) usage();
  if (!(loss >= 0 && loss <= 1) || queue_bytes < 2 * (size_t)kMaxPacket) {
    fprintf(stderr, "sieve-delay: --loss must be in [0, 1], --queue at least %d\n", 2 * kMaxPacket);
    return 2;
  }
  if (loss > 0) offload = 0; /* a loss per frame, not per 64 KiB burst */

  struct dq q;
  if (dq_init(&q, queue_bytes, (uint64_t)delay_ns, loss, seed) != 0) {
    fprintf(stderr, "sieve-delay: cannot allocate a %zu-byte queue\n", queue_bytes);
    return 1;
  }
  int fd = open_tun(dev, offload);
  if (fd < 0) return 1;
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  int sigs[] = {SIGTERM, SIGINT, SIGHUP};
  for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); ++i) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigaction(sigs[i], &sa, NULL);
    sigaddset(&stop_signals, sigs[i]);
  }
  if (daemon && daemonize(pidfile, logfile) != 0) {
    perror("sieve-delay: daemonize");
    return 1;
  }
  if (realtime) {
    struct sched_param sp = {.sched_priority = 10};
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
      fprintf(stderr, "sieve-delay: SCHED_FIFO refused (%s); running at normal priority\n",
              strerror(errno));
  }
  struct dl_options opt = {fd, kMaxPacket, &g_stop, &stop_signals};
  struct dl_stats stats = {0, 0};
  int rc = dl_run(&q, &opt, &stats);
  if (rc != 0) perror("sieve-delay: loop");
  fprintf(stderr,
          "sieve-delay %s: delay %.3f ms, loss %g: %llu packets delayed, %llu dropped (queue "
          "full), %llu lost (random), %llu refused on write; most queued %zu bytes; latest "
          "%.3f ms after due\n",
          dev, delay_ns / 1e6, loss, (unsigned long long)q.stats.sent,
          (unsigned long long)q.stats.dropped_full, (unsigned long long)q.stats.dropped_loss,
          (unsigned long long)stats.write_errors, q.stats.max_used, stats.max_late_ns / 1e6);
  if (daemon && pidfile) unlink(pidfile);
  close(fd);
  dq_free(&q);
  return rc == 0 ? 0 : 1;
}
