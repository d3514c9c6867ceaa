// The bootstrap root of one job: a poll() loop on its own thread that serves every connection
// at once with per-connection handshake deadlines, and a process-local registry so a rank in the
// root's own process can wait for the root to finish answering the others.
#ifndef SIEVE_TRANSPORT_BOOTSTRAP_ROOT_SERVER_H_
#define SIEVE_TRANSPORT_BOOTSTRAP_ROOT_SERVER_H_

#include <string>

#include "core/status.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/socket.h"
#include "transport/bootstrap/unique_id.h"

namespace sieve::transport {

// Starts the detached thread serving the job named by id (whose listener is `listener`).
// The thread owns everything it uses. REQUIRES: timeouts checked positive.
Status LaunchRootServer(Socket listener, const UniqueId& id, const BootstrapTimeouts& timeouts);

// When the root of `id` runs in this process, waits until it has finished (answered every rank
// it could, or its deadlines passed) or until `deadline`. Returns at once otherwise.
void WaitForLocalRoot(const char id[kUniqueIdBytes], Deadline deadline);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_BOOTSTRAP_ROOT_SERVER_H_
