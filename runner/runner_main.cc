// runner/runner_main.cc — the `crl-runner` binary.
//
//   crl-runner
//       Serves the worker: requests on fd 3, responses on fd 4 (runner.h).
//       CRL_RUNNER_NO_SECCOMP=1 in the environment skips the seccomp filter
//       (debugging only; also needed where the build has no libseccomp).
//   crl-runner --exec-sandboxed [--profile=compiler|runner|none] -- CMD ARGS...
//       Installs the seccomp profile (default: compiler) and execs CMD
//       (searched in PATH when it has no '/'). Used to run compilers inside
//       the sandbox.
//   crl-runner --version | --help
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runner/backend.h"
#include "runner/runner.h"
#include "runner/seccomp.h"

namespace {

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: crl-runner                       serve requests on fd 3, answers on fd 4\n"
               "       crl-runner --exec-sandboxed [--profile=compiler|runner|none] -- CMD ARGS...\n"
               "       crl-runner --version\n");
}

int ExecSandboxed(int argc, char** argv, int first) {
  crl::runner::SeccompProfile profile = crl::runner::SeccompProfile::kCompiler;
  int i = first;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.rfind("--profile=", 0) == 0) {
      if (!crl::runner::SeccompProfileFromName(arg.substr(10), &profile)) {
        std::fprintf(stderr, "crl-runner: unknown profile '%s'\n", arg.c_str() + 10);
        return 2;
      }
      continue;
    }
    std::fprintf(stderr, "crl-runner: unexpected argument '%s'\n", arg.c_str());
    Usage(stderr);
    return 2;
  }
  if (i >= argc) {
    std::fprintf(stderr, "crl-runner: --exec-sandboxed needs a command after --\n");
    return 2;
  }
  std::string error;
  if (!crl::runner::InstallSeccomp(profile, &error)) {
    std::fprintf(stderr, "crl-runner: %s\n", error.c_str());
    return 126;
  }
  execvp(argv[i], argv + i);
  std::fprintf(stderr, "crl-runner: exec %s: %s\n", argv[i], std::strerror(errno));
  return 127;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2) {
    std::string a = argv[1];
    if (a == "--exec-sandboxed") return ExecSandboxed(argc, argv, 2);
    if (a == "--version") {
      std::printf("crl-runner (protocol CRL1; cuda backend %s; seccomp %s)\n",
                  crl::runner::CudaBackendBuilt() ? "built" : "not built",
                  crl::runner::SeccompAvailable() ? "available" : "unavailable");
      return 0;
    }
    Usage(a == "--help" ? stdout : stderr);
    return a == "--help" ? 0 : 2;
  }
  if (fcntl(crl::runner::kRequestFd, F_GETFD) < 0 ||
      fcntl(crl::runner::kResponseFd, F_GETFD) < 0) {
    std::fprintf(stderr, "crl-runner: fds 3 and 4 must be the protocol pipes\n");
    Usage(stderr);
    return 2;
  }
  // A worker that went away must not leave us blocked; EPIPE is handled.
  signal(SIGPIPE, SIG_IGN);
  crl::runner::RunnerOptions options;
  const char* no_seccomp = std::getenv("CRL_RUNNER_NO_SECCOMP");
  options.install_seccomp = !(no_seccomp != nullptr && std::strcmp(no_seccomp, "1") == 0);
  return crl::runner::RunRunner(options);
}
