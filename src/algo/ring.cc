// Ring reduce-scatter + all-gather, pipelined by segments.
//
// The schedule (n ranks, chunk c = bounds[c]..bounds[c+1]):
//   reduce-scatter, steps k = 0..n-2: send chunk r-k-1 to the next rank (at
//   k = 0 straight from the input), receive chunk r-k-2 from the previous rank
//   and combine it with our input into work. After step n-2 chunk r holds all
//   n contributions; it is finalized (e.g. averaged).
//   all-gather, steps k = 0..n-2: send chunk r-k (our own first), receive chunk
//   r-k-1 into work (it is forwarded at the next step).
// Each chunk is cut into S segments and segment s of step k+1 only depends on
// segment s of step k, so every segment is its own pipeline: as soon as one
// arrives it is combined and sent on while later segments are still in
// flight. Sends and combining therefore overlap, and each rank moves
// 2(n-1)/n of the data in each direction, the bandwidth optimum. Where the
// codec combines element by element and the transport streams the message
// (UCX's eager fragments), a reduce-scatter segment is combined fragment by
// fragment from the transport's buffer (ReduceSink), not copied out first.
#include "algo/ring.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "algo/reduce_sink.h"
#include "algo/ring_pattern.h"
#include "core/clock.h"
#include "core/log.h"

namespace sieve::algo {

namespace {

struct Segment {
  size_t index = 0;
  int step = 0;  // 0..total_steps-1: reduce-scatter steps first, then all-gather
  Channel::Handle recv = 0;
  bool recv_direct = false;
  // A reduce-scatter message combined as it arrives (Codec::PieceElementBytes),
  // not received into scratch: Absorb has nothing left to combine.
  bool recv_streamed = false;
  ReduceSink sink;
  std::vector<Channel::Handle> sends;  // one per step, to respect buffer reuse
  bool send_scratch_used[2] = {false, false};  // by the latest step of that parity
  // Buffers handed from a finished segment to the next one (grown, never shrunk,
  // so they are not reallocated on every segment).
  struct Scratch {
    explicit Scratch(ScratchAllocator* a = nullptr)
        : recv(a), send{ScratchBuffer(a), ScratchBuffer(a)} {}
    ScratchBuffer recv;
    ScratchBuffer send[2];
  } scratch;
};

// Where a ring's time goes, for SIEVE_DEBUG=TRACE (subsystem ALGO): the
// codec's work, posting messages (an eager send may copy and write to the
// socket right away), and waiting for receives and for sends to drain. A
// streamed reduce-scatter receive is combined while it arrives, so its
// combining counts as waiting.
// Off (no clock reads) unless that trace is enabled.
class Profile {
 public:
  enum Phase { kEncode, kCombine, kDecode, kPost, kWaitRecv, kWaitSend, kPhases };
  Profile() : on_(LogEnabled(LogLevel::kTrace, kLogAlgo)) {}
  bool on() const { return on_; }
  // Charges the time since the previous Mark (or Start) to `phase`.
  void Start() {
    if (on_) last_ = MonotonicSeconds(), start_ = last_;
  }
  void Mark(Phase phase) {
    if (!on_) return;
    const double now = MonotonicSeconds();
    ms_[phase] += (now - last_) * 1e3;
    last_ = now;
  }
  void Report(const char* name, size_t segments, int steps) const {
    if (!on_) return;
    SIEVE_TRACE(kLogAlgo,
                "%s ring: %zu segments x %d steps in %.2f ms: encode %.2f, combine %.2f, "
                "decode/deliver %.2f, post %.2f, wait recv %.2f, wait send %.2f ms",
                name, segments, steps, (MonotonicSeconds() - start_) * 1e3, ms_[kEncode],
                ms_[kCombine], ms_[kDecode], ms_[kPost], ms_[kWaitRecv], ms_[kWaitSend]);
  }

