// runner/runner.h — the serving loop of the `crl-runner` process.
//
// Order (see runner/protocol.h for the messages):
//   1. read LoadRequest from request_fd;
//   2. create and Init() the backend (CUDA context, stream, events, L2 flush
//      buffer) — before seccomp, since driver initialisation needs syscalls
//      the filter forbids;
//   3. install the seccomp kRunner profile (unless disabled) — before
//      dlopen(), because library constructors are candidate code;
//   4. dlopen(library, RTLD_NOW | RTLD_LOCAL), resolve crl_run, answer
//      LoadResult;
//   5. serve CallRequest / TimedCallRequest until Shutdown or EOF.
// A warm runner (services/worker's warm pool) gets a LoadRequest with
// warm_only first: step 2 only, answered with LoadResult, before any library
// exists; the LoadRequest that follows carries the library's bytes (its
// path is outside the warm runner's sandbox), which are written to an
// anonymous in-memory file before step 3, then steps 3-5 as above.
// A failed load is answered (LoadResult.ok = false) and later calls get
// kLoadFailed. A fatal backend error is answered with kCudaError, then the
// process exits with kCudaErrorExitCode.
//
// Per call the runner allocates fresh buffers and frees the previous call's
// buffers only after the new ones exist, so two consecutive calls never see
// the same addresses (results cached by pointer do not replay). The crl_args
// handed to the candidate are copies: the runner never reads them back, so a
// candidate that rewrites data pointers in them cannot redirect the copies.
//
// Thread-safety: single-threaded; RunRunner() owns the process.
#ifndef CRL_RUNNER_RUNNER_H_
#define CRL_RUNNER_RUNNER_H_

#include <functional>
#include <memory>
#include <string>

#include "runner/backend.h"
#include "runner/protocol.h"

namespace crl::runner {

struct RunnerOptions {
  int request_fd = kRequestFd;
  int response_fd = kResponseFd;
  // Install the kRunner seccomp profile before dlopen(). When this build has
  // no libseccomp and this is true, loading fails (fail closed).
  bool install_seccomp = true;
  // Creates the backend named in the LoadRequest.
  std::function<std::unique_ptr<DeviceBackend>(const std::string&, std::string*)>
      backend_factory = MakeBackend;
};

// Serves one worker until Shutdown/EOF (returns 0), a broken channel
// (returns 2) or a fatal backend error (returns kCudaErrorExitCode).
int RunRunner(const RunnerOptions& options);

}  // namespace crl::runner

#endif  // CRL_RUNNER_RUNNER_H_
