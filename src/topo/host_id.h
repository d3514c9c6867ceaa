// The identity of the host a rank runs on: ranks with the same identity share
// memory (and a NIC). Read from the machine, or given by SIEVE_HOST_ID.
#ifndef SIEVE_TOPO_HOST_ID_H_
#define SIEVE_TOPO_HOST_ID_H_

#include <cstdint>
#include <string>

namespace sieve::topo {

// `override_id` when not empty; else "<hostname>/<boot_id>/net:<netns inode>":
// a container or network namespace with its own network is its own host, and
// two machines that share a hostname still differ by boot id.
std::string HostIdentity(const std::string& override_id);

// 64-bit FNV-1a of the identity: what the ranks exchange.
uint64_t HostIdHash(const std::string& identity);

}  // namespace sieve::topo

#endif  // SIEVE_TOPO_HOST_ID_H_
