// A StoreInterface that keeps code and logs out of the database rows: before
// a variant, event or group is written, its large text fields (a variant's
// completion, candidate source and evaluation log; a group's prompt and
// message contents) go to a content-addressed store (common/content_store.h)
// and the row keeps their addresses (the protos' `content` maps); every read
// puts the text back. Identical code is kept once however many variants,
// events and runs refer to it. An event's run snapshot keeps the names of its
// spec's inline task files, not their contents (the run itself has them).
//
// The content is written (durably) before the row that refers to it, so a
// crash between the two leaves at most an unreferenced file, never a row
// whose content is missing. A content store that cannot be written fails the
// store write (UNAVAILABLE, retried like any store outage); content that
// cannot be read back fails the read with its own code (NOT_FOUND,
// DATA_LOSS), naming the run, the record and the field.
#ifndef CRL_SERVICES_ORCHESTRATOR_CONTENT_BACKED_STORE_H_
#define CRL_SERVICES_ORCHESTRATOR_CONTENT_BACKED_STORE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/content_store.h"
#include "services/orchestrator/store.h"

namespace crl::orchestrator {

class ContentBackedStore : public StoreInterface {
 public:
  ContentBackedStore(std::unique_ptr<StoreInterface> rows, std::unique_ptr<ContentStoreInterface> content)
      : rows_(std::move(rows)), content_(std::move(content)) {}

  absl::StatusOr<v1::Run> CreateRun(const v1::Run& run, bool* created) override {
    return rows_->CreateRun(run, created);
  }
  absl::StatusOr<v1::Run> GetRun(const std::string& run_id) override { return rows_->GetRun(run_id); }
  absl::Status PutRun(const v1::Run& run) override { return rows_->PutRun(run); }
  absl::StatusOr<std::vector<v1::Run>> ListRuns(v1::RunState state, int limit, const std::string& after_id) override {
    return rows_->ListRuns(state, limit, after_id);
  }

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

  std::unique_ptr<StoreInterface> rows_;
  std::unique_ptr<ContentStoreInterface> content_;
};

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_CONTENT_BACKED_STORE_H_
