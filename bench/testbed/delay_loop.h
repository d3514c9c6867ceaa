/* The delay router's loop: packets read from one descriptor are written back to it after
 * the queue's delay. The descriptor is a TUN device in the testbed (what the kernel
 * routes into it comes out again after the delay and is forwarded on), a datagram
 * socket in the tests.
 *
 * Each wake-up reads every packet waiting (non-blocking, up to a batch) straight into
 * the queue's ring, writes every packet that is due, and sleeps in ppoll until the next
 * packet is due or one arrives (timer slack 1 ns, so a wake-up is late by microseconds,
 * not the default 50). */
#ifndef SIEVE_BENCH_TESTBED_DELAY_LOOP_H_
#define SIEVE_BENCH_TESTBED_DELAY_LOOP_H_

#include <signal.h>
#include <stdint.h>

#include "delay_queue.h"

#ifdef __cplusplus
extern "C" {
#endif

struct dl_options {
  int fd;               /* non-blocking; read and written whole packets at a time */
  size_t max_packet;    /* the largest packet a read may return */
  volatile sig_atomic_t *stop; /* the loop returns once this is non-zero */
  /* Signals to block outside the sleep, so one that sets *stop is seen there; NULL: none. */
  const sigset_t *stop_signals;
};

struct dl_stats {
  uint64_t write_errors; /* packets the descriptor refused (counted, dropped) */
  uint64_t max_late_ns;  /* the latest a packet left after its due time */
};

uint64_t dl_now_ns(void);

/* Runs until *stop; returns 0, or -1 with errno when reading or polling fails. */
int dl_run(struct dq *q, const struct dl_options *opt, struct dl_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* SIEVE_BENCH_TESTBED_DELAY_LOOP_H_ */
