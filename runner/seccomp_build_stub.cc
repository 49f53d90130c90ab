// runner/seccomp_build_stub.cc — compiled when libseccomp was not found.
#include "runner/seccomp.h"

namespace crl::runner {

bool SeccompAvailable() { return false; }

bool BuildSeccompProgram(SeccompProfile profile, std::vector<SeccompInstruction>* program,
                         std::string* error) {
  program->clear();
  if (profile == SeccompProfile::kNone) return true;
  if (error) *error = "seccomp unavailable: built without libseccomp";
  return false;
}

}  // namespace crl::runner
