// One call as its entry point checked it (coll::Call) and what a mode provides
// to run the calls of its kind (coll::Mode): the seam between api/ and the rest.
// api/ builds one Call and submits it once (dispatch/dispatch.h); dispatch/
// decides host or device and hands it to the Mode registered for its kind
// (dispatch/modes.cc). Here, below every mode, so each mode folder can name them.
#ifndef SIEVE_COLL_CALL_H_
#define SIEVE_COLL_CALL_H_

#include <memory>

#include "algo/op_header.h"
#include "coll/collectives.h"

struct CUstream_st;

namespace sieve::coll {

// A mode's own parameters of a call (its mask, its ternary settings): made by
// the entry point, read by the mode that runs the call's kind (which knows the
// derived type). None for the dense collectives.
struct ModeParams {
  virtual ~ModeParams() = default;
};

struct Call {
  const char* entry = "";  // the entry point, for messages ("sieveAllReduce")
  // A collective's row of core/collectives.def (unused by send/recv).
  algo::OpKind kind = algo::OpKind::kAllReduce;
  CollArgs args;  // buffers, count, datatype, op, root
  // Which buffers this rank uses: off the root, a broadcast reads no sendbuff and
  // a reduce writes no recvbuff (their memory is not asked about).
  bool uses_send = true;
  bool uses_recv = true;
  // Send/receive: the peer, and which of the two (args.send or args.recv is the
  // buffer); -1 for a collective.
  int peer = -1;
  bool is_send = false;
  std::shared_ptr<const ModeParams> params;
  CUstream_st* stream = nullptr;  // where a call on device buffers is enqueued

  // The mode's parameters, as the type the mode made them.
  template <typename P>
  const P& Params() const {
    return static_cast<const P&>(*params);
  }
};

// How the calls of one kind run. dispatch/ has decided host or device (one
// classification per call) and when (comm/group.h: now, at sieveGroupEnd, or on
// a non-blocking communicator's background thread).
struct Mode {
  // Runs `call` on host buffers, after the communicator's queued device work.
  Status (*run_on_host)(Comm& comm, const Call& call) = nullptr;
  // Enqueues `call` (device buffers) on call.stream and returns; on the caller's
  // thread. Null: the mode refuses device buffers, at any count, saying
  // "<entry> <no_device>".
  Status (*enqueue_on_device)(Comm& comm, const Call& call) = nullptr;
  const char* no_device = nullptr;
};

}  // namespace sieve::coll

#endif  // SIEVE_COLL_CALL_H_
