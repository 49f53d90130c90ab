// StoreInterface on SQLite in WAL mode (one file under --data_dir), with
// the versioned schema migrations of store_schema.h (schema_version table).
#ifndef CRL_SERVICES_ORCHESTRATOR_SQLITE_STORE_H_
#define CRL_SERVICES_ORCHESTRATOR_SQLITE_STORE_H_

#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "services/orchestrator/store.h"

struct sqlite3;

namespace crl::orchestrator {

class SqliteStore final : public StoreInterface {
 public:
  // Opens (creating and migrating) the database at `path`.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path);
  ~SqliteStore() override;

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

 private:
  explicit SqliteStore(sqlite3* db) : db_(db) {}
  absl::Status Migrate();
  absl::Status Exec(const std::string& sql);
  // Inserts `event` with its run's next sequence number (set in it).
  absl::Status InsertEventLocked(v1::RunEvent* event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  sqlite3* db_;
};

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_SQLITE_STORE_H_
