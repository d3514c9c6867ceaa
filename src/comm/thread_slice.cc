// sched_getattr/sched_setattr by system call (glibc 2.36 has no wrappers).
#include "comm/thread_slice.h"

#include <pthread.h>
#include <sched.h>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sieve {

namespace {

#if defined(__linux__) && defined(SYS_sched_setattr) && defined(SYS_sched_getattr)
struct SchedAttr {  // struct sched_attr, SCHED_ATTR_SIZE_VER0
  uint32_t size;
  uint32_t policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime;  // SCHED_OTHER: the requested slice, in ns
  uint64_t deadline;
  uint64_t period;
};

bool GetAttr(SchedAttr* attr) {
  *attr = SchedAttr{};
  return syscall(SYS_sched_getattr, 0, attr, sizeof(*attr), 0) == 0;
}
#endif

}  // namespace

bool RequestThreadSlice(uint64_t slice_ns) {
#if defined(__linux__) && defined(SYS_sched_setattr) && defined(SYS_sched_getattr)
  SchedAttr attr;
  if (!GetAttr(&attr) || attr.policy != 0 /* SCHED_OTHER */) return false;
  attr.size = sizeof(attr);
  attr.runtime = slice_ns;  // nice, flags and policy stay as read
  return syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
#else
  (void)slice_ns;
  return false;
#endif
}

uint64_t ThreadSliceNs() {
#if defined(__linux__) && defined(SYS_sched_setattr) && defined(SYS_sched_getattr)
  SchedAttr attr;
  return GetAttr(&attr) ? attr.runtime : 0;
#else
  return 0;
#endif
}

bool RequestRealtime() {
  sched_param param{};
  param.sched_priority = sched_get_priority_min(SCHED_RR);
  return param.sched_priority >= 0 &&
         pthread_setschedparam(pthread_self(), SCHED_RR, &param) == 0;
}

bool ThreadIsRealtime() {
  int policy = 0;
  sched_param param{};
  return pthread_getschedparam(pthread_self(), &policy, &param) == 0 && policy == SCHED_RR;
}

}  // namespace sieve
