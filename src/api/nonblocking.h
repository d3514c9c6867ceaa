// Non-blocking communicators at the C boundary: reading sieveConfig_t, making
// handles (ready now, or created on their background thread), the submitter
// that hands a communicator's work to that thread, and leaving background
// work behind on destroy and abort.
#ifndef SIEVE_API_NONBLOCKING_H_
#define SIEVE_API_NONBLOCKING_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/api_guard.h"

namespace sieve {

struct CommOptions {
  int blocking = SIEVE_CONFIG_UNDEF_INT;  // 0, 1, or undefined (the caller's default)
  std::string name;                       // "" when the config named none
};
// Checks a user's config (size, magic, version, field values); NULL gives the defaults.
Status ReadCommConfig(const sieveConfig_t* config, CommOptions* out);

// A live handle for a communicator that exists (blocking creation).
sieveComm_t NewReadyHandle(std::unique_ptr<Comm> impl);
// A non-blocking handle whose communicator does not exist yet: it has its
// background thread; rank/size are what Count/UserRank report meanwhile
// (-1: not known). Not live until published (LiveComms().Publish).
std::shared_ptr<CommHandle> NewPendingHandle(int rank, int size);

// Makes a communicator on `worker` with `create` and publishes it in `handle`
// (null: nothing to publish, a split's no-color rank). Every state in `holds`
// is in progress until then. A failure is kept as the handle's init error.
using CreateFn = std::function<Status(std::unique_ptr<Comm>*)>;
void CreateInBackground(BackgroundWorker* worker, CommHandle* handle,
                        std::vector<std::shared_ptr<AsyncState>> holds, CreateFn create);

// sieveCommGetAsyncError's answer for `comm` once its background work is done, or after
// timeout_ms (negative: no limit; 0: at once) with sieveInProgress. Sleeps on the handle's
// state; an abort from another thread ends the wait (InvalidUsage) and the communicator it
// frees is not touched after.
Status WaitAsyncError(CommHandle* comm, int timeout_ms, sieveResult_t* out);

// Destroy: waits until nothing touches the communicator, stops its thread.
void FinishBackground(CommHandle* comm);
// Abort: stops the background work (requests an abort of the communicator)
// and waits for it until `deadline_s` from now at most. Returns false when
// some of it still runs (the communicator must then not be freed).
bool AbandonBackground(CommHandle* comm, double deadline_s);

}  // namespace sieve

#endif  // SIEVE_API_NONBLOCKING_H_
