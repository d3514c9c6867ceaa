// Bootstrap rendezvous: how ranks find each other before UCX is up. One root thread per job
// collects every rank's PeerInfo over TCP and hands the full table back to all of them.
#ifndef SIEVE_TRANSPORT_BOOTSTRAP_BOOTSTRAP_H_
#define SIEVE_TRANSPORT_BOOTSTRAP_BOOTSTRAP_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace sieve::transport {

// What each rank publishes (opaque bytes; binary zeros allowed).
struct PeerInfo {
  std::string worker_address;  // the UCX worker address
  std::string host_id;         // identifies the host (for shared-memory decisions)
  bool operator==(const PeerInfo& o) const {
    return worker_address == o.worker_address && host_id == o.host_id;
  }
  bool operator!=(const PeerInfo& o) const { return !(*this == o); }
};

// worker_address + host_id of one rank may not exceed this many bytes.
constexpr size_t kMaxPeerInfoBytes = size_t{1} << 20;
// Largest nranks a root accepts (bounds its bookkeeping against a bogus hello).
constexpr int kMaxBootstrapRanks = 1 << 20;

// Root: listens on the interface chosen by ifname_spec (see FindInterfaceAddress), picks a
// random secret and writes the id naming both. Starts a detached thread that serves ONE job
// and then exits: it answers all ranks with the PeerInfo table once nranks distinct ranks have
// joined, or with an error naming the missing ranks once timeout_s passes. Bad connections
// (wrong secret, garbage, duplicate/out-of-range rank, silent) are dropped with one WARN each.
// Thread-safe; may be called any number of times (one thread per job). REQUIRES: timeout_s > 0.
Status StartBootstrapRoot(const std::string& ifname_spec, double timeout_s, char id_out[128]);

// Same, listening at addr:port (torchrun-style MASTER_ADDR/MASTER_PORT; rank 0 calls it) with
// the given secret. Falls back to the wildcard address of addr's family when addr is not
// local. port 0 picks a free port (reported through the id).
Status StartBootstrapRootAt(const std::string& addr, int port, const uint8_t secret[16],
                            double timeout_s, char id_out[128]);

// The id the non-root ranks use for a MASTER_ADDR/MASTER_PORT launch (addr resolved with
// getaddrinfo, IPv4 preferred). REQUIRES: 1 <= port <= 65535.
Status MakeUniqueId(const std::string& addr, int port, const uint8_t secret[16], char id_out[128]);

// Every rank (the root's own process included): connects to the root named by id (retrying
// until timeout_s), proves the secret, sends `mine` and receives all ranks' PeerInfo in rank
// order into *all (set only on success). Errors are RemoteError: the root unreachable or silent
// past the timeout (names the root address), the root's error frame (its message, e.g. the
// missing ranks), or the root closing the connection (this hello was rejected).
// Blocks for at most about timeout_s + 1 s. Thread-safe (no shared state).
Status BootstrapExchange(const char id[128], int rank, int nranks, const PeerInfo& mine,
                         double timeout_s, std::vector<PeerInfo>* all);

}  // namespace sieve::transport

#endif  // SIEVE_TRANSPORT_BOOTSTRAP_BOOTSTRAP_H_
