// Direct reduce-scatter + all-gather, pipelined by segments.
//
// The schedule (n ranks, rank r owns chunk r = bounds[r]..bounds[r+1]; every
// chunk is cut into S segments, and "segment s" means piece s of every chunk):
//   reduce-scatter: send piece s of chunk p (our input, one contribution) to
//   every rank p; receive piece s of chunk r from every rank and combine them
//   into work, in a fixed order (from rank r-1 down to r+1), so the sum is the
//   same on every run; finalize it.
//   all-gather: send the final piece s of chunk r to every rank; receive piece
//   s of chunk p from every rank p.
// Each segment moves from the first phase to the second as soon as its pieces
// are in, while later segments are still in flight: every rank sends to all
// its peers at once, so one round trip carries the data, and the link stays
// busy for as many segments as the in-flight budget allows. Segments are
// served first in, first out on every rank, so all ranks post their messages
// to each peer in the same order (the tags' per-peer indices rely on it).
#include "algo/direct.h"

#include <algorithm>
#include <deque>

#include "algo/ring_pattern.h"

namespace sieve::algo {

namespace {

struct Segment {
  size_t index = 0;
  bool gathering = false;  // reduce-scatter posted (false) or all-gather posted (true)
  // Per peer rank (our own entries unused).
  std::vector<Channel::Handle> rs_recv, rs_send, ag_recv, ag_send;
  std::vector<bool> ag_direct;
  // Buffers handed from a finished segment to the next one (grown, never shrunk).
  struct Scratch {
    std::vector<ScratchBuffer> rs_recv, rs_send, ag_recv;
    ScratchBuffer ag_send;
  } scratch;
};

}  // namespace

class Direct::Run {
 public:
  Run(Channel& channel, Codec& codec, std::vector<size_t> bounds, const DirectOptions& options)
      : ch_(channel), codec_(codec), bounds_(std::move(bounds)), opt_(options) {
    n_ = channel.size();
    rank_ = channel.rank();
    size_t max_bytes = 0;
    for (int c = 0; c < n_; ++c)
      max_bytes = std::max(max_bytes, codec.WireBytes(bounds_[c + 1] - bounds_[c], n_));
    segments_ = std::max<size_t>(1, (max_bytes + opt_.segment_bytes - 1) / opt_.segment_bytes);
    // One segment puts a piece to every peer on the wire in each phase.
    size_t per_segment = std::max<size_t>(1, (max_bytes / segments_ + 1) * (n_ - 1));
    window_ = std::max<size_t>(2, opt_.inflight_bytes / per_segment);
  }

  Status Start() {
    if (n_ == 1) {
      codec_.LoadInput(bounds_[0], bounds_[1] - bounds_[0]);
      codec_.Finalize(bounds_[0], bounds_[1] - bounds_[0]);
      codec_.Deliver(bounds_[0], bounds_[1] - bounds_[0]);
      return Status::OK();
    }
    segs_.resize(segments_);
    while (next_ < std::min(window_, segments_)) SIEVE_RETURN_IF_ERROR(StartSegment(NewScratch()));
    return Status::OK();
  }

  bool Idle() const { return queue_.empty(); }

  bool Ready() const {
    if (queue_.empty()) return false;
    const Segment& seg = *queue_.front();
    for (int p = 0; p < n_; ++p) {
      if (p == rank_) continue;
      if (!seg.gathering) {
        // Combining needs the pieces; posting the all-gather receives needs our
        // reduce-scatter sends done (a receive may overwrite what they read).
        if (!ch_.Done(seg.rs_recv[p]) || !ch_.Done(seg.rs_send[p])) return false;
      } else {
        if (!ch_.Done(seg.ag_recv[p])) return false;
        // The next segment inherits this one's send scratch.
        if (next_ < segments_ && (!ch_.Done(seg.rs_send[p]) || !ch_.Done(seg.ag_send[p])))
          return false;
      }
    }
    return true;
  }

