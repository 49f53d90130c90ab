// Options for an in-process worker in tests: host lanes only, this build's
// crl-runner, its caches where the test says.
#ifndef CRL_TESTS_INTEGRATION_TEST_WORKER_H_
#define CRL_TESTS_INTEGRATION_TEST_WORKER_H_

#include <string>

#include "services/worker/worker_setup.h"

namespace crl::testing {

inline WorkerOptions HostWorkerOptions(const std::string& cache_dir, const std::string& work_dir) {
  WorkerOptions options;
  options.gpus = "";
  options.compiler.cache_dir = cache_dir;
  options.engine.work_dir = work_dir;
  options.engine.runner.runner_path = std::string(CRL_BIN_DIR) + "/crl-runner";
  return options;
}

}  // namespace crl::testing

#endif  // CRL_TESTS_INTEGRATION_TEST_WORKER_H_
