// runner/cuda_backend_stub.cc — linked instead of cuda_backend.cu when the
// build has no CUDA (CRL_WITH_CUDA=OFF).
#include "runner/backend.h"

namespace crl::runner {

std::unique_ptr<DeviceBackend> MakeCudaBackend(std::string* error) {
  if (error) *error = "cuda backend not built (configure with -DCRL_WITH_CUDA=ON)";
  return nullptr;
}

bool CudaBackendBuilt() { return false; }

}  // namespace crl::runner