  Status Advance() {
    Segment* seg = queue_.front();
    queue_.pop_front();
    if (!seg->gathering) {
      SIEVE_RETURN_IF_ERROR(Combine(*seg));
      SIEVE_RETURN_IF_ERROR(PostGather(*seg));
      seg->gathering = true;
      queue_.push_back(seg);
      return Status::OK();
    }
    SIEVE_RETURN_IF_ERROR(Absorb(*seg));
    if (next_ < segments_) {
      for (int p = 0; p < n_; ++p) {
        if (p == rank_) continue;
        SIEVE_RETURN_IF_ERROR(ch_.Wait(seg->rs_send[p]));
        SIEVE_RETURN_IF_ERROR(ch_.Wait(seg->ag_send[p]));
      }
      SIEVE_RETURN_IF_ERROR(StartSegment(std::move(seg->scratch)));
    }
    return Status::OK();
  }

  Status Finish() { return ch_.WaitAll(); }

 private:
  Segment::Scratch NewScratch() {
    ScratchAllocator* a = codec_.scratch_allocator();
    Segment::Scratch s;
    s.ag_send = ScratchBuffer(a);
    for (int p = 0; p < n_; ++p) {
      s.rs_recv.emplace_back(a);
      s.rs_send.emplace_back(a);
      s.ag_recv.emplace_back(a);
    }
    return s;
  }

  void Range(int chunk, size_t s, size_t* begin, size_t* end) const {
    size_t b, e;
    SegmentRange(bounds_[chunk + 1] - bounds_[chunk], segments_, s, &b, &e);
    *begin = bounds_[chunk] + b;
    *end = bounds_[chunk] + e;
  }

  // Posts segment `next_`'s reduce-scatter: a receive from every peer of its
  // piece of our chunk, and our input's piece of every peer's chunk.
  Status StartSegment(Segment::Scratch scratch) {
    Segment& seg = segs_[next_];
    seg.index = next_++;
    seg.gathering = false;
    seg.rs_recv.assign(n_, 0);
    seg.rs_send.assign(n_, 0);
    seg.ag_recv.assign(n_, 0);
    seg.ag_send.assign(n_, 0);
    seg.ag_direct.assign(n_, false);
    seg.scratch = std::move(scratch);
    queue_.push_back(&seg);
    size_t b, e;
    Range(rank_, seg.index, &b, &e);
    const size_t in_bytes = codec_.WireBytes(e - b, 1);
    for (int p = 0; p < n_; ++p) {
      if (p == rank_) continue;
      ScratchBuffer& buf = seg.scratch.rs_recv[p];
      SIEVE_RETURN_IF_ERROR(buf.Reserve(in_bytes));
      SIEVE_RETURN_IF_ERROR(ch_.Recv(p, buf.data(), in_bytes, &seg.rs_recv[p]));
    }
    for (int p = 0; p < n_; ++p) {
      if (p == rank_) continue;
      size_t sb, se;
      Range(p, seg.index, &sb, &se);
      void* scratch_out = nullptr;
      if (codec_.EncodeNeedsScratch(sb, se - sb, 1)) {
        ScratchBuffer& buf = seg.scratch.rs_send[p];
        SIEVE_RETURN_IF_ERROR(buf.Reserve(codec_.WireBytes(se - sb, 1)));
        scratch_out = buf.data();
      }
      const void* wire = codec_.Encode(sb, se - sb, 1, scratch_out);
      SIEVE_RETURN_IF_ERROR(ch_.Send(p, wire, codec_.WireBytes(se - sb, 1), &seg.rs_send[p]));
    }
    return Status::OK();
  }

  // Our chunk's piece: our input and every peer's, in a fixed order; finalized.
  Status Combine(Segment& seg) {
    size_t b, e;
    Range(rank_, seg.index, &b, &e);
    for (int k = 1; k < n_; ++k) {
      int p = Mod(rank_ - k, n_);
      SIEVE_RETURN_IF_ERROR(ch_.Wait(seg.rs_recv[p]));
      codec_.ReduceInto(b, e - b, 1, seg.scratch.rs_recv[p].data(), /*first=*/k == 1);
    }
    codec_.Finalize(b, e - b);
    codec_.Deliver(b, e - b);
    return Status::OK();
  }

