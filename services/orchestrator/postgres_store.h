// StoreInterface on PostgreSQL (libpqxx), for clusters: the schema and
// migrations of store_schema.h, every write one transaction, sequence
// numbers allocated under a per-run transaction lock (so several
// orchestrator processes may share a database).
//
// A lost connection is reconnected: an operation that fails before its
// commit is retried with backoff for `reconnect_for`, then is UNAVAILABLE
// (the message names the server, never the password). A write whose
// commit's outcome is unknown is UNAVAILABLE at once: the run resumes from
// what the store holds. A read whose commit was lost is retried as one that
// failed before it.
#ifndef CRL_SERVICES_ORCHESTRATOR_POSTGRES_STORE_H_
#define CRL_SERVICES_ORCHESTRATOR_POSTGRES_STORE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "services/orchestrator/store.h"

namespace crl::orchestrator {

struct PostgresStoreOptions {
  absl::Duration reconnect_for = absl::Seconds(30);
  absl::Duration initial_backoff = absl::Milliseconds(200);
  ClockInterface* clock = RealClock::Get();
};

// "postgresql://user:secret@host/db" with the password (and a password=
// parameter) replaced by "***", for messages and logs.
std::string RedactPostgresUrl(const std::string& url);

class PostgresStore final : public StoreInterface {
 public:
  // Connects to `url` (a libpq URI or key=value string) and migrates.
  static absl::StatusOr<std::unique_ptr<PostgresStore>> Open(const std::string& url,
                                                            PostgresStoreOptions options = {});
  ~PostgresStore() override;

  absl::StatusOr<v1::Run> CreateRun(const v1::Run& run, bool* created) override;
  absl::StatusOr<v1::Run> GetRun(const std::string& run_id) override;
  absl::Status PutRun(const v1::Run& run) override;
  absl::StatusOr<std::vector<v1::Run>> ListRuns(v1::RunState state, int limit,
                                               const std::string& after_id) override;
  absl::StatusOr<v1::RunEvent> AppendEvent(v1::RunEvent event) override;
  absl::StatusOr<std::vector<v1::RunEvent>> EventsAfter(const std::string& run_id, int64_t after_sequence,
                                                       int limit) override;
  absl::StatusOr<v1::RunEvent> RecordScored(const v1::Variant& variant, const v1::Run& run,
                                            v1::RunEvent event) override;
  absl::Status PutVariant(const std::string& run_id, const v1::Variant& variant) override;
  absl::StatusOr<std::optional<v1::Variant>> GetVariant(const std::string& run_id,
                                                       const std::string& key) override;
  absl::StatusOr<std::vector<v1::Variant>> Variants(const std::string& run_id,
                                                   const std::string& task_name) override;
  absl::StatusOr<std::vector<v1::Variant>> GroupVariants(const std::string& run_id,
                                                        const std::string& group_id) override;
  absl::Status PutGroup(const std::string& run_id, const v1::StoredGroup& group) override;
  absl::StatusOr<std::optional<v1::StoredGroup>> GetGroup(const std::string& run_id,
                                                          const std::string& group_id) override;
  absl::StatusOr<v1::HackCase> RecordHackCase(const v1::HackCase& seen) override;
  absl::StatusOr<std::vector<v1::HackCase>> HackCases(const std::string& kind, const std::string& task_name,
                                                     int limit) override;
  absl::StatusOr<std::optional<v1::HackCase>> GetHackCase(const std::string& case_id) override;

  // The libpqxx transaction type, kept out of this header.
  class Txn;

 private:
  struct Connection;
  PostgresStore(std::string url, PostgresStoreOptions options);
  // Runs `body` in one transaction on a (re)connected connection; see the
  // file comment for what is retried. `read_only`: the body writes nothing.
  absl::Status Transact(const char* what, const std::function<absl::Status(Txn&)>& body, bool read_only = false);
  absl::Status Migrate();

  const std::string url_;
  const PostgresStoreOptions options_;
  absl::Mutex mu_;
  std::unique_ptr<Connection> conn_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_POSTGRES_STORE_H_
