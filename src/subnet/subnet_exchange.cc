// The group driver: one GroupRun per group this rank is in, stepped without
// blocking (Ready/Advance) and waited on together across their channels.
#include "subnet/subnet_exchange.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "algo/allreduce.h"
#include "algo/ring_pattern.h"
#include "core/log.h"
#include "kernels/dtype.h"
#include "kernels/ternary.h"
#include "plan/algo_choice.h"
#include "subnet/subnet_codec.h"

namespace sieve::subnet {
namespace {

// Groups started together: bounds the tags (operation numbers) and ring
// scratch in flight at once; waves run one after the other, in plan order.
constexpr size_t kWave = 1024;

int PositionOf(const std::vector<int>& ranks, int rank) {
  auto it = std::lower_bound(ranks.begin(), ranks.end(), rank);
  return it != ranks.end() && *it == rank ? static_cast<int>(it - ranks.begin()) : -1;
}

// One group on this rank. A sender runs the ring and sends its chunk of the
// result to every receiver as soon as it is final; a receiver takes chunk c
// from sender c.
class GroupRun {
 public:
  // rings: how many groups of this wave run the ring (or the direct exchange) on
  // this rank; they share the budget of bytes in flight one dense all-reduce has.
  // control: the call's channel (null with one rank), watched by this group's blocking waits.
  GroupRun(Comm& comm, const GroupPlan& group, uint32_t ring_seq, uint32_t fan_seq,
           const ExchangeArgs& args, size_t rings, algo::Channel* control)
      : group_(group),
        sender_pos_(PositionOf(group.senders, comm.rank())),
        ranges_(group.ranges),
        recv_(static_cast<char*>(args.recv)),
        elem_size_(kernels::DTypeSize(args.dtype)),
        bounds_(algo::BalancedSplit(group.elems, static_cast<int>(group.senders.size()))),
        // Receivers of a quantized group take the ring's sums, not the datatype.
        quantized_fan_(args.quant.levels > 0 && group.senders.size() > 1 &&
                       !group.receivers.empty()),
        fan_(quantized_fan_ ? FanFormatOf(static_cast<int>(group.senders.size()),
                                          args.quant.levels, args.quant.block, args.dtype)
                            : FanFormat{}) {
    if (sender_pos_ >= 0) {
      const int senders = static_cast<int>(group.senders.size());
      ring_ch_.reset(new algo::Channel(comm.MakeChannel(args.what, ring_seq)));
      ring_ch_->SetMembers(group.senders);
      if (control != nullptr) ring_ch_->Watch(control);
      // Ring or direct as for a dense all-reduce among the senders (every
      // member plans alike); the tree has no steps to interleave: ring. A
      // quantized group runs the ring (its scale pieces follow the ring's
      // segments), a segment holding as many elements as a dense one.
      const bool quantized = args.quant.levels > 0 && senders > 1;
      const plan::Algo chosen =
          quantized ? plan::Algo::kRing
                    : plan::ChooseGroupExchange(comm, senders, group.elems * elem_size_).algo;
      algo::AllReduceRun run = plan::FlatRun(
          comm, chosen,
          quantized ? kernels::TernaryPackedBytes(
                          std::max<size_t>(1, comm.config().segment_bytes / elem_size_),
                          kernels::TernaryBits(senders * args.quant.levels))
                    : comm.config().segment_bytes);
      run.inflight_bytes /= std::max<size_t>(1, rings);
      if (quantized) {
        algo::RingOptions options;
        options.segment_bytes = run.segment_bytes;
        options.inflight_bytes = run.inflight_bytes;
        quantized_ = new QuantizedGroupCodec(*ring_ch_, ranges_, bounds_, sender_pos_, options,
                                             args.send, args.recv, args.dtype, args.quant,
                                             comm.rank(), args.residual);
        codec_.reset(quantized_);
      } else {
        codec_.reset(new SubnetCodec(args.send, args.recv, args.dtype, ranges_, senders));
      }
      ring_ = algo::MakeSteps(*ring_ch_, *codec_, bounds_, run);
    }
    if (!group.receivers.empty()) {
      fan_ch_.reset(new algo::Channel(comm.MakeChannel(args.what, fan_seq)));
      if (control != nullptr) fan_ch_->Watch(control);
    }
  }