 private:
  bool on_;
  double start_ = 0, last_ = 0;
  double ms_[kPhases] = {};
};

}  // namespace

size_t RingSegments(const Codec& codec, const std::vector<size_t>& bounds, int n,
                    const RingOptions& options) {
  size_t max_bytes = 0;
  for (int c = 0; c < n; ++c)
    max_bytes = std::max(max_bytes, codec.WireBytes(bounds[c + 1] - bounds[c], n));
  return std::max<size_t>(1, (max_bytes + options.segment_bytes - 1) / options.segment_bytes);
}

class Ring::Run {
 public:
  Run(Channel& channel, Codec& codec, std::vector<size_t> bounds, const RingOptions& options)
      : ch_(channel), codec_(codec), bounds_(std::move(bounds)), opt_(options) {
    n_ = channel.size();
    rank_ = channel.rank();
    rs_steps_ = options.reduce_scatter ? n_ - 1 : 0;
    total_steps_ = rs_steps_ + (options.all_gather ? n_ - 1 : 0);
    segments_ = RingSegments(codec, bounds_, n_, opt_);
    stream_reduce_ = codec.PieceElementBytes() != 0;
    forward_final_ = codec.ForwardsFinalImage();
    // At most `window` segments are in flight; a finished one hands its receive
    // scratch to the next, so scratch stays small enough to stay in cache.
    window_ = std::max<size_t>(2, opt_.inflight_bytes / opt_.segment_bytes);
  }

  Status Start() {
    prof_.Start();
    if (n_ == 1) {
      if (opt_.reduce_scatter) {
        codec_.LoadInput(bounds_[0], bounds_[1] - bounds_[0]);
        codec_.Finalize(bounds_[0], bounds_[1] - bounds_[0]);
        if (opt_.all_gather) codec_.Deliver(bounds_[0], bounds_[1] - bounds_[0]);
      }
      return Status::OK();
    }
    segs_.resize(segments_);
    while (next_ < std::min(window_, segments_))
      SIEVE_RETURN_IF_ERROR(StartSegment(Segment::Scratch(codec_.scratch_allocator())));
    return Status::OK();
  }

  bool Idle() const { return queue_.empty(); }

  bool Ready() const {
    if (queue_.empty() || !ch_.Done(queue_.front()->recv)) return false;
    Blockers b = BlockersOf(*queue_.front());
    for (int i = 0; i < b.count; ++i)
      if (!ch_.Done(b.sends[i])) return false;
    return true;
  }

  // Every rank serves segments first-in first-out, so all ranks post their
  // messages in the same order (the tags' per-peer indices rely on it).
  Status Advance() {
    Segment* seg = queue_.front();
    queue_.pop_front();
    SIEVE_RETURN_IF_ERROR(ch_.Wait(seg->recv));
    prof_.Mark(Profile::kWaitRecv);
    Absorb(*seg);
    SIEVE_RETURN_IF_ERROR(codec_.status());
    Blockers b = BlockersOf(*seg);
    for (int i = 0; i < b.count; ++i) SIEVE_RETURN_IF_ERROR(ch_.Wait(b.sends[i]));
    prof_.Mark(Profile::kWaitSend);
    if (++seg->step < total_steps_) {
      SIEVE_RETURN_IF_ERROR(Post(*seg));
      queue_.push_back(seg);
    } else if (next_ < segments_) {
      SIEVE_RETURN_IF_ERROR(StartSegment(std::move(seg->scratch)));
    }
    return Status::OK();
  }

  Status Finish() {
    Status st = ch_.WaitAll();
    prof_.Mark(Profile::kWaitSend);
    prof_.Report(ch_.name().c_str(), segments_, total_steps_);
    return st;
  }

 private:
  // Sends whose buffers the segment's move past its current step reuses.
  struct Blockers {
    Channel::Handle sends[2];
    int count = 0;
  };

  bool InReduceScatter(int step) const { return step < rs_steps_; }

  void Range(int chunk, size_t s, size_t* begin, size_t* end) const {
    size_t b, e;
    SegmentRange(bounds_[chunk + 1] - bounds_[chunk], segments_, s, &b, &e);
    *begin = bounds_[chunk] + b;
    *end = bounds_[chunk] + e;
  }

