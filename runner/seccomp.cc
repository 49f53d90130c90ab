// runner/seccomp.cc — profile names and filter installation (the filter
// itself is built in seccomp_build.cc, or seccomp_build_stub.cc when the build
// has no libseccomp).
#include "runner/seccomp.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace crl::runner {

static_assert(sizeof(SeccompInstruction) == sizeof(struct sock_filter),
              "SeccompInstruction must match struct sock_filter");

const char* SeccompProfileName(SeccompProfile profile) {
  switch (profile) {
    case SeccompProfile::kNone: return "none";
    case SeccompProfile::kCompiler: return "compiler";
    case SeccompProfile::kRunner: return "runner";
    case SeccompProfile::kHarness: return "harness";
  }
  return "unknown";
}

bool SeccompProfileFromName(const std::string& name, SeccompProfile* profile) {
  if (name == "none") {
    *profile = SeccompProfile::kNone;
  } else if (name == "compiler") {
    *profile = SeccompProfile::kCompiler;
  } else if (name == "runner") {
    *profile = SeccompProfile::kRunner;
  } else if (name == "harness") {
    *profile = SeccompProfile::kHarness;
  } else {
    return false;
  }
  return true;
}

int InstallSeccompProgram(const SeccompInstruction* program, size_t length,
                          bool all_threads) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  if (length == 0) return 0;
  struct sock_fprog prog;
  prog.len = static_cast<unsigned short>(length);
  prog.filter = reinterpret_cast<struct sock_filter*>(const_cast<SeccompInstruction*>(program));
  unsigned int flags = all_threads ? SECCOMP_FILTER_FLAG_TSYNC : 0;
  long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
  if (rc == 0) return 0;
  if (rc > 0) return ESRCH;  // TSYNC: thread `rc` could not be synchronised
  return errno;
}

bool InstallSeccomp(SeccompProfile profile, std::string* error) {
  std::vector<SeccompInstruction> program;
  if (!BuildSeccompProgram(profile, &program, error)) return false;
  if (program.size() > 0xFFFF) {
    if (error) *error = "seccomp program too long";
    return false;
  }
  int rc = InstallSeccompProgram(program.data(), program.size(), /*all_threads=*/true);
  if (rc != 0) {
    if (error) *error = std::string("installing seccomp filter: ") + strerror(rc);
    return false;
  }
  return true;
}

}  // namespace crl::runner
