// runner/backend.cc — backend factory.
#include "runner/backend.h"

namespace crl::runner {

std::unique_ptr<DeviceBackend> MakeBackend(const std::string& name, std::string* error) {
  if (name == "host") return MakeHostBackend();
  if (name == "cuda") return MakeCudaBackend(error);
  if (error) *error = "unknown backend '" + name + "' (expected host or cuda)";
  return nullptr;
}

}  // namespace crl::runner