  void Channels(std::vector<algo::Channel*>* out) const {
    if (ring_ch_) out->push_back(ring_ch_.get());
    if (fan_ch_) out->push_back(fan_ch_.get());
  }

  Status Start() {
    if (quantized_ != nullptr) SIEVE_RETURN_IF_ERROR(quantized_->Start());  // scales first
    if (ring_) return ring_->Start();
    if (quantized_fan_) {  // chunk c from sender c as one message, decoded at the end
      fan_in_.resize(group_.senders.size());
      for (size_t c = 0; c < group_.senders.size(); ++c) {
        const size_t elems = bounds_[c + 1] - bounds_[c];
        if (elems == 0) continue;
        fan_in_[c].resize(FanBytes(fan_, bounds_[c], elems));
        SIEVE_RETURN_IF_ERROR(fan_ch_->Recv(group_.senders[c], fan_in_[c].data(), fan_in_[c].size()));
      }
      phase_ = kFinishing;
      return Status::OK();
    }
    // A receiver: chunk c comes from sender c straight into recvbuff, one
    // message per contiguous piece (the sender cuts it the same way).
    for (size_t c = 0; c < group_.senders.size(); ++c)
      for (const auto& piece : ranges_.Pieces(recv_, elem_size_, bounds_[c], bounds_[c + 1] - bounds_[c]))
        SIEVE_RETURN_IF_ERROR(fan_ch_->Recv(group_.senders[c], piece.first, piece.second));
    phase_ = kFinishing;
    return Status::OK();
  }

  bool Done() const { return phase_ == kDone; }

  bool Ready() const {
    switch (phase_) {
      case kRing:
        return ChunkFinal() || ring_->Idle() || ring_->Ready();
      case kFinishing:
        return (!ring_ch_ || ring_ch_->AllDone()) && (!fan_ch_ || fan_ch_->AllDone());
      default:
        return false;
    }
  }

  Status Advance() {
    if (phase_ == kRing) {
      // Receivers get this rank's chunk as soon as it is final, while the
      // ring's all-gather still runs.
      if (ChunkFinal()) {
        fan_sent_ = true;
        return SendChunk();
      }
      if (!ring_->Idle()) return ring_->Advance();
      phase_ = kFinishing;
      return Status::OK();
    }
    if (ring_) SIEVE_RETURN_IF_ERROR(ring_->Finish());
    if (quantized_ != nullptr) SIEVE_RETURN_IF_ERROR(quantized_->Finish());
    if (fan_ch_) SIEVE_RETURN_IF_ERROR(fan_ch_->WaitAll());
    for (size_t c = 0; c < fan_in_.size(); ++c)
      if (!fan_in_[c].empty())
        DecodeFan(fan_, ranges_, bounds_[c], bounds_[c + 1] - bounds_[c], fan_in_[c].data(),
                  recv_);
    phase_ = kDone;
    return Status::OK();
  }

 private:
  enum Phase { kRing, kFinishing, kDone };

  // True once this sender's chunk is final and not yet sent to the receivers.
  bool ChunkFinal() const {
    return fan_ch_ && !fan_sent_ &&
           codec_->finalized() == bounds_[sender_pos_ + 1] - bounds_[sender_pos_];
  }

