// runner/host_backend.cc — the host backend: plain memory, no stream.
#include <time.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "runner/backend.h"
#include "runner/clock.h"
#include "runner/protocol.h"

namespace crl::runner {
namespace {

double Now() { return MonotonicSeconds(); }

class HostBackend : public DeviceBackend {
 public:
  ~HostBackend() override { std::free(flush_); }

  const char* Name() const override { return "host"; }

  BackendResult Init(int /*device*/, uint64_t l2_flush_bytes, std::string* error) override {
    flush_bytes_ = l2_flush_bytes != 0 ? l2_flush_bytes : (uint64_t{64} << 20);
    flush_ = static_cast<unsigned char*>(std::malloc(flush_bytes_));
    if (flush_ == nullptr) {
      if (error) *error = "allocating the cache flush buffer failed";
      return BackendResult::kError;
    }
    std::memset(flush_, 0, flush_bytes_);
    return BackendResult::kOk;
  }

  std::string DeviceName() const override { return "host"; }
  void* Stream() const override { return nullptr; }

  BackendResult Allocate(uint64_t bytes, void** ptr, std::string* error) override {
    uint64_t rounded = (bytes + 255) / 256 * 256;
    if (rounded == 0) rounded = 256;
    *ptr = std::aligned_alloc(256, rounded);
    if (*ptr == nullptr) {
      if (error) *error = "host allocation of " + std::to_string(bytes) + " bytes failed";
      return BackendResult::kError;
    }
    return BackendResult::kOk;
  }

  BackendResult Free(void* ptr, std::string*) override {
    std::free(ptr);
    return BackendResult::kOk;
  }

  BackendResult CopyIn(void* dst, const void* src, uint64_t bytes, std::string*) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return BackendResult::kOk;
  }

  BackendResult CopyOut(void* dst, const void* src, uint64_t bytes, std::string*) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return BackendResult::kOk;
  }

  BackendResult Poison(void* ptr, int32_t dtype, uint64_t bytes, std::string*) override {
    PoisonHost(ptr, dtype, bytes);
    return BackendResult::kOk;
  }

  BackendResult FlushL2(std::string*) override {
    // Write every cache line of a buffer larger than the last-level cache.
    ++flush_value_;
    volatile unsigned char* p = flush_;
    for (uint64_t i = 0; i < flush_bytes_; i += 64) p[i] = flush_value_;
    return BackendResult::kOk;
  }

  BackendResult Synchronize(std::string*) override { return BackendResult::kOk; }

  BackendResult Invoke(const std::function<int(void*)>& fn, int* rc, CallTiming* timing,
                       std::string*) override {
    double t0 = Now();
    *rc = fn(nullptr);
    double t1 = Now();
    timing->stream_event_seconds = t1 - t0;
    timing->device_sync_seconds = t1 - t0;
    timing->host_seconds = t1 - t0;
    return BackendResult::kOk;
  }

 private:
  unsigned char* flush_ = nullptr;
  uint64_t flush_bytes_ = 0;
  unsigned char flush_value_ = 0;
};

}  // namespace

std::unique_ptr<DeviceBackend> MakeHostBackend() { return std::make_unique<HostBackend>(); }

}  // namespace crl::runner