  Blockers BlockersOf(const Segment& seg) const {
    Blockers b;
    int k = seg.step + 1;
    if (k < total_steps_) {
      if (!InReduceScatter(k) && rs_steps_ > 0) {
        // Receiving into work overwrites what our reduce-scatter send of the same
        // chunk read (step k - rs_steps_ sent chunk r-k-1 too): it must be done.
        size_t rb, re;
        Range(AgRecvChunk(rank_, k - rs_steps_, n_), seg.index, &rb, &re);
        if (codec_.DirectTarget(rb, re - rb) != nullptr)
          b.sends[b.count++] = seg.sends[k - rs_steps_];
      }
      if (k >= 2 && seg.send_scratch_used[k % 2]) b.sends[b.count++] = seg.sends[k - 2];
    } else if (next_ < segments_) {
      // The next segment inherits this one's send scratch.
      for (int j = std::max(0, total_steps_ - 2); j < total_steps_; ++j)
        b.sends[b.count++] = seg.sends[j];
    }
    return b;
  }

  Status StartSegment(Segment::Scratch scratch) {
    Segment& seg = segs_[next_];
    seg.index = next_++;
    seg.sends.assign(total_steps_, 0);
    seg.send_scratch_used[0] = seg.send_scratch_used[1] = false;
    seg.scratch = std::move(scratch);
    queue_.push_back(&seg);
    return Post(seg);
  }

  // Posts the receive and the send of segment `seg` at its current step; the
  // buffers it reuses are free (BlockersOf).
  Status Post(Segment& seg) {
    int k = seg.step;
    bool rs = InReduceScatter(k);
    int send_chunk = rs ? RsSendChunk(rank_, k, n_) : AgSendChunk(rank_, k - rs_steps_, n_);
    int recv_chunk = rs ? RsRecvChunk(rank_, k, n_) : AgRecvChunk(rank_, k - rs_steps_, n_);
    // Contributions carried: k+1 during reduce-scatter, all n in the all-gather.
    int contributions = rs ? k + 1 : n_;
    size_t rb, re, sb, se;
    Range(recv_chunk, seg.index, &rb, &re);
    Range(send_chunk, seg.index, &sb, &se);

    // The all-gather passes on at step k the chunk it received at step k - 1.
    // Where that image is the codec's own encoding of it (ForwardsFinalImage),
    // the received buffer becomes this step's send buffer, and the buffer it
    // replaces (its send, two steps back, is done: BlockersOf) takes the receive.
    const bool forward = ForwardsReceived(seg, k, sb, se);
    if (forward) std::swap(seg.scratch.recv, seg.scratch.send[k % 2]);

    size_t recv_bytes = codec_.WireBytes(re - rb, rs ? k + 1 : n_);
    seg.recv_streamed = rs && stream_reduce_ && ch_.StreamsReceives(recv_bytes);
    seg.recv_direct = false;
    if (seg.recv_streamed) {
      // Combined from the transport's buffer as it arrives. Nothing else reads
      // or writes the range before this segment's next step sends it.
      seg.sink.Start(&codec_, rb, re - rb, k + 1);
      SIEVE_RETURN_IF_ERROR(ch_.RecvToSink(RingPrev(rank_, n_), &seg.sink, recv_bytes, &seg.recv));
    } else {
      void* target = rs ? nullptr : codec_.DirectTarget(rb, re - rb);
      seg.recv_direct = target != nullptr;
      if (target == nullptr) {
        SIEVE_RETURN_IF_ERROR(seg.scratch.recv.Reserve(recv_bytes));
        target = seg.scratch.recv.data();
      }
      SIEVE_RETURN_IF_ERROR(ch_.Recv(RingPrev(rank_, n_), target, recv_bytes, &seg.recv));
    }
    prof_.Mark(Profile::kPost);

    const void* wire;
    if (forward) {
      seg.send_scratch_used[k % 2] = true;
      wire = seg.scratch.send[k % 2].data();
    } else {
      void* scratch = nullptr;
      seg.send_scratch_used[k % 2] = codec_.EncodeNeedsScratch(sb, se - sb, contributions);
      if (seg.send_scratch_used[k % 2]) {
        ScratchBuffer& buf = seg.scratch.send[k % 2];
        SIEVE_RETURN_IF_ERROR(buf.Reserve(codec_.WireBytes(se - sb, contributions)));
        scratch = buf.data();
      }
      wire = codec_.Encode(sb, se - sb, contributions, scratch);
    }
    prof_.Mark(Profile::kEncode);
    SIEVE_RETURN_IF_ERROR(codec_.status());
    Status st = ch_.Send(RingNext(rank_, n_), wire, codec_.WireBytes(se - sb, contributions),
                         &seg.sends[k]);
    prof_.Mark(Profile::kPost);
    return st;
  }

