// A StoreInterface that keeps code and logs out of the database rows: before
// a variant, event or group is written, its large text fields (a variant's
// completion, candidate source and evaluation log; a group's prompt and
// message contents) go to a content-addressed store (common/content_store.h)
// and the row keeps their addresses (the protos' `content` maps); every read
// puts the text back. Identical code is kept once however many variants,
// events and runs refer to it. A run's inline task files (a spec sent by
// `crl run submit`) are content too, so the run row that every scored
// candidate rewrites stays small; an event's run snapshot keeps their names,
// not their contents (the run itself has them).
//
// The content is written (durably) before the row that refers to it, so a
// crash between the two leaves at most an unreferenced file, never a row
// whose content is missing. A content store that cannot be written fails the
// store write (UNAVAILABLE, retried like any store outage); content that
// cannot be read back fails the read with its own code (NOT_FOUND,
// DATA_LOSS), naming the run, the record and the field.
#ifndef CRL_SERVICES_ORCHESTRATOR_CONTENT_BACKED_STORE_H_
#define CRL_SERVICES_ORCHESTRATOR_CONTENT_BACKED_STORE_H_

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/content_store.h"
#include "services/orchestrator/store.h"

namespace crl::orchestrator {

class ContentBackedStore : public StoreInterface {
 public:
  ContentBackedStore(std::unique_ptr<StoreInterface> rows, std::unique_ptr<ContentStoreInterface> content)
      : rows_(std::move(rows)), content_(std::move(content)) {}

  absl::StatusOr<v1::Run> CreateRun(const v1::Run& run, bool* created) override;
  absl::StatusOr<v1::Run> GetRun(const std::string& run_id) override;
  absl::Status PutRun(const v1::Run& run) override;
  absl::StatusOr<std::vector<v1::Run>> ListRuns(v1::RunState state, int limit, const std::string& after_id) override;

  absl::StatusOr<v1::RunEvent> AppendEvent(v1::RunEvent event) override;
  absl::StatusOr<std::vector<v1::RunEvent>> EventsAfter(const std::string& run_id, int64_t after_sequence,
                                                       int limit) override;
  absl::StatusOr<v1::RunEvent> RecordScored(const v1::Variant& variant, const v1::Run& run,
                                            v1::RunEvent event) override;
  absl::Status PutVariant(const std::string& run_id, const v1::Variant& variant) override;
  absl::StatusOr<std::optional<v1::Variant>> GetVariant(const std::string& run_id, const std::string& key) override;
  absl::StatusOr<std::vector<v1::Variant>> Variants(const std::string& run_id, const std::string& task_name) override;
  absl::StatusOr<std::vector<v1::Variant>> GroupVariants(const std::string& run_id,
                                                        const std::string& group_id) override;
  absl::Status PutGroup(const std::string& run_id, const v1::StoredGroup& group) override;
  absl::StatusOr<std::optional<v1::StoredGroup>> GetGroup(const std::string& run_id,
                                                          const std::string& group_id) override;
  // Hack cases are kept as rows (their code is one candidate's, once per case).
  absl::StatusOr<v1::HackCase> RecordHackCase(const v1::HackCase& seen) override {
    return rows_->RecordHackCase(seen);
  }
  absl::StatusOr<std::vector<v1::HackCase>> HackCases(const std::string& kind, const std::string& task_name,
                                                     int limit) override {
    return rows_->HackCases(kind, task_name, limit);
  }
  absl::StatusOr<std::optional<v1::HackCase>> GetHackCase(const std::string& case_id) override {
    return rows_->GetHackCase(case_id);
  }

 private:
  // The variant with its text moved to content (its `content` map rebuilt
  // from the text fields); `full` gets the same map.
  absl::StatusOr<v1::Variant> Stripped(v1::Variant* full);
  absl::Status Fill(const std::string& run_id, v1::Variant* v);
  absl::Status Fill(const std::string& run_id, std::vector<v1::Variant>* vs);
  // The run's row: its task files' contents moved to content. A file this
  // store wrote for the run lately, unchanged, is not hashed again (each
  // scored candidate rewrites the run).
  absl::StatusOr<v1::Run> RunRow(const v1::Run& run);
  absl::Status Fill(v1::Run* run);

  std::unique_ptr<StoreInterface> rows_;
  std::unique_ptr<ContentStoreInterface> content_;
  // Task files written lately: (run id, field name) to (address, contents),
  // for the last kRecentRuns runs written.
  static constexpr size_t kRecentRuns = 8;
  struct Written {
    std::string address;
    std::string text;
  };
  absl::Mutex mu_;
  std::map<std::string, std::map<std::string, Written>> written_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> written_order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_CONTENT_BACKED_STORE_H_
