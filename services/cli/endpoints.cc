#include "services/cli/endpoints.h"

#include "common/status.h"
#include "services/timing/grpc_timing_client.h"
#include "services/worker/grpc_worker_client.h"

namespace crl::cli {

void EndpointFlags::Bind(OptionSet* flags) {
  flags->Add("worker", &worker, "HOST:PORT of a crl-worker (default: an in-process worker)");
  flags->Add("timing", &timing,
             "HOST:PORT of the crl-timing that measures on --worker (needed to time with "
             "--worker)");
  BindClientOptions(flags, &client);
  local.Bind(flags);
}

absl::StatusOr<Endpoints> Connect(const EndpointFlags& flags, bool need_timing) {
  if (!flags.timing.empty() && flags.worker.empty()) {
    return absl::InvalidArgumentError(
        "--timing needs --worker: crl-timing measures on its worker, which cannot see an "
        "in-process worker's builds");
  }
  if (need_timing && !flags.worker.empty() && flags.timing.empty()) {
    return absl::InvalidArgumentError(
        "timing with --worker goes through crl-timing: give --timing HOST:PORT (or verify "
        "only)");
  }
  Endpoints e;
  if (flags.worker.empty()) {
    CRL_ASSIGN_OR_RETURN(e.worker, StartLocalWorker(flags.local));
    if (need_timing) {
      CRL_ASSIGN_OR_RETURN(e.timing, StartLocalTiming(e.worker.get(), {/*calibrate_host=*/true}));
    }
    return e;
  }
  e.remote = true;
  CRL_ASSIGN_OR_RETURN(e.worker, GrpcWorkerClient::Create(flags.worker, flags.client));
  if (need_timing) {
    CRL_ASSIGN_OR_RETURN(e.timing, GrpcTimingClient::Create(flags.timing, flags.client));
  }
  return e;
}

}  // namespace crl::cli
