#include "algo/reduce_sink.h"

#include <algorithm>
#include <cstring>

namespace sieve::algo {

void ReduceSink::Start(Codec* codec, size_t offset, size_t elems, int contributions) {
  codec_ = codec;
  offset_ = offset;
  elems_ = elems;
  contributions_ = contributions;
  elem_bytes_ = codec->PieceElementBytes();
  parts_.clear();
}

void ReduceSink::Consume(size_t at, const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  const size_t image = elems_ * elem_bytes_;
  if (at >= image) return;  // beyond the image: the receive fails as truncated
  bytes = std::min(bytes, image - at);
  size_t index = at / elem_bytes_;
  const size_t head = at % elem_bytes_;
  if (head != 0) {  // the piece begins inside an element
    const size_t len = std::min(bytes, elem_bytes_ - head);
    AddPart(index, head, p, len);
    p += len;
    bytes -= len;
    ++index;
  }
  const size_t whole = bytes / elem_bytes_;
  if (whole != 0) codec_->ReduceInto(offset_ + index, whole, contributions_, p, /*first=*/true);
  const size_t tail = bytes % elem_bytes_;
  if (tail != 0) AddPart(index + whole, 0, p + whole * elem_bytes_, tail);
}

void ReduceSink::AddPart(size_t index, size_t from, const unsigned char* data, size_t len) {
  auto it = std::find_if(parts_.begin(), parts_.end(),
                         [index](const Part& part) { return part.index == index; });
  if (it == parts_.end()) {
    parts_.push_back(Part{index, 0, {}});
    it = parts_.end() - 1;
  }
  std::memcpy(it->bytes + from, data, len);
  it->have += len;
  if (it->have < elem_bytes_) return;
  codec_->ReduceInto(offset_ + index, 1, contributions_, it->bytes, /*first=*/true);
  parts_.erase(it);
}

}  // namespace sieve::algo
