// In-process workers for tests: host lanes only, this build's crl-runner,
// caches where the test says.
#ifndef CRL_TESTS_SUPPORT_TEST_WORKER_H_
#define CRL_TESTS_SUPPORT_TEST_WORKER_H_

#include <memory>
#include <string>

#include "services/worker/worker_client.h"
#include "services/worker/worker_setup.h"

namespace crl::testing {

inline WorkerOptions HostWorkerOptions(const std::string& cache_dir, const std::string& work_dir) {
  WorkerOptions options;
  options.gpus = "";
  options.compiler.cache_dir = cache_dir;
  options.work_dir = work_dir;
  options.runner.runner_path = std::string(CRL_BIN_DIR) + "/crl-runner";
  return options;
}

// A started in-process worker behind the client interface (fails the test
// when it cannot start).
inline std::unique_ptr<WorkerClientInterface> StartWorker(const WorkerOptions& options) {
  auto started = StartLocalWorker(LocalWorkerOptions(options));
  if (!started.ok()) return nullptr;
  return std::move(*started);
}

}  // namespace crl::testing

#endif  // CRL_TESTS_SUPPORT_TEST_WORKER_H_
