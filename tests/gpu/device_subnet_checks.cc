// The subnet all-reduces (SDP, D2FT; dense and at L levels, error feedback, masked) on
// device buffers against the host path on the same inputs, bit for bit, over
// the whole recvbuff: segments this rank does not hold, and D2FT's untouched
// ones, must keep the value recvbuff had (a sentinel), as on the host.
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device_check_ok.h"
#include "gpu/device_checks.h"
#include "support/ternary_reference.h"

namespace sieve_test {
namespace {

// One subnet call on (sendbuff, recvbuff, stream).
using SubnetCall = std::function<sieveResult_t(const void*, void*, sieveStream_t)>;

constexpr size_t kCount = 1003;

// One case's buffers, the same from step to step (error feedback keys its residuals
// by sendbuff): host and device, recvbuff the sendbuff in place.
struct Buffers {
  std::vector<char> host_send, host_recv;
  char* d_send = nullptr;
  char* d_recv = nullptr;
  Buffers(DeviceMemory& mem, size_t bytes, bool in_place) : host_send(bytes), host_recv(bytes) {
    d_send = static_cast<char*>(mem.Alloc(bytes));
    d_recv = in_place ? d_send : static_cast<char*>(mem.Alloc(bytes));
  }
};

// Runs `call` on host buffers and on device buffers (in place or not) from the same
// input and the same prior recvbuff (`sentinel` bytes), and compares the whole
// recvbuff; "" or what differs.
std::string DeviceMatchesHost(sieveComm_t comm, DeviceMemory& mem, const SubnetCall& call,
                              const std::vector<char>& send, const std::vector<char>& sentinel,
                              bool in_place, Buffers& b, const std::string& what) {
  const size_t bytes = send.size();
  b.host_send = send;
  b.host_recv = sentinel;
  char* host_out = in_place ? b.host_send.data() : b.host_recv.data();
  sieveResult_t r = Completed(comm, call(b.host_send.data(), host_out, nullptr));
  if (r != sieveSuccess) return what + ": host: " + sieveGetLastError(comm);
  mem.Upload(b.d_send, send.data(), bytes);
  if (!in_place) mem.Upload(b.d_recv, sentinel.data(), bytes);
  r = Completed(comm, call(b.d_send, b.d_recv, mem.stream()));
  if (r != sieveSuccess) return what + ": device: " + sieveGetLastError(comm);
  mem.Synchronize();
  std::vector<char> got(bytes);
  mem.Download(got.data(), b.d_recv, bytes);
  for (size_t i = 0; i < bytes; ++i)
    if (got[i] != host_out[i])
      return what + ": the device result differs from the host path's from byte " +
             std::to_string(i);
  return "";
}

// Four segments: held by all, by ranks {0, 1}, by the last rank alone, by all.
struct Layout {
  std::vector<std::vector<int>> holders;
  std::vector<sieveSegment_t> segments;
  Layout(int n) {
    std::vector<int> all(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) all[static_cast<size_t>(r)] = r;
    holders = {all, {0, 1}, {n - 1}, all};
    const size_t offsets[] = {0, 200, 500, 700, kCount};
    for (size_t k = 0; k < 4; ++k)
      segments.push_back({offsets[k], offsets[k + 1] - offsets[k], holders[k].data(),
                          static_cast<int>(holders[k].size())});
  }
};

}  // namespace

std::string SubnetChecks(sieveComm_t comm, int rank, int n, DeviceMemory& mem) {
  const Layout shape(n);
  sieveLayout_t layout = nullptr;
  CHECK_OK(sieveLayoutRegister(comm, kCount, shape.segments.data(), 4, &layout), "layout");
  // D2FT: rank r touches the held segments k with k + r even; the schedule is every row.
  const auto holds = [&](int r, int k) {
    for (int h : shape.holders[static_cast<size_t>(k)])
      if (h == r) return true;
    return false;
  };
  std::vector<unsigned char> schedule(static_cast<size_t>(n), 0);
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < 4; ++k)
      if (holds(r, k) && (k + r) % 2 == 0) schedule[static_cast<size_t>(r)] |= 1u << k;
  const unsigned char* touched = &schedule[static_cast<size_t>(rank)];
  struct Case {
    const char* name;
    sieveDataType_t dtype;
    int levels;  // 0: dense
    bool d2ft, with_schedule, feedback, in_place, masked = false;
  };
  const Case cases[] = {
      {"sdp dense", sieveFloat32, 0, false, false, false, false},
      {"sdp dense in place", sieveBfloat16, 0, false, false, false, true},
      {"sdp L=7 feedback", sieveFloat32, 7, false, false, true, false},
      {"d2ft gathered", sieveFloat32, 0, true, false, false, false},
      {"d2ft schedule in place", sieveFloat16, 0, true, true, false, true},
      {"d2ft gathered L=1 feedback", sieveFloat32, 1, true, false, true, false},
      {"d2ft schedule L=3", sieveBfloat16, 3, true, true, false, false},
      {"sdp L=3 masked feedback", sieveFloat32, 3, false, false, true, false, true},
      {"d2ft gathered L=7 masked in place", sieveFloat16, 7, true, false, false, true, true},
  };
  // About 2/3 kept; all of segment 1 dropped (its group moves nothing).
  std::vector<unsigned char> keep(kCount);
  for (size_t j = 0; j < kCount; ++j) keep[j] = (j * 7 + j / 5) % 3 != 1 && (j < 200 || j >= 500);
  sieveMask_t mask = nullptr;
  CHECK_OK(sieveMaskRegister(comm, keep.data(), sieveMaskBytes, kCount, sieveMaskStrict, &mask),
           "mask");
  std::string e;
  std::vector<std::unique_ptr<Buffers>> kept;
  int k = 0;
  for (const Case& c : cases) {
    const size_t es = c.dtype == sieveFloat32 ? 4 : 2;
    std::vector<char> send(kCount * es), sentinel(kCount * es);
    std::memset(sentinel.data(), 0x5a, sentinel.size());
    // Residuals are keyed by sendbuff: every case's buffers stay alive, never reused.
    Buffers& buffers = *kept.emplace_back(std::make_unique<Buffers>(mem, send.size(), c.in_place));
    for (int step = 0; step < (c.feedback ? 2 : 1) && e.empty(); ++step) {
      FillTernaryInput(90 + 3 * k + step, rank, c.dtype, kCount, send.data());
      const sieveTernaryParams_t p = {11u + static_cast<uint64_t>(k), static_cast<uint64_t>(step),
                                      97, c.masked ? mask : nullptr, c.feedback ? 1 : 0};
      const unsigned char* table = c.with_schedule ? schedule.data() : nullptr;
      const unsigned char* mine = c.with_schedule ? nullptr : touched;
      SubnetCall call = [&](const void* in, void* out, sieveStream_t s) {
        if (!c.d2ft && c.levels == 0)
          return sieveAllReduceSubnet(in, out, kCount, c.dtype, layout, comm, s);
        if (!c.d2ft)
          return sieveAllReduceSubnetQuantized(in, out, kCount, c.dtype, layout, c.levels, &p,
                                               comm, s);
        if (c.levels == 0)
          return sieveAllReduceD2ft(in, out, kCount, c.dtype, layout, mine, table, comm, s);
        return sieveAllReduceD2ftQuantized(in, out, kCount, c.dtype, layout, mine, table,
                                           c.levels, &p, comm, s);
      };
      e = DeviceMatchesHost(comm, mem, call, send, sentinel, c.in_place, buffers,
                            std::string(c.name) + " step " + std::to_string(step));
    }
    if (!e.empty()) break;
    ++k;
  }
  CHECK_OK(sieveLayoutDeregister(layout), "layout deregister");
  CHECK_OK(sieveMaskDeregister(mask), "mask deregister");
  return e;
}

}  // namespace sieve_test
