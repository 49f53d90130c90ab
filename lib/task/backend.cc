#include "lib/task/backend.h"

#include "crl/kernel.h"

namespace crl {

const char* BackendName(BackendKind backend) {
  return backend == BackendKind::kCuda ? "cuda" : "host";
}

bool ParseBackend(const std::string& name, BackendKind* backend) {
  if (name == "host") *backend = BackendKind::kHost;
  else if (name == "cuda") *backend = BackendKind::kCuda;
  else return false;
  return true;
}

const char* TaskFormatName(TaskFormat format) {
  return format == TaskFormat::kKernelBench ? "kernelbench" : "native";
}

Tolerance DefaultTolerance(int32_t dtype) {
  switch (dtype) {
    case CRL_FLOAT64: return {1e-8, 1e-8};
    case CRL_FLOAT32: return {1e-4, 1e-4};
    case CRL_FLOAT16:
    case CRL_BFLOAT16: return {1e-2, 1e-2};
    default: return {0, 0};
  }
}

}  // namespace crl
