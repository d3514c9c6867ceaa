// The stream-ordering plan of a staged device operation (host-only, pure).
//
// A staged operation is a list of chunks. Chunk i is staged in slot i % k
// (k slots in flight); its handshake, where the stream is the device's queue
// and the progress thread runs the network part:
//
//   stream:   CopyIn(i) -> SignalReady(i) ... WaitDone(i) -> CopyOut(i) -> CopyIn(i+k) ...
//   progress:            AwaitReady(i) -> Run(i) -> PublishDone(i)
//
// The stream first stages chunks 0..k-1, then for each chunk i waits for the
// progress thread, copies the result out and stages chunk i+k into the slot
// just emptied, so copies of one chunk overlap the network of the others. A
// slot's last use ends with SignalFreed: from then on the pool may lend it to
// another operation (or another stream).
#ifndef SIEVE_GPU_STREAM_PLAN_H_
#define SIEVE_GPU_STREAM_PLAN_H_

#include <cstddef>
#include <vector>

namespace sieve::gpu {

enum class StreamStepKind { kCopyIn, kSignalReady, kWaitDone, kCopyOut, kSignalFreed };

struct StreamStep {
  StreamStepKind kind;
  size_t chunk;  // which chunk
  size_t slot;   // which slot (chunk % slots)
  size_t use;    // how many earlier chunks of this operation used the slot
};

// The stream's steps, in enqueue order, for `chunks` chunks over `slots`
// slots (slots >= 1; fewer slots than chunks reuse them in turn).
std::vector<StreamStep> PlanStream(size_t chunks, size_t slots);

// Chunk sizes: `count` elements cut into pieces of at most `max_elems`
// (>= 1), as equal as possible so the pipeline stays even. Empty for count 0.
std::vector<size_t> SplitEven(size_t count, size_t max_elems);

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_STREAM_PLAN_H_
