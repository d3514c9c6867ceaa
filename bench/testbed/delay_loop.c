/* The delay router's loop (delay_loop.h). */
#define _GNU_SOURCE
#include "delay_loop.h"

#include <errno.h>
#include <poll.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* Packets read per wake-up before the due ones are written again: bounds how late a
 * due packet can be while a burst is arriving. */
enum { kBatch = 64 };

uint64_t dl_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* How long a full output is waited for before its packet counts as lost. A TUN device
 * never reports full; a socket (the tests' loop) does whenever its reader falls more than
 * net.unix.max_dgram_qlen (often 10) packets behind, e.g. while it is descheduled. */
enum { kFullWaitMs = 20 };

/* Writes one packet; 0 when it went out whole. */
static int write_packet(int fd, const unsigned char *data, size_t len) {
  const uint64_t give_up = dl_now_ns() + kFullWaitMs * 1000000ull;
  for (;;) {
    ssize_t put = write(fd, data, len);
    if (put == (ssize_t)len) return 0;
    if (put >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return -1;
    uint64_t now = dl_now_ns();
    if (now >= give_up) return -1;
    if (errno != EINTR) {
      struct pollfd out = {fd, POLLOUT, 0};
      poll(&out, 1, (int)((give_up - now) / 1000000ull) + 1);
    }
  }
}

static void write_due(struct dq *q, int fd, uint64_t now, struct dl_stats *stats) {
  const unsigned char *data;
  size_t len;
  uint64_t due;
  while (dq_peek(q, &data, &len, &due) && due <= now) {
    if (now - due > stats->max_late_ns) stats->max_late_ns = now - due;
    if (write_packet(fd, data, len) != 0) ++stats->write_errors;
    dq_pop(q);
  }
}

/* Reads up to a batch; returns how many were read, or -1 on a read error. */
static int read_batch(struct dq *q, int fd, size_t max_packet) {
  static unsigned char discard[1 << 17];
  int n = 0;
  for (; n < kBatch; ++n) {
    unsigned char *slot = dq_reserve(q, max_packet);
    ssize_t got = read(fd, slot ? slot : discard, slot ? max_packet : sizeof(discard));
    if (got < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return n;
      if (errno == EINTR) continue;
      return -1;
    }
    if (slot == NULL) {
      dq_drop_full(q);
    } else {
      dq_commit(q, (size_t)got, dl_now_ns());
    }
  }
  return n;
}

int dl_run(struct dq *q, const struct dl_options *opt, struct dl_stats *stats) {
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  sigset_t during_sleep;
  if (opt->stop_signals) {
    sigset_t old;
    sigprocmask(SIG_BLOCK, opt->stop_signals, &old);
    during_sleep = old;
  }
  struct pollfd pfd = {opt->fd, POLLIN, 0};
  while (!*opt->stop) {
    write_due(q, opt->fd, dl_now_ns(), stats);
    int got = read_batch(q, opt->fd, opt->max_packet);
    if (got < 0) return -1;
    if (got == kBatch) continue; /* more may be waiting: write what is due, read again */
    const unsigned char *data;
    size_t len;
    uint64_t due;
    struct timespec timeout, *tp = NULL;
    if (dq_peek(q, &data, &len, &due)) {
      uint64_t now = dl_now_ns();
      uint64_t wait = due > now ? due - now : 0;
      timeout.tv_sec = (time_t)(wait / 1000000000ull);
      timeout.tv_nsec = (long)(wait % 1000000000ull);
      tp = &timeout;
    }
    if (ppoll(&pfd, 1, tp, opt->stop_signals ? &during_sleep : NULL) < 0 && errno != EINTR)
      return -1;
  }
  return 0;
}
