// The fan-out of a quantized group: D2FT's holders outside the contributors T
// receive the group's result as the ring holds it, not in the datatype. Each
// sender passes its final chunk as one message: the agreed scales of the scale
// blocks the chunk touches (float32 each), then the chunk's final integer sums
// in TernaryBits(|T| L) bits. A receiver dequantizes it exactly as the senders
// do (kernels::TernaryDequantizeRange of the same sums and scales), into its
// pieces of recvbuff: the same bits at about log2(2|T|L + 1) bits per element
// instead of the datatype's 16 or 32.
#ifndef SIEVE_SUBNET_QUANTIZED_FAN_H_
#define SIEVE_SUBNET_QUANTIZED_FAN_H_

#include <cstddef>

#include "kernels/dtype.h"
#include "kernels/ternary.h"
#include "subnet/group_ranges.h"

namespace sieve::subnet {

struct FanFormat {
  kernels::DType dtype = kernels::DType::kFloat32;
  size_t block = 2048;  // elements per scale block (group positions)
  int width = 0;        // bits per final sum
  kernels::TernaryWork wt = kernels::TernaryWork::kInt8;
  int divisor = 1;      // |T| * L
};

// The group's format: `senders` contributors at `levels` levels.
FanFormat FanFormatOf(int senders, int levels, size_t block, kernels::DType dtype);

// Bytes of the message of the chunk [begin, begin + elems) (elems > 0).
size_t FanBytes(const FanFormat& f, size_t begin, size_t elems);

// Sender: the message from the agreed scales (every block of the group) and the
// chunk's final sums (`sums`: elems elements of f.wt, the chunk's first first).
void EncodeFan(const FanFormat& f, size_t begin, size_t elems, const float* scales,
               const void* sums, void* msg);

// Receiver: the message's chunk dequantized into its pieces of `recv` (the
// buffer, elements of the datatype).
void DecodeFan(const FanFormat& f, const GroupRanges& ranges, size_t begin, size_t elems,
               const void* msg, char* recv);

}  // namespace sieve::subnet

#endif  // SIEVE_SUBNET_QUANTIZED_FAN_H_