  // This sender's chunk of recvbuff holds the final average: to every
  // receiver, piece by piece, without a copy.
  Status SendChunk() {
    const size_t begin = bounds_[sender_pos_], elems = bounds_[sender_pos_ + 1] - begin;
    if (quantized_fan_) {  // one message, the same to every receiver
      if (elems == 0) return Status::OK();
      fan_out_.resize(FanBytes(fan_, begin, elems));
      quantized_->FanMessage(fan_, begin, elems, fan_out_.data());
      for (int q : group_.receivers)
        SIEVE_RETURN_IF_ERROR(fan_ch_->Send(q, fan_out_.data(), fan_out_.size()));
      return Status::OK();
    }
    const auto pieces = ranges_.Pieces(recv_, elem_size_, begin, elems);
    for (int q : group_.receivers)
      for (const auto& piece : pieces)
        SIEVE_RETURN_IF_ERROR(fan_ch_->Send(q, piece.first, piece.second));
    return Status::OK();
  }

  const GroupPlan& group_;
  int sender_pos_;
  GroupRanges ranges_;
  char* recv_;
  size_t elem_size_;
  std::vector<size_t> bounds_;
  // The quantized fan-out (quantized_fan.h): the message this sender sends, the
  // messages this receiver takes (one per sender's chunk). Alive until the channel is done.
  bool quantized_fan_;
  FanFormat fan_;
  std::vector<char> fan_out_;
  std::vector<std::vector<char>> fan_in_;
  // A sender's codec; quantized_ is it when the group runs at L levels. It
  // holds the scale agreement's receive buffers: destroyed after the channels.
  std::unique_ptr<GroupCodec> codec_;
  QuantizedGroupCodec* quantized_ = nullptr;
  // The ring (and its scratch) first, channels last: destroying a channel
  // cancels what is still posted (after an error) while its buffers are alive.
  std::unique_ptr<algo::AllReduceSteps> ring_;
  std::unique_ptr<algo::Channel> ring_ch_, fan_ch_;
  Phase phase_ = kRing;
  bool fan_sent_ = false;
};

// Advances every run whenever it can; waits (across all their channels and
// the call's control channel) only when none can.
Status Drive(const std::vector<std::unique_ptr<GroupRun>>& runs, algo::Channel* control) {
  std::vector<algo::Channel*> channels;
  for (const auto& run : runs) run->Channels(&channels);
  // Last: a group's own failure (naming a dead peer) is reported before the
  // "failed" verdict that failure made another rank send.
  if (control != nullptr) channels.push_back(control);
  auto any_ready = [&runs] {
    for (const auto& run : runs)
      if (!run->Done() && run->Ready()) return true;
    return false;
  };
  for (;;) {
    bool all_done = true;
    for (const auto& run : runs) {
      while (!run->Done() && run->Ready()) SIEVE_RETURN_IF_ERROR(run->Advance());
      all_done = all_done && run->Done();
    }
    if (all_done) return Status::OK();
    SIEVE_RETURN_IF_ERROR(algo::Channel::WaitUntil(channels, any_ready));
  }
}

}  // namespace

Status Exchange(Comm& comm, const Plan& plan, const ExchangeArgs& args, algo::Channel* control) {
  const int me = comm.rank();
  for (size_t wave = 0; wave < plan.groups.size(); wave += kWave) {
    std::vector<std::unique_ptr<GroupRun>> runs;
    const size_t end = std::min(plan.groups.size(), wave + kWave);
    size_t rings = 0;
    for (size_t g = wave; g < end; ++g)
      if (plan.groups[g].senders.size() > 1 && PositionOf(plan.groups[g].senders, me) >= 0) ++rings;
    for (size_t g = wave; g < end; ++g) {
      const GroupPlan& group = plan.groups[g];
      // Every rank numbers every group alike, member or not.
      const uint32_t ring_seq = comm.NextSeq();
      const uint32_t fan_seq = group.receivers.empty() ? ring_seq : comm.NextSeq();
      if (!group.Involves(me)) continue;
      runs.emplace_back(new GroupRun(comm, group, ring_seq, fan_seq, args, rings, control));
    }
    if (runs.empty()) continue;
    for (const auto& run : runs) SIEVE_RETURN_IF_ERROR(run->Start());
    SIEVE_RETURN_IF_ERROR(Drive(runs, control));
  }
  return Status::OK();
}

}  // namespace sieve::subnet