  // The final piece of our chunk to every peer; a receive of theirs from each.
  Status PostGather(Segment& seg) {
    size_t b, e;
    Range(rank_, seg.index, &b, &e);
    void* scratch_out = nullptr;
    if (codec_.EncodeNeedsScratch(b, e - b, n_)) {
      SIEVE_RETURN_IF_ERROR(seg.scratch.ag_send.Reserve(codec_.WireBytes(e - b, n_)));
      scratch_out = seg.scratch.ag_send.data();
    }
    const void* wire = codec_.Encode(b, e - b, n_, scratch_out);
    const size_t out_bytes = codec_.WireBytes(e - b, n_);
    for (int p = 0; p < n_; ++p) {
      if (p == rank_) continue;
      SIEVE_RETURN_IF_ERROR(ch_.Send(p, wire, out_bytes, &seg.ag_send[p]));
    }
    for (int p = 0; p < n_; ++p) {
      if (p == rank_) continue;
      size_t rb, re;
      Range(p, seg.index, &rb, &re);
      // The receive may land where our reduce-scatter send to p read from.
      SIEVE_RETURN_IF_ERROR(ch_.Wait(seg.rs_send[p]));
      const size_t bytes = codec_.WireBytes(re - rb, n_);
      void* target = codec_.DirectTarget(rb, re - rb);
      seg.ag_direct[p] = target != nullptr;
      if (target == nullptr) {
        SIEVE_RETURN_IF_ERROR(seg.scratch.ag_recv[p].Reserve(bytes));
        target = seg.scratch.ag_recv[p].data();
      }
      SIEVE_RETURN_IF_ERROR(ch_.Recv(p, target, bytes, &seg.ag_recv[p]));
    }
    return Status::OK();
  }

  // Every peer's final piece, decoded and delivered.
  Status Absorb(Segment& seg) {
    if (opt_.vouch && queue_.empty() && next_ == segments_) {
      // The last segment: once every message is in and out, what is left
      // cannot fail on the host, so the verdict travels while it is decoded.
      SIEVE_RETURN_IF_ERROR(ch_.WaitAll());
      if (!codec_.MayFailLocally() && codec_.status().ok()) ch_.Vouch();
    }
    for (int k = 1; k < n_; ++k) {
      int p = Mod(rank_ + k, n_);
      SIEVE_RETURN_IF_ERROR(ch_.Wait(seg.ag_recv[p]));
      size_t b, e;
      Range(p, seg.index, &b, &e);
      if (!seg.ag_direct[p]) codec_.Decode(b, e - b, seg.scratch.ag_recv[p].data());
      codec_.Deliver(b, e - b);
    }
    return Status::OK();
  }

  Channel& ch_;
  Codec& codec_;
  std::vector<size_t> bounds_;
  DirectOptions opt_;
  int n_ = 1;
  int rank_ = 0;
  size_t segments_ = 1;
  size_t window_ = 2;
  size_t next_ = 0;
  std::vector<Segment> segs_;
  std::deque<Segment*> queue_;
};

Direct::Direct(Channel& channel, Codec& codec, std::vector<size_t> bounds,
               const DirectOptions& options)
    : run_(new Run(channel, codec, std::move(bounds), options)) {}
Direct::~Direct() = default;
Status Direct::Start() { return run_->Start(); }
bool Direct::Idle() const { return run_->Idle(); }
bool Direct::Ready() const { return run_->Ready(); }
Status Direct::Advance() { return run_->Advance(); }
Status Direct::Finish() { return run_->Finish(); }

Status RunDirect(Channel& channel, Codec& codec, const std::vector<size_t>& bounds,
                 const DirectOptions& options) {
  DirectOptions whole = options;
  whole.vouch = true;
  Direct direct(channel, codec, bounds, whole);
  SIEVE_RETURN_IF_ERROR(direct.Start());
  while (!direct.Idle()) SIEVE_RETURN_IF_ERROR(direct.Advance());
  return direct.Finish();
}

}  // namespace sieve::algo
