/* The delay router's FIFO of packets in one preallocated byte ring (delay_queue.h).
 *
 * A record is a 16-byte header (due time, length) and the packet, padded to 16 bytes.
 * Records never wrap: when the end of the ring is too short for the next one, a marker
 * record says "continue at 0" (the skipped end counts as used until the tail passes it). */
#include "delay_queue.h"

#include <stdlib.h>
#include <string.h>

enum { kHeader = 16, kAlign = 16 };
static const uint32_t kWrap = UINT32_MAX;

struct record {
  uint64_t due_ns;
  uint32_t len;
  uint32_t unused;
};

static size_t record_bytes(size_t len) {
  return (kHeader + len + kAlign - 1) & ~(size_t)(kAlign - 1);
}

static struct record *at(const struct dq *q, size_t off) { return (struct record *)(q->buf + off); }

int dq_init(struct dq *q, size_t capacity, uint64_t delay_ns, double loss, uint64_t seed) {
  memset(q, 0, sizeof(*q));
  capacity &= ~(size_t)(kAlign - 1);
  if (capacity < 2 * kHeader || !(loss >= 0.0 && loss <= 1.0)) return -1;
  q->buf = aligned_alloc(kAlign, capacity);
  if (q->buf == NULL) return -1;
  q->cap = capacity;
  q->delay_ns = delay_ns;
  /* 2^64 * loss, saturated: a draw below it is a loss. */
  q->loss_threshold = loss >= 1.0 ? UINT64_MAX : (uint64_t)(loss * 18446744073709551616.0);
  q->rng = seed ? seed : 0x9E3779B97F4A7C15ull;
  return 0;
}

void dq_free(struct dq *q) {
  free(q->buf);
  q->buf = NULL;
}

/* xorshift64*: small, fast, and the same sequence for the same seed. */
static uint64_t draw(struct dq *q) {
  q->rng ^= q->rng >> 12;
  q->rng ^= q->rng << 25;
  q->rng ^= q->rng >> 27;
  return q->rng * 0x2545F4914F6CDD1Dull;
}

unsigned char *dq_reserve(struct dq *q, size_t max_len) {
  size_t need = record_bytes(max_len);
  if (max_len >= kWrap) return NULL;
  if (q->count == 0) q->head = q->tail = q->used = 0; /* empty: start over, all contiguous */
  size_t free_end, free_start = 0;
  if (q->used == 0 || q->head > q->tail) {
    free_end = q->cap - q->head;
    free_start = q->tail;
  } else if (q->head < q->tail) {
    free_end = q->tail - q->head;
  } else {
    return NULL; /* head == tail with bytes in use: full */
  }
  if (need > free_end) {
    if (need > free_start || q->used == 0) return NULL;
    /* Wrap: mark the rest of the ring skipped (records are 16-byte multiples, so a
     * marker header fits whenever any bytes are left). */
    if (q->head < q->cap) at(q, q->head)->len = kWrap;
    q->used += q->cap - q->head;
    q->head = 0;
  }
  return q->buf + q->head + kHeader;
}

/* The tail on a real record: past a wrap marker or the ring's very end. */
static void normalize_tail(struct dq *q) {
  if (q->count == 0) return;
  if (q->tail == q->cap) {
    q->tail = 0;
  } else if (at(q, q->tail)->len == kWrap) {
    q->used -= q->cap - q->tail;
    q->tail = 0;
  }
}

enum dq_verdict dq_commit(struct dq *q, size_t len, uint64_t now_ns) {
  size_t bytes = record_bytes(len);
  if (q->loss_threshold != 0 && draw(q) < q->loss_threshold) {
    ++q->stats.dropped_loss;
    return DQ_LOST;
  }
  struct record *r = at(q, q->head);
  r->due_ns = now_ns + q->delay_ns;
  r->len = (uint32_t)len;
  q->head += bytes;
  q->used += bytes;
  ++q->count;
  ++q->stats.queued;
  if (q->used > q->stats.max_used) q->stats.max_used = q->used;
  normalize_tail(q);
  return DQ_QUEUED;
}

void dq_drop_full(struct dq *q) { ++q->stats.dropped_full; }

int dq_peek(const struct dq *q, const unsigned char **data, size_t *len, uint64_t *due_ns) {
  if (q->count == 0) return 0;
  const struct record *r = at(q, q->tail);
  *data = q->buf + q->tail + kHeader;
  *len = r->len;
  *due_ns = r->due_ns;
  return 1;
}

void dq_pop(struct dq *q) {
  if (q->count == 0) return;
  size_t bytes = record_bytes(at(q, q->tail)->len);
  q->tail += bytes;
  q->used -= bytes;
  --q->count;
  ++q->stats.sent;
  normalize_tail(q);
}
