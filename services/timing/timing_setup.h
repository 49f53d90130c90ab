// crl-timing's options (one struct, one binder) and the parts a timing
// service is built from: shared by crl-timing's main() and the in-process
// oracle of StartLocalTiming.
#ifndef CRL_SERVICES_TIMING_TIMING_SETUP_H_
#define CRL_SERVICES_TIMING_TIMING_SETUP_H_

#include <string>
#include <vector>

#include "common/client.h"
#include "common/options.h"
#include "services/timing/oracle.h"

namespace crl::timing {

struct TimingOptions {
  OracleOptions oracle;
  // The crl-workers whose lanes are measured (HOST:PORT list; an entry
  // dns:///NAME:PORT is every address NAME resolves to), and how to reach
  // them. `worker` is the older single-address flag (used when `workers` is
  // empty).
  std::vector<std::string> workers;
  std::string worker = "127.0.0.1:50051";
  ClientOptions worker_client;
  // Measure this machine's memory bandwidth (host_ceiling.h) as the host backend's ceiling.
  bool calibrate_host = true;

  TimingOptions() { worker_client.timeout = absl::Minutes(10); }
};

// Binds --worker, --worker_auth_token_file, --worker_tls*, the oracle's
// stopping rule and trust thresholds. (A reward's parameters come with each
// request: a run's from its spec.)
void BindTimingOptions(OptionSet* set, TimingOptions* options);

}  // namespace crl::timing

#endif  // CRL_SERVICES_TIMING_TIMING_SETUP_H_
