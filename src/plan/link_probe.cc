#include "plan/link_probe.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

#include "algo/ring_pattern.h"
#include "core/log.h"

namespace sieve::plan {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRounds = 5;
constexpr int kNeighbours = 4;  // each side

// Peers pinged by `rank`: r +- 1..4 (a symmetric relation, so every ping has a listener).
std::vector<int> Neighbours(int rank, int n) {
  std::set<int> out;
  for (int k = 1; k <= kNeighbours && k < n; ++k) {
    out.insert(algo::Mod(rank + k, n));
    out.insert(algo::Mod(rank - k, n));
  }
  return std::vector<int>(out.begin(), out.end());
}

// One round: a ping to every neighbour, a pong back for every ping received
// (per peer and direction: ping first, then pong, on both sides, so the
// point-to-point message indices match). Lowers best[p] to this round's trip.
Status PingRound(algo::Channel& ch, const std::vector<int>& peers, std::vector<double>* best) {
  const size_t np = peers.size();
  std::vector<uint64_t> ping_in(np), pong_in(np);
  std::vector<algo::Channel::Handle> ping_recv(np), pong_recv(np);
  std::vector<bool> answered(np, false), timed(np, false);
  const uint64_t token = 0x5349455645ull;  // "SIEVE"
  for (size_t i = 0; i < np; ++i) {
    SIEVE_RETURN_IF_ERROR(ch.Recv(peers[i], &ping_in[i], sizeof(uint64_t), &ping_recv[i]));
    SIEVE_RETURN_IF_ERROR(ch.Recv(peers[i], &pong_in[i], sizeof(uint64_t), &pong_recv[i]));
  }
  const Clock::time_point t0 = Clock::now();
  for (int p : peers) SIEVE_RETURN_IF_ERROR(ch.Send(p, &token, sizeof(token)));
  size_t left = 2 * np;
  while (left > 0) {
    SIEVE_RETURN_IF_ERROR(algo::Channel::WaitUntil({&ch}, [&] {
      for (size_t i = 0; i < np; ++i)
        if ((!answered[i] && ch.Done(ping_recv[i])) || (!timed[i] && ch.Done(pong_recv[i])))
          return true;
      return false;
    }));
    for (size_t i = 0; i < np; ++i) {
      if (!timed[i] && ch.Done(pong_recv[i])) {
        SIEVE_RETURN_IF_ERROR(ch.Wait(pong_recv[i]));
        std::chrono::duration<double> trip = Clock::now() - t0;
        (*best)[i] = std::min((*best)[i], trip.count());
        timed[i] = true;
        --left;
      }
      if (!answered[i] && ch.Done(ping_recv[i])) {
        SIEVE_RETURN_IF_ERROR(ch.Wait(ping_recv[i]));
        SIEVE_RETURN_IF_ERROR(ch.Send(peers[i], &token, sizeof(token)));
        answered[i] = true;
        --left;
      }
    }
  }
  return ch.WaitAll();
}

// The smallest value over all ranks: in step j, send ours to r + 2^j and take
// the one from r - 2^j (a dissemination; min does not mind duplicates).
Status AgreeMin(algo::Channel& ch, double* value) {
  const int n = ch.size(), rank = ch.rank();
  for (int dist = 1; dist < n; dist *= 2) {
    double theirs = 0, mine = *value;
    algo::Channel::Handle h;
    SIEVE_RETURN_IF_ERROR(ch.Recv(algo::Mod(rank - dist, n), &theirs, sizeof(theirs), &h));
    SIEVE_RETURN_IF_ERROR(ch.Send(algo::Mod(rank + dist, n), &mine, sizeof(mine)));
    SIEVE_RETURN_IF_ERROR(ch.Wait(h));
    SIEVE_RETURN_IF_ERROR(ch.WaitAll());
    *value = std::min(*value, theirs);
  }
  return Status::OK();
}

}  // namespace

Status ProbeLink(Comm& comm) {
  const int n = comm.size();
  if (n < 2) return Status::OK();
  // Where the ranks span hosts every rank probes, SIEVE_LINK_RTT or not: a rank
  // that skipped it while others probe would leave them waiting.
  if (comm.hosts().nhosts < 2) {
    comm.SetLinkRtt(comm.config().link_rtt_s);
    if (comm.config().link_rtt_s > 0)
      SIEVE_INFO(kLogInit, "link: round trip %.3f ms (SIEVE_LINK_RTT)", comm.link_rtt_s() * 1e3);
    return Status::OK();
  }
  // The point-to-point tag space and counters (both sides post the same
  // messages per peer in the same order); no traffic counted.
  algo::Channel ch(comm.transport(), 0, "link probe", comm.WaitOptions(), nullptr,
                   comm.p2p_counters());
  const std::vector<int> peers = Neighbours(comm.rank(), n);
  std::vector<double> best(peers.size(), std::numeric_limits<double>::infinity());
  for (int round = 0; round < kRounds; ++round)
    SIEVE_RETURN_IF_ERROR(PingRound(ch, peers, &best).WithContext("link probe"));
  std::sort(best.begin(), best.end());
  double rtt = best[best.size() / 2];
  const double mine = rtt;
  SIEVE_RETURN_IF_ERROR(AgreeMin(ch, &rtt).WithContext("link probe"));
  if (comm.config().link_rtt_s > 0) {
    SIEVE_INFO(kLogInit, "link: round trip %.3f ms (SIEVE_LINK_RTT; measured %.3f ms)",
               comm.config().link_rtt_s * 1e3, rtt * 1e3);
    comm.SetLinkRtt(comm.config().link_rtt_s);
    return Status::OK();
  }
  comm.SetLinkRtt(rtt);
  SIEVE_INFO(kLogInit,
             "link: round trip %.3f ms (the smallest of the ranks' medians to up to %d "
             "neighbours; here %.3f ms); SIEVE_LINK_RTT sets it",
             rtt * 1e3, 2 * kNeighbours, mine * 1e3);
  return Status::OK();
}

Link LinkOf(const Comm& comm) {
  Link link;
  link.rtt_s = comm.link_rtt_s();
  link.rate_Bps = static_cast<double>(comm.config().link_rate);
  return link;
}

}  // namespace sieve::plan