  // Whether step k sends on, as it is, the final image received into scratch at
  // step k - 1 (send range [sb, se)).
  bool ForwardsReceived(const Segment& seg, int k, size_t sb, size_t se) const {
    if (!forward_final_ || k <= rs_steps_ || seg.recv_direct || seg.recv_streamed) return false;
    size_t pb, pe;
    Range(AgRecvChunk(rank_, k - 1 - rs_steps_, n_), seg.index, &pb, &pe);
    return pb == sb && pe == se;
  }

  // Folds the segment just received into work.
  void Absorb(Segment& seg) {
    int k = seg.step;
    size_t b, e;
    if (InReduceScatter(k)) {
      Range(RsRecvChunk(rank_, k, n_), seg.index, &b, &e);
      if (!seg.recv_streamed)
        codec_.ReduceInto(b, e - b, k + 1, seg.scratch.recv.data(), /*first=*/true);
      prof_.Mark(Profile::kCombine);
      if (k == rs_steps_ - 1) {  // chunk r is complete
        codec_.Finalize(b, e - b);
        if (opt_.all_gather) codec_.Deliver(b, e - b);
        prof_.Mark(Profile::kDecode);
      }
    } else {
      Range(AgRecvChunk(rank_, k - rs_steps_, n_), seg.index, &b, &e);
      if (!seg.recv_direct && rs_steps_ > 0 && forward_final_) {
        // Nothing reads the range's work again: the image is sent on as received.
        codec_.DecodeAndDeliver(b, e - b, seg.scratch.recv.data());
      } else {
        if (!seg.recv_direct) codec_.Decode(b, e - b, seg.scratch.recv.data());
        if (rs_steps_ > 0) codec_.Deliver(b, e - b);  // the last hop of this range
      }
      prof_.Mark(Profile::kDecode);
    }
  }

  Channel& ch_;
  Codec& codec_;
  std::vector<size_t> bounds_;
  RingOptions opt_;
  int n_ = 1;
  int rank_ = 0;
  int rs_steps_ = 0;
  int total_steps_ = 0;
  size_t segments_ = 1;
  size_t window_ = 2;
  bool stream_reduce_ = false;  // the codec combines pieces (reduce-scatter receives may stream)
  bool forward_final_ = false;  // the all-gather sends received images on (ForwardsFinalImage)
  size_t next_ = 0;
  std::vector<Segment> segs_;
  std::deque<Segment*> queue_;
  Profile prof_;
};

Ring::Ring(Channel& channel, Codec& codec, std::vector<size_t> bounds, const RingOptions& options)
    : run_(new Run(channel, codec, std::move(bounds), options)) {}
Ring::~Ring() = default;
Status Ring::Start() { return run_->Start(); }
bool Ring::Idle() const { return run_->Idle(); }
bool Ring::Ready() const { return run_->Ready(); }
Status Ring::Advance() { return run_->Advance(); }
Status Ring::Finish() { return run_->Finish(); }

Status RunRing(Channel& channel, Codec& codec, const std::vector<size_t>& bounds,
               const RingOptions& options) {
  Ring ring(channel, codec, bounds, options);
  SIEVE_RETURN_IF_ERROR(ring.Start());
  while (!ring.Idle()) SIEVE_RETURN_IF_ERROR(ring.Advance());
  return ring.Finish();
}

}  // namespace sieve::algo
