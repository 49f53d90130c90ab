// A batch's finished samples (crl bench), one JSON line each, appended and
// flushed as each finishes, so a batch that is killed or runs past its time
// limit resumes where it was: the next `crl bench` with the same journal
// takes the recorded outcomes and evaluates only the rest. A sample is keyed
// by what decides its outcome (the batch's settings, the task, the code), so
// a changed sample or setting is evaluated afresh. Infrastructure failures
// are never recorded (they are retried). Thread-safe.
#ifndef CRL_SERVICES_CLI_BENCH_JOURNAL_H_
#define CRL_SERVICES_CLI_BENCH_JOURNAL_H_

#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace crl::cli {

class BenchJournal {
 public:
  // Opens `path` (created when missing) and reads what it holds; a torn
  // last line (a process killed mid-write) is ignored, any other bad line is
  // an error naming the file and line.
  static absl::StatusOr<std::unique_ptr<BenchJournal>> Open(const std::string& path);
  ~BenchJournal();

  std::optional<nlohmann::json> Find(const std::string& key) const;
  absl::Status Append(const std::string& key, const nlohmann::json& outcome);
  size_t size() const;
  const std::string& path() const { return path_; }
  // The batch's results are written: the journal has done its job.
  absl::Status Remove();

  // The key of one sample: a hash of the settings and the sample's content.
  static std::string Key(const std::string& settings, const std::string& task, const std::string& source);

 private:
  BenchJournal(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  const std::string path_;
  mutable absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, nlohmann::json> done_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl::cli

#endif  // CRL_SERVICES_CLI_BENCH_JOURNAL_H_
