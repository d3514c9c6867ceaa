// Which threads write the handshake words a parked stream waits for. A
// stream parked on cuStreamWaitValue32 waits for a progress thread; if that
// thread then makes a call that synchronizes the device (cuMemFree,
// cuMemAlloc, cuMemFreeHost, a module load, cuStreamSynchronize of the parked
// stream), the device waits for the thread and the thread for the device:
// a deadlock. Progress threads mark themselves, so CudaDeviceOps refuses such
// calls there instead of hanging, and the fake device reports them.
#ifndef SIEVE_GPU_THREAD_ROLE_H_
#define SIEVE_GPU_THREAD_ROLE_H_

namespace sieve::gpu {

// True on a thread that writes handshake words (a progress engine's thread).
inline bool& FlagWriterThread() {
  thread_local bool writer = false;
  return writer;
}

// Called once by a progress thread when it starts.
inline void MarkFlagWriterThread() { FlagWriterThread() = true; }

}  // namespace sieve::gpu

#endif  // SIEVE_GPU_THREAD_ROLE_H_
