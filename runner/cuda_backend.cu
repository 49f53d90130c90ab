// runner/cuda_backend.cu — the CUDA backend (built with CRL_WITH_CUDA=ON).
//
// Every CUDA error is fatal (BackendResult::kFatal): the runner reports
// kCudaError and exits, because a sticky error leaves the context unusable.
// Note: a candidate built with its own (static) CUDA runtime records launch
// errors in ITS runtime, not ours; such a launch simply does not run, the
// poisoned outputs stay poisoned, and the worker rejects the result. Faults
// inside kernels are sticky in the shared context and are caught here by
// cudaDeviceSynchronize().
#include <cuda_runtime.h>
#include <time.h>

#include <cstdint>
#include <string>

#include "crl/kernel.h"
#include "runner/backend.h"
#include "runner/clock.h"
#include "runner/protocol.h"

namespace crl::runner {
namespace {

double Now() { return MonotonicSeconds(); }

template <typename T>
__global__ void FillKernel(T* p, uint64_t n, T value) {
  uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x;
  uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (; i < n; i += stride) p[i] = value;
}

class CudaBackend : public DeviceBackend {
 public:
  ~CudaBackend() override {
    // Best effort; the process is about to exit anyway.
    if (flush_ != nullptr) cudaFree(flush_);
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (end_stream_ != nullptr) cudaEventDestroy(end_stream_);
    if (end_sync_ != nullptr) cudaEventDestroy(end_sync_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  const char* Name() const override { return "cuda"; }

  BackendResult Init(int device, uint64_t l2_flush_bytes, std::string* error) override {
    device_ = device;
    int count = 0;
    if (!Ok(cudaGetDeviceCount(&count), "cudaGetDeviceCount", error)) return BackendResult::kFatal;
    if (device < 0 || device >= count) {
      if (error) {
        *error = "cuda device " + std::to_string(device) + " does not exist (" +
                 std::to_string(count) + " visible)";
      }
      return BackendResult::kFatal;
    }
    cudaDeviceProp prop;
    if (!Ok(cudaSetDevice(device), "cudaSetDevice", error) ||
        !Ok(cudaFree(nullptr), "context creation", error) ||
        !Ok(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties", error) ||
        !Ok(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate",
            error) ||
        !Ok(cudaEventCreate(&start_), "cudaEventCreate", error) ||
        !Ok(cudaEventCreate(&end_stream_), "cudaEventCreate", error) ||
        !Ok(cudaEventCreate(&end_sync_), "cudaEventCreate", error)) {
      return BackendResult::kFatal;
    }
    name_ = prop.name;
    flush_bytes_ = l2_flush_bytes != 0 ? l2_flush_bytes : (uint64_t{256} << 20);
    if (!Ok(cudaMalloc(&flush_, flush_bytes_), "allocating the L2 flush buffer", error) ||
        !Ok(cudaMemset(flush_, 0, flush_bytes_), "cudaMemset", error) ||
        !Ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize", error)) {
      return BackendResult::kFatal;
    }
    return BackendResult::kOk;
  }

  std::string DeviceName() const override { return name_; }
  void* Stream() const override { return stream_; }

  BackendResult Allocate(uint64_t bytes, void** ptr, std::string* error) override {
    *ptr = nullptr;
    uint64_t rounded = bytes == 0 ? 256 : bytes;
    return Result(cudaMalloc(ptr, rounded), "cudaMalloc", error);
  }

  BackendResult Free(void* ptr, std::string* error) override {
    return Result(cudaFree(ptr), "cudaFree", error);
  }

  BackendResult CopyIn(void* dst, const void* src, uint64_t bytes, std::string* error) override {
    if (bytes == 0) return BackendResult::kOk;
    return Result(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D", error);
  }

  BackendResult CopyOut(void* dst, const void* src, uint64_t bytes, std::string* error) override {
    if (bytes == 0) return BackendResult::kOk;
    return Result(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H", error);
  }

  BackendResult Poison(void* ptr, int32_t dtype, uint64_t bytes, std::string* error) override {
    if (bytes == 0) return BackendResult::kOk;
    // Whole elements get the dtype's NaN; a ragged tail (never for valid
    // specs) and integer dtypes get kPoisonByte.
    uint64_t width = 1;
    switch (dtype) {
      case CRL_FLOAT32: width = 4; break;
      case CRL_FLOAT64: width = 8; break;
      case CRL_FLOAT16:
      case CRL_BFLOAT16: width = 2; break;
      default: break;
    }
    if (!Ok(cudaMemsetAsync(ptr, kPoisonByte, bytes, stream_), "cudaMemsetAsync", error)) {
      return BackendResult::kFatal;
    }
    uint64_t n = bytes / width;
    if (width > 1 && n > 0) {
      int threads = 256;
      uint64_t blocks64 = (n + threads - 1) / threads;
      int blocks = static_cast<int>(blocks64 < 65535 ? blocks64 : 65535);
      switch (dtype) {
        case CRL_FLOAT32:
          FillKernel<uint32_t><<<blocks, threads, 0, stream_>>>(static_cast<uint32_t*>(ptr), n,
                                                                kPoisonFloat32);
          break;
        case CRL_FLOAT64:
          FillKernel<unsigned long long><<<blocks, threads, 0, stream_>>>(
              static_cast<unsigned long long*>(ptr), n, kPoisonFloat64);
          break;
        case CRL_FLOAT16:
          FillKernel<uint16_t><<<blocks, threads, 0, stream_>>>(static_cast<uint16_t*>(ptr), n,
                                                                kPoisonFloat16);
          break;
        default:
          FillKernel<uint16_t><<<blocks, threads, 0, stream_>>>(static_cast<uint16_t*>(ptr), n,
                                                                kPoisonBfloat16);
          break;
      }
      if (!Ok(cudaGetLastError(), "poison kernel launch", error)) return BackendResult::kFatal;
    }
    return Result(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", error);
  }

  BackendResult FlushL2(std::string* error) override {
    // Undo persisting-L2 settings a candidate may have made (on our stream or
    // the context), then overwrite the flush buffer.
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = nullptr;
    attr.accessPolicyWindow.num_bytes = 0;
    attr.accessPolicyWindow.hitRatio = 0;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyNormal;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyNormal;
    if (!Ok(cudaStreamSetAttribute(stream_, cudaStreamAttributeAccessPolicyWindow, &attr),
            "resetting the stream access policy", error) ||
        !Ok(cudaCtxResetPersistingL2Cache(), "cudaCtxResetPersistingL2Cache", error)) {
      return BackendResult::kFatal;
    }
    ++flush_value_;
    if (!Ok(cudaMemsetAsync(flush_, flush_value_, flush_bytes_, stream_), "L2 flush", error)) {
      return BackendResult::kFatal;
    }
    return Synchronize(error);
  }

  BackendResult Synchronize(std::string* error) override {
    if (!Ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize", error) ||
        !Ok(cudaGetLastError(), "cudaGetLastError", error)) {
      return BackendResult::kFatal;
    }
    return BackendResult::kOk;
  }

  BackendResult Invoke(const std::function<int(void*)>& fn, int* rc, CallTiming* timing,
                       std::string* error) override {
    if (!Ok(cudaSetDevice(device_), "cudaSetDevice", error)) return BackendResult::kFatal;
    const double t0 = Now();
    if (!Ok(cudaEventRecord(start_, stream_), "cudaEventRecord", error)) {
      return BackendResult::kFatal;
    }
    *rc = fn(stream_);
    // Errors from here on may be the candidate's (launch failures, faults).
    cudaError_t record_end = cudaEventRecord(end_stream_, stream_);
    cudaError_t sync = cudaDeviceSynchronize();
    const double t1 = Now();
    if (!Ok(sync, "cudaDeviceSynchronize after crl_run", error) ||
        !Ok(record_end, "cudaEventRecord after crl_run", error) ||
        !Ok(cudaGetLastError(), "error after crl_run", error) ||
        !Ok(cudaEventRecord(end_sync_, stream_), "cudaEventRecord", error) ||
        !Ok(cudaEventSynchronize(end_sync_), "cudaEventSynchronize", error)) {
      return BackendResult::kFatal;
    }
    float stream_ms = 0, sync_ms = 0;
    if (!Ok(cudaEventElapsedTime(&stream_ms, start_, end_stream_), "cudaEventElapsedTime",
            error) ||
        !Ok(cudaEventElapsedTime(&sync_ms, start_, end_sync_), "cudaEventElapsedTime", error)) {
      return BackendResult::kFatal;
    }
    timing->stream_event_seconds = stream_ms * 1e-3;
    timing->device_sync_seconds = sync_ms * 1e-3;
    timing->host_seconds = t1 - t0;
    return BackendResult::kOk;
  }

 private:
  static bool Ok(cudaError_t e, const char* what, std::string* error) {
    if (e == cudaSuccess) return true;
    if (error) {
      *error = std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
               ")";
    }
    return false;
  }
  static BackendResult Result(cudaError_t e, const char* what, std::string* error) {
    return Ok(e, what, error) ? BackendResult::kOk : BackendResult::kFatal;
  }

  int device_ = 0;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t end_stream_ = nullptr;
  cudaEvent_t end_sync_ = nullptr;
  void* flush_ = nullptr;
  uint64_t flush_bytes_ = 0;
  unsigned char flush_value_ = 0;
};

}  // namespace

std::unique_ptr<DeviceBackend> MakeCudaBackend(std::string* /*error*/) {
  return std::make_unique<CudaBackend>();
}

bool CudaBackendBuilt() { return true; }

}  // namespace crl::runner
