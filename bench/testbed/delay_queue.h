/* The delay router's queue: packets held for a fixed delay, in arrival order.
 *
 * One preallocated byte ring of variable-length records, so memory is bounded by the
 * capacity given at init and no packet costs a malloc. A constant delay means packets
 * leave in the order they came, so the ring is a FIFO: a packet is read straight into
 * its record (dq_reserve / dq_commit) and written out from it (dq_peek / dq_pop).
 * A packet that finds the ring full is dropped, like a router's full buffer; with a
 * loss rate, dq_commit drops each packet with that probability (a seeded generator, so
 * a run can be repeated). */
#ifndef SIEVE_BENCH_TESTBED_DELAY_QUEUE_H_
#define SIEVE_BENCH_TESTBED_DELAY_QUEUE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct dq_stats {
  uint64_t queued;       /* packets accepted */
  uint64_t sent;         /* packets popped */
  uint64_t dropped_full; /* no room in the ring */
  uint64_t dropped_loss; /* the random loss */
  size_t max_used;       /* most bytes of the ring ever in use */
};

struct dq {
  unsigned char *buf;
  size_t cap;        /* bytes of buf */
  size_t head;       /* where the next record goes */
  size_t tail;       /* the oldest record */
  size_t used;       /* bytes in use, records and skipped ends */
  size_t count;      /* records queued */
  uint64_t delay_ns;
  uint64_t loss_threshold; /* a packet is lost when the generator's draw is below it */
  uint64_t rng;
  struct dq_stats stats;
};

enum dq_verdict { DQ_QUEUED = 0, DQ_LOST = 1 };

/* capacity: bytes of the ring (at least one largest packet plus headers); loss in [0, 1].
 * Returns 0, or -1 when the arguments are out of range or memory is short. */
int dq_init(struct dq *q, size_t capacity, uint64_t delay_ns, double loss, uint64_t seed);
void dq_free(struct dq *q);

/* Room for a packet of up to max_len bytes at the head, or NULL when the ring is full
 * (the caller drops the packet: dq_drop_full counts it). A reservation that is not
 * committed (the read failed) is simply forgotten. */
unsigned char *dq_reserve(struct dq *q, size_t max_len);
/* Queues the reserved packet's first len bytes, due at now_ns + delay, or drops it with
 * the loss probability (DQ_LOST; its room is given back). */
enum dq_verdict dq_commit(struct dq *q, size_t len, uint64_t now_ns);
void dq_drop_full(struct dq *q);

/* The oldest packet: 1 and its bytes and due time, or 0 when the queue is empty. */
int dq_peek(const struct dq *q, const unsigned char **data, size_t *len, uint64_t *due_ns);
void dq_pop(struct dq *q);

static inline size_t dq_count(const struct dq *q) { return q->count; }

#ifdef __cplusplus
}
#endif

#endif /* SIEVE_BENCH_TESTBED_DELAY_QUEUE_H_ */
