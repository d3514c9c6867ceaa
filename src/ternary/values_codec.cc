// TernaryValuesCodec (values_codec.h): every rank's values in, every rank's codes
// made here with their owner's stream, then the codes' codec's own one-pass decode.
#include "ternary/values_codec.h"

#include <cstring>
#include <limits>

#include "core/status.h"

namespace sieve::algo {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The scale round's max (ternary_scales.cc): a NaN scale (non-finite input) wins as
// +infinity and comes back as NaN, so the scales are the same bits as there.
float OnWire(float s) { return s < kInf ? s : kInf; }

}  // namespace

TernaryValuesCodec::TernaryValuesCodec(TernaryCodec& codes, const kernels::TernarySource& src,
                                       size_t elems, float* scales, int rank, int nranks,
                                       float proposal)
    : codes_(codes),
      src_(src),
      elems_(elems),
      scales_(scales),
      rank_(rank),
      nranks_(nranks),
      proposal_(proposal) {
  src_.scales = scales;
}

void TernaryValuesCodec::NotOneShot() {
  if (status_.ok())
    status_ = Status::Internal("the one-shot of values runs only as the one-shot all-reduce");
}

bool TernaryValuesCodec::WholeCall(size_t offset, size_t elems) {
  if (offset == 0 && elems == elems_) return true;
  if (status_.ok())
    status_ = Status::Internal(
        StrFormat("the one-shot of values got elements %zu..%zu of %zu: it needs the whole call "
                  "in one range",
                  offset, offset + elems, elems_));
  return false;
}

const void* TernaryValuesCodec::Encode(size_t, size_t, int, void* scratch) {
  NotOneShot();
  return scratch;
}

void TernaryValuesCodec::CopyInputWire(size_t offset, size_t elems, void* scratch) {
  if (!WholeCall(offset, elems)) return;
  float* values = static_cast<float*>(scratch);
  kernels::TernaryStage(src_, 0, elems, values);
  std::memcpy(values + elems, &proposal_, sizeof(float));
  kernels::TernaryAbsMax(src_, elems, values + elems + 1);
}

void TernaryValuesCodec::DecodeWires(size_t offset, size_t elems, const void* const* wires,
                                     int n) {
  if (!WholeCall(offset, elems) || n != nranks_) return NotOneShot();
  if (!codes_.DecodesWires()) return NotOneShot();  // no output to deliver into
  const size_t nblocks = (elems + src_.block - 1) / src_.block;
  // Rank p's values as a source: float32, unmasked, no residual, p's own stream.
  std::vector<kernels::TernarySource> values(n, src_);
  std::vector<float> theirs(nblocks), most(nblocks, 0.0f);
  proposals_.assign(n, 0.0f);
  for (int p = 0; p < n; ++p) {
    kernels::TernarySource& v = values[p];
    v.dtype = kernels::DType::kFloat32;
    v.data = wires[p];
    v.idx = nullptr;
    v.bits = nullptr;
    v.residual = nullptr;
    v.rng.rank = static_cast<uint32_t>(p);
    std::memcpy(&proposals_[p], static_cast<const float*>(wires[p]) + elems, sizeof(float));
    // The sender's abs-maxes: with feedback the gradient's, not the values' (g + e_prev).
    std::memcpy(theirs.data(), static_cast<const float*>(wires[p]) + elems + 1,
                nblocks * sizeof(float));
    for (size_t b = 0; b < nblocks; ++b) {
      const float s = OnWire(theirs[b]);
      if (s > most[b]) most[b] = s;
    }
  }
  for (size_t b = 0; b < nblocks; ++b)
    scales_[b] = most[b] < kInf ? most[b] : std::numeric_limits<float>::quiet_NaN();
  // Every rank's codes; ours from our input, which updates our residual in that pass.
  const int w = kernels::TernaryBits(src_.levels);
  const size_t bytes = kernels::TernaryPackedBytes(elems, w);
  std::vector<uint8_t> codes(bytes * static_cast<size_t>(n));
  std::vector<const void*> images(n);
  for (int p = 0; p < n; ++p) {
    kernels::TernarySource s = p == rank_ ? src_ : values[p];
    s.scales = scales_;
    images[p] = codes.data() + bytes * static_cast<size_t>(p);
    kernels::TernaryQuantizePack(s, 0, elems, w, codes.data() + bytes * static_cast<size_t>(p));
  }
  codes_.DecodeWires(0, elems, images.data(), n);
}

void TernaryValuesCodec::LoadInput(size_t offset, size_t elems) {
  if (!WholeCall(offset, elems)) return;
  kernels::TernaryAbsMax(src_, elems, scales_);
  codes_.LoadInput(0, elems);
}

void TernaryValuesCodec::Deliver(size_t offset, size_t elems) { codes_.Deliver(offset, elems); }

}  // namespace sieve::algo
