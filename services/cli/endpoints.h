// Where a CLI command's work runs: an in-process worker (and, for timing, an
// in-process oracle over it), or the services of a deployment: crl-worker
// (--worker) and crl-timing (--timing). Timing a remote worker always goes
// through crl-timing, so timing has one deployment, not two.
#ifndef CRL_SERVICES_CLI_ENDPOINTS_H_
#define CRL_SERVICES_CLI_ENDPOINTS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/client.h"
#include "common/options.h"
#include "services/timing/timing_client.h"
#include "services/worker/worker_client.h"

namespace crl::cli {

struct EndpointFlags {
  std::string worker;  // HOST:PORT of a crl-worker; empty: in-process
  std::string timing;  // HOST:PORT of a crl-timing measuring on that worker
  ClientOptions client;
  LocalWorkerOptions local;

  // Binds --worker, --timing, the client options (--tls, --auth_token_file,
  // --timeout) and the in-process worker's options.
  void Bind(OptionSet* flags);
};

struct Endpoints {
  std::unique_ptr<WorkerClientInterface> worker;
  // Set when timing was asked for.
  std::unique_ptr<TimingClientInterface> timing;
  // The worker is another process: send tasks inline, not as paths.
  bool remote = false;
};

// INVALID_ARGUMENT for combinations that cannot work: --timing without
// --worker (crl-timing cannot see an in-process worker's artifacts), or
// timing with --worker but no --timing.
absl::StatusOr<Endpoints> Connect(const EndpointFlags& flags, bool need_timing);

}  // namespace crl::cli

#endif  // CRL_SERVICES_CLI_ENDPOINTS_H_
