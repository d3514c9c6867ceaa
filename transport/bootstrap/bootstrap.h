// Bootstrap rendezvous: how ranks find each other before UCX is up. One root thread per job
// collects every rank's PeerInfo over TCP and hands the full table back to all of them. Ranks
// prove the job secret by challenge-response (wire.h); the secret itself never crosses the wire.
#ifndef SIEVE_TRANSPORT_BOOTSTRAP_BOOTSTRAP_H_
#define SIEVE_TRANSPORT_BOOTSTRAP_BOOTSTRAP_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "transport/bootstrap/wire.h"

namespace sieve::transport {

struct BootstrapTimeouts {
  double job_s = 60;       // the whole rendezvous (SIEVE_TIMEOUT)
  double handshake_s = 5;  // one connection's challenge + hello (SIEVE_BOOTSTRAP_HANDSHAKE_TIMEOUT)
};

// Root: listens on the interface chosen by ifname_spec (see FindInterfaceAddress; the listener
// is bound to that interface's address), picks a random 256-bit secret and writes the id naming
// both. Starts a detached thread that serves ONE job and then exits. It serves every connection
// at once (one poll loop): a connection gets a challenge at once and must complete an
// authenticated hello within handshake_s, else it is closed (one WARN each) without delaying
// anyone. When nranks ranks have joined, all get the table; after job_s they get an error naming
// the missing ranks. An authenticated hello that conflicts (duplicate rank, another nranks, rank
// or nranks out of range) fails the job: every rank, joined or joining later, gets an error
// naming the conflict. Thread-safe; one thread per job. REQUIRES: both timeouts > 0.
Status StartBootstrapRoot(const std::string& ifname_spec, const BootstrapTimeouts& timeouts,
                          char id_out[128]);

// Same, listening at addr:port (torchrun-style MASTER_ADDR/MASTER_PORT; rank 0 calls it) with
// the given secret. When addr is not local it listens on the address of the interface chosen
// by ifname_spec if one is given, else on the wildcard address of addr's family. port 0 picks
// a free port (reported through the id).
Status StartBootstrapRootAt(const std::string& addr, int port, const uint8_t secret[32],
                            const std::string& ifname_spec, const BootstrapTimeouts& timeouts,
                            char id_out[128]);

// The id the non-root ranks use for a MASTER_ADDR/MASTER_PORT launch (addr resolved with
// getaddrinfo, IPv4 preferred). REQUIRES: 1 <= port <= 65535.
Status MakeUniqueId(const std::string& addr, int port, const uint8_t secret[32], char id_out[128]);

// Every rank (the root's own process included): connects to the root named by id (retrying
// until timeouts.job_s), answers its challenge, sends `mine` and receives all ranks' PeerInfo in
// rank order into *all (set only on success). rank and nranks are sent as given so that the
// root can fail the whole job on a bad pair. Errors: RemoteError for an unreachable or silent
// root (names its address), the root's error reply (its message: missing or conflicting ranks),
// a root that fails to prove the secret, or one that closed the connection; InvalidUsage when
// the root speaks another protocol version (names both). When this process hosts the root and
// the job failed, waits (at most handshake_s) until the root has answered the other ranks.
// Blocks for at most about job_s + 1 s. Thread-safe (no shared state).
Status BootstrapExchange(const char id[128], int rank, int nranks, const PeerInfo& mine,
                         const BootstrapTimeouts& timeouts, std::vector<PeerInfo>* all);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_BOOTSTRAP_BOOTSTRAP_H_
