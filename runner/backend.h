// runner/backend.h — the device a runner executes candidates on.
//
// One interface, two implementations: the host backend (always built;
// host_backend.cc) and the CUDA backend (cuda_backend.cu, built only with the
// CMake option CRL_WITH_CUDA; otherwise cuda_backend_stub.cc makes
// MakeCudaBackend() fail with "cuda backend not built"). MakeBackend() is the
// only place that chooses.
//
// Error model: every operation returns a BackendResult. kError is a problem
// with one request (e.g. an allocation the limits do not allow): the runner
// answers kBadRequest and carries on. kFatal means the device is unusable
// (any CUDA error: a sticky error poisons the context): the runner answers
// kCudaError and exits.
//
// Timing (Invoke): see TimedCallResult in runner/protocol.h.
//   cuda: t0 = CLOCK_MONOTONIC; record `start` on the stream; fn(stream);
//         record `end_stream` on the stream; cudaDeviceSynchronize();
//         t1 = CLOCK_MONOTONIC; record `end_sync` on the stream and wait.
//         stream_event_seconds = elapsed(start, end_stream)
//         device_sync_seconds  = elapsed(start, end_sync)
//         host_seconds         = t1 - t0
//   host: all three are CLOCK_MONOTONIC around fn(nullptr).
//
// Thread-safety: a backend is used by the runner's single serving thread.
#ifndef CRL_RUNNER_BACKEND_H_
#define CRL_RUNNER_BACKEND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace crl::runner {

enum class BackendResult { kOk, kError, kFatal };

struct CallTiming {
  double stream_event_seconds = 0;
  double device_sync_seconds = 0;
  double host_seconds = 0;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  // "host" or "cuda".
  virtual const char* Name() const = 0;

  // Creates the device context, stream, events and the L2 flush buffer
  // (l2_flush_bytes; 0 = default: 256 MiB cuda, 64 MiB host). Runs before
  // the seccomp filter is installed.
  virtual BackendResult Init(int device, uint64_t l2_flush_bytes, std::string* error) = 0;

  // e.g. "NVIDIA H100 80GB HBM3", or "host".
  virtual std::string DeviceName() const = 0;

  // The stream handed to crl_run (cudaStream_t, or nullptr on host).
  virtual void* Stream() const = 0;

  // A fresh buffer of `bytes` (a zero-byte request still gets a distinct
  // non-null pointer), 256-byte aligned.
  virtual BackendResult Allocate(uint64_t bytes, void** ptr, std::string* error) = 0;
  virtual BackendResult Free(void* ptr, std::string* error) = 0;

  // Host -> device and device -> host copies (synchronous).
  virtual BackendResult CopyIn(void* dst, const void* src, uint64_t bytes,
                               std::string* error) = 0;
  virtual BackendResult CopyOut(void* dst, const void* src, uint64_t bytes,
                                std::string* error) = 0;

  // Fills a buffer with the poison pattern of `dtype` (runner/protocol.h).
  virtual BackendResult Poison(void* ptr, int32_t dtype, uint64_t bytes,
                               std::string* error) = 0;

  // Evicts caches: writes the flush buffer, resets persisting-L2 state a
  // candidate may have configured, and synchronizes. Not timed.
  virtual BackendResult FlushL2(std::string* error) = 0;

  // Waits for all work on the device.
  virtual BackendResult Synchronize(std::string* error) = 0;

  // Runs `fn(Stream())` inside the timing points above; *rc is fn's return
  // value. Synchronizes the whole device and checks for errors afterwards.
  virtual BackendResult Invoke(const std::function<int(void*)>& fn, int* rc,
                               CallTiming* timing, std::string* error) = 0;
};

// The host backend (always available).
std::unique_ptr<DeviceBackend> MakeHostBackend();

// The CUDA backend, or nullptr with *error = "cuda backend not built".
std::unique_ptr<DeviceBackend> MakeCudaBackend(std::string* error);

// "host" or "cuda"; nullptr with *error for anything else.
std::unique_ptr<DeviceBackend> MakeBackend(const std::string& name, std::string* error);

// True if this build includes the CUDA backend.
bool CudaBackendBuilt();

}  // namespace crl::runner

#endif  // CRL_RUNNER_BACKEND_H_
