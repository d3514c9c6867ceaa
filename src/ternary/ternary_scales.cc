// The pipelined scale agreement (ternary_scales.h).
#include "ternary/ternary_scales.h"

#include <algorithm>
#include <limits>

#include "algo/ring_pattern.h"
#include "core/clock.h"
#include "core/log.h"

namespace sieve::algo {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// A NaN scale (non-finite input) must win the max on every rank: it travels
// as +infinity, which no finite scale exceeds, and comes back as NaN.
float OnWire(float s) { return s < kInf ? s : kInf; }

// The source shifted to start at element `offset` (a multiple of the block):
// its blocks are then numbered from offset / block.
kernels::TernarySource SourceAt(const kernels::TernarySource& src, size_t offset) {
  kernels::TernarySource s = src;
  if (s.idx != nullptr)
    s.idx += offset;
  else
    s.data = static_cast<const char*>(s.data) + offset * kernels::DTypeSize(s.dtype);
  if (s.residual != nullptr) s.residual += offset;
  return s;
}

}  // namespace

ScalePieces CutScalePieces(size_t elems, size_t block, const std::vector<size_t>& bounds,
                           size_t segments) {
  ScalePieces p;
  p.elems = elems;
  p.block = block;
  p.nblocks = (elems + block - 1) / block;
  segments = std::max<size_t>(1, segments);
  p.piece_of.assign(p.nblocks, static_cast<uint32_t>(segments - 1));
  for (size_t c = 0; c + 1 < bounds.size(); ++c) {
    const size_t len = bounds[c + 1] - bounds[c];
    for (size_t s = 0; s < segments; ++s) {
      size_t b, e;
      SegmentRange(len, segments, s, &b, &e);
      if (b == e) continue;
      for (size_t k = (bounds[c] + b) / block; k <= (bounds[c] + e - 1) / block; ++k)
        p.piece_of[k] = std::min(p.piece_of[k], static_cast<uint32_t>(s));
    }
  }
  p.runs.assign(segments, {});
  p.count.assign(segments, 0);
  for (size_t k = 0; k < p.nblocks; ++k) {
    auto& runs = p.runs[p.piece_of[k]];
    if (!runs.empty() && runs.back().second == k)
      ++runs.back().second;
    else
      runs.emplace_back(k, k + 1);
    ++p.count[p.piece_of[k]];
  }
  return p;
}

TernaryScales::TernaryScales(Channel& ch, ScalePieces pieces, float* scales)
    : ch_(ch), pieces_(std::move(pieces)), scales_(scales) {}

void TernaryScales::CarryProposal(float proposal) {
  carry_proposal_ = true;
  proposal_ = proposal;
}

Status TernaryScales::Start(const kernels::TernarySource& src) { return Post(&src, nullptr); }

Status TernaryScales::StartComputed() { return Post(nullptr, nullptr); }

Status TernaryScales::StartComputed(LocalAbsMax& local) {
  Status st = Post(nullptr, &local);
  local.Through(pieces_.elems);  // the codec may read any element from now on
  return st;
}

Status TernaryScales::Post(const kernels::TernarySource* src, LocalAbsMax* local) {
  const int n = ch_.size(), me = ch_.rank();
  const size_t pieces = pieces_.runs.size();
  sent_.assign(pieces, {});
  recvd_.assign(pieces, std::vector<std::vector<float>>(n));
  recv_handles_.assign(pieces, std::vector<Channel::Handle>(n, 0));
  send_handles_.assign(pieces, std::vector<Channel::Handle>(n, 0));
  // Every receive first, in piece order, so none of them waits for a slow
  // rank's message to be buffered on its way.
  for (size_t p = 0; p < pieces; ++p) {
    for (int peer = 0; peer < n; ++peer) {
      if (peer == me) continue;
      recvd_[p][peer].resize(pieces_.count[p] + (p == 0 && carry_proposal_ ? 1 : 0));
      status_ = ch_.Recv(peer, recvd_[p][peer].data(), recvd_[p][peer].size() * sizeof(float),
                         &recv_handles_[p][peer]);
      if (!status_.ok()) return status_;
    }
  }
  for (size_t p = 0; p < pieces; ++p) {
    std::vector<float>& out = sent_[p];
    out.reserve(pieces_.count[p]);
    const float* made = nullptr;
    if (local != nullptr && !pieces_.runs[p].empty())
      made = local->Through(std::min(pieces_.runs[p].back().second * pieces_.block, pieces_.elems));
    for (const auto& run : pieces_.runs[p]) {
      if (src != nullptr) {
        const size_t first = run.first * pieces_.block;
        const size_t last = std::min(run.second * pieces_.block, pieces_.elems);
        kernels::TernaryAbsMax(SourceAt(*src, first), last - first, scales_ + run.first);
      } else if (made != nullptr) {
        std::copy(made + run.first, made + run.second, scales_ + run.first);
      }
      for (size_t k = run.first; k < run.second; ++k) out.push_back(OnWire(scales_[k]));
    }
    if (p == 0 && carry_proposal_) out.push_back(proposal_);  // after the scales
    for (int step = 1; step < n; ++step) {  // the nearest peers first
      const int peer = (me + step) % n;
      status_ = ch_.Send(peer, out.data(), out.size() * sizeof(float), &send_handles_[p][peer]);
      if (!status_.ok()) return status_;
    }
  }
  return status_;
}

Status TernaryScales::Agree(size_t p) {
  const int n = ch_.size(), me = ch_.rank();
  const double start = MonotonicSeconds();
  for (int peer = 0; peer < n; ++peer)
    if (peer != me) SIEVE_RETURN_IF_ERROR(ch_.Wait(recv_handles_[p][peer]));
  waited_s_ += MonotonicSeconds() - start;
  if (p == 0 && carry_proposal_) {
    proposals_.assign(n, 0.0f);
    for (int peer = 0; peer < n; ++peer)
      proposals_[peer] = peer == me ? proposal_ : recvd_[0][peer][pieces_.count[0]];
  }
  size_t i = 0;
  for (const auto& run : pieces_.runs[p]) {
    for (size_t k = run.first; k < run.second; ++k, ++i) {
      float s = sent_[p][i];
      for (int peer = 0; peer < n; ++peer) {
        if (peer == me) continue;
        const float r = recvd_[p][peer][i];
        if (r > s) s = r;
      }
      scales_[k] = s < kInf ? s : std::numeric_limits<float>::quiet_NaN();
    }
  }
  return Status::OK();
}

void TernaryScales::Ensure(size_t offset, size_t elems) {
  if (!status_.ok() || elems == 0 || agreed_ == pieces_.runs.size()) return;
  size_t need = 0;
  for (size_t k = offset / pieces_.block; k <= (offset + elems - 1) / pieces_.block; ++k)
    need = std::max<size_t>(need, pieces_.piece_of[k]);
  for (; agreed_ <= need && status_.ok(); ++agreed_) status_ = Agree(agreed_);
}

Status TernaryScales::Finish() {
  for (; agreed_ < pieces_.runs.size() && status_.ok(); ++agreed_) status_ = Agree(agreed_);
  for (size_t p = 0; p < send_handles_.size() && status_.ok(); ++p)
    for (int peer = 0; peer < ch_.size() && status_.ok(); ++peer)
      if (peer != ch_.rank()) status_ = ch_.Wait(send_handles_[p][peer]);
  SIEVE_TRACE(kLogColl, "%s: scales in %zu pieces, %.2f ms waiting for peers' pieces",
              ch_.name().c_str(), pieces_.runs.size(), waited_s_ * 1e3);
  return status_;
}

}  // namespace sieve::algo
