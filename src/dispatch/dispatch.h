// The one seam between the entry points and everything below them. api/ checks
// a call's arguments, describes it once (coll::Call) and submits it here, once.
// Here, and only here, the call's buffers are classified (host or device, one
// plan::ChooseMemory per call: plan/device_choice.h) and the call is handed to the mode
// registered for its kind (dispatch/modes.h): on host buffers its run_on_host,
// as comm/group.h schedules it (now, at sieveGroupEnd, on the background thread;
// after the communicator's queued device work); on device buffers its
// enqueue_on_device, on the caller's thread. Host buffers never enter gpu/.
#ifndef SIEVE_DISPATCH_DISPATCH_H_
#define SIEVE_DISPATCH_DISPATCH_H_

#include "coll/call.h"

namespace sieve::dispatch {

// Runs, queues or enqueues `call` on `comm` (a collective, or a send/receive
// when call.peer >= 0). A collective of count 0 moves no data but still takes
// its sequence number and joins the agreement (DESIGN.md 1.6), on the host: its
// buffers are not looked at, unless its mode refuses device buffers (then at
// any count).
Status Submit(Comm* comm, const coll::Call& call);

// Submit for a collective of a mode (masked, quantized, top-k...): describes it
// as a coll::Call from what every such entry point has, then submits it.
Status SubmitCollective(Comm* comm, const char* entry, algo::OpKind kind,
                        const coll::CollArgs& args, std::shared_ptr<const coll::ModeParams> params,
                        CUstream_st* stream);

// InvalidArgument `why` when `ptr` (named `name`) is device memory: for the
// buffers that are read on the host while the call runs (a mask to register).
Status RefuseDeviceMemory(const char* name, const void* ptr, const char* why);

}  // namespace sieve::dispatch

#endif  // SIEVE_DISPATCH_DISPATCH_H_
