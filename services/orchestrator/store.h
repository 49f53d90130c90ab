// What the orchestrator keeps: runs, their events (the watch stream, in
// order, resumable by sequence number), variants (every sampled completion,
// from sampled to scored) and sampled groups. One interface and three
// stores behind it: SQLite (sqlite_store.h), PostgreSQL (postgres_store.h),
// and a wrapper that keeps large texts in the content store
// (content_backed_store.h; open_store.h picks); and the hack database. Every write is one
// transaction (a scored candidate's three records are one), so a process
// killed at any moment leaves each record either written or not.
#ifndef CRL_SERVICES_ORCHESTRATOR_STORE_H_
#define CRL_SERVICES_ORCHESTRATOR_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "crl/v1/orchestrator.pb.h"

namespace crl::orchestrator {

// Thread-safe.
class StoreInterface {
 public:
  virtual ~StoreInterface() = default;

  // Inserts `run` unless a run with the same non-empty idempotency key
  // exists; returns the stored run either way (*created says which).
  virtual absl::StatusOr<v1::Run> CreateRun(const v1::Run& run, bool* created) = 0;
  // NOT_FOUND names the id.
  virtual absl::StatusOr<v1::Run> GetRun(const std::string& run_id) = 0;
  virtual absl::Status PutRun(const v1::Run& run) = 0;
  // Newest first; `after_id` pages (the last id of the previous page). A
  // listing is a summary: the spec's inline task files may come without
  // their contents (GetRun has them).
  virtual absl::StatusOr<std::vector<v1::Run>> ListRuns(v1::RunState state, int limit,
                                                       const std::string& after_id) = 0;

  // Appends an event with the next sequence number of its run (set in the
  // returned copy).
  virtual absl::StatusOr<v1::RunEvent> AppendEvent(v1::RunEvent event) = 0;
  virtual absl::StatusOr<std::vector<v1::RunEvent>> EventsAfter(const std::string& run_id,
                                                               int64_t after_sequence, int limit) = 0;

  // A scored candidate, in one transaction: the variant (inserted or
  // replaced under (run.run_id(), variant.key())), the run with its
  // counters, and the candidate's event with the next sequence number (set
  // in the returned copy). A crash leaves all three written or none.
  virtual absl::StatusOr<v1::RunEvent> RecordScored(const v1::Variant& variant, const v1::Run& run,
                                                    v1::RunEvent event) = 0;

  // Inserts or replaces the variant under (run_id, variant.key()).
  virtual absl::Status PutVariant(const std::string& run_id, const v1::Variant& variant) = 0;
  virtual absl::StatusOr<std::optional<v1::Variant>> GetVariant(const std::string& run_id,
                                                               const std::string& key) = 0;
  // Every variant of a run (of one task when `task_name` is not empty), in
  // key order.
  virtual absl::StatusOr<std::vector<v1::Variant>> Variants(const std::string& run_id,
                                                           const std::string& task_name) = 0;

  // The variants of one group (keys "<group_id>/<index>"), in key order.
  virtual absl::StatusOr<std::vector<v1::Variant>> GroupVariants(const std::string& run_id,
                                                                const std::string& group_id) = 0;

  virtual absl::Status PutGroup(const std::string& run_id, const v1::StoredGroup& group) = 0;
  virtual absl::StatusOr<std::optional<v1::StoredGroup>> GetGroup(const std::string& run_id,
                                                                  const std::string& group_id) = 0;

  // The hack database (lib/hacks/hack_case.h, docs/hacks.md). Records a
  // sighting: a new case, or merged into the stored one with its case_id
  // (hacks::MergeSighting), in one transaction; returns the case as stored.
  virtual absl::StatusOr<v1::HackCase> RecordHackCase(const v1::HackCase& seen) = 0;
  // Cases most recently seen first that pass hacks::Matches(kind,
  // task_name), at most `limit`.
  virtual absl::StatusOr<std::vector<v1::HackCase>> HackCases(const std::string& kind, const std::string& task_name,
                                                             int limit) = 0;
  virtual absl::StatusOr<std::optional<v1::HackCase>> GetHackCase(const std::string& case_id) = 0;
};

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_STORE_H_
