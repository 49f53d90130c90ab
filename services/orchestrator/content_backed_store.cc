#include "services/orchestrator/content_backed_store.h"

#include <functional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"

namespace crl::orchestrator {
namespace {

// An event's run snapshot keeps its spec's inline task files by name only:
// their contents are the run's (GetRun), and every event would otherwise
// store them again.
void DropTaskFileContents(v1::RunEvent* event) {
  if (!event->has_run()) return;
  event->mutable_run()->clear_content();
  for (v1::Task& task : *event->mutable_run()->mutable_spec()->mutable_tasks()) {
    for (v1::File& file : *task.mutable_files()) file.clear_content();
  }
}

using Refs = google::protobuf::Map<std::string, std::string>;
// The text field a `content` key names in a record; nullptr for a key this
// version does not know, or (without `create`) for a field whose message is
// absent.
using FieldOf = std::function<std::string*(const std::string& name, bool create)>;

FieldOf VariantFieldOf(v1::Variant* v) {
  return [v](const std::string& name, bool create) -> std::string* {
    if (name == "completion") return v->mutable_completion();
    if (name == "log") return v->mutable_log();
    if (name == "candidate.source") {
      return create || v->has_candidate() ? v->mutable_candidate()->mutable_source() : nullptr;
    }
    return nullptr;
  };
}

const std::vector<std::string>& VariantFieldNames() {
  static const std::vector<std::string> names = {"completion", "candidate.source", "log"};
  return names;
}

FieldOf GroupFieldOf(v1::StoredGroup* g) {
  return [g](const std::string& name, bool) -> std::string* {
    if (name == "prompt") return g->mutable_prompt();
    int i = 0;
    if (absl::StartsWith(name, "messages.") && absl::SimpleAtoi(name.substr(9), &i) && i >= 0 &&
        i < g->messages_size()) {
      return g->mutable_messages(i)->mutable_content();
    }
    return nullptr;
  };
}

std::vector<std::string> GroupFieldNames(const v1::StoredGroup& g) {
  std::vector<std::string> names = {"prompt"};
  for (int i = 0; i < g.messages_size(); ++i) names.push_back(absl::StrCat("messages.", i));
  return names;
}

// Each non-empty field named to content, its address into `refs` (rebuilt:
// an empty field has no entry), the field cleared.
absl::Status MoveOut(ContentStoreInterface* content, const std::vector<std::string>& names,
                     const FieldOf& field_of, Refs* refs) {
  refs->clear();
  for (const std::string& name : names) {
    std::string* text = field_of(name, /*create=*/false);
    if (text == nullptr || text->empty()) continue;
    CRL_ASSIGN_OR_RETURN(std::string address, content->Put(*text));
    (*refs)[name] = std::move(address);
    text->clear();
  }
  return absl::OkStatus();
}

// Each field in `refs` back from content. `what` names the record.
absl::Status MoveIn(ContentStoreInterface* content, const Refs& refs, const FieldOf& field_of,
                    const std::string& what) {
  for (const auto& [name, address] : refs) {
    std::string* text = field_of(name, /*create=*/true);
    if (text == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": content field '", name, "' is unknown to this orchestrator (written by a newer one?)"));
    }
    if (!text->empty()) continue;
    absl::StatusOr<std::string> data = content->Get(address);
    if (!data.ok()) {
      return absl::Status(data.status().code(), absl::StrCat(what, " field ", name, ": ", data.status().message()));
    }
    *text = *std::move(data);
  }
  return absl::OkStatus();
}

// A run's task file contents: "spec.tasks.T.files.F.content".
std::string RunFieldName(int task, int file) { return absl::StrCat("spec.tasks.", task, ".files.", file, ".content"); }

FieldOf RunFieldOf(v1::Run* r) {
  return [r](const std::string& name, bool) -> std::string* {
    const std::vector<std::string> parts = absl::StrSplit(name, '.');
    int t = -1, f = -1;
    if (parts.size() != 6 || parts[0] != "spec" || parts[1] != "tasks" || parts[3] != "files" ||
        parts[5] != "content" || !absl::SimpleAtoi(parts[2], &t) || !absl::SimpleAtoi(parts[4], &f) || t < 0 ||
        t >= r->spec().tasks_size() || f < 0 || f >= r->spec().tasks(t).files_size()) {
      return nullptr;
    }
    return r->mutable_spec()->mutable_tasks(t)->mutable_files(f)->mutable_content();
  };
}

}  // namespace

absl::StatusOr<v1::Run> ContentBackedStore::RunRow(const v1::Run& run) {
  v1::Run row = run;
  row.clear_content();
  Refs* refs = row.mutable_content();
  std::vector<std::pair<std::string, std::string*>> todo;  // field name, text not written lately
  {
    absl::MutexLock lock(&mu_);
    auto recent = written_.find(run.run_id());
    for (int t = 0; t < row.spec().tasks_size(); ++t) {
      for (int f = 0; f < row.spec().tasks(t).files_size(); ++f) {
        std::string* text = row.mutable_spec()->mutable_tasks(t)->mutable_files(f)->mutable_content();
        if (text->empty()) continue;
        std::string name = RunFieldName(t, f);
        if (recent != written_.end()) {
          auto w = recent->second.find(name);
          if (w != recent->second.end() && w->second.text == *text) {
            (*refs)[name] = w->second.address;
            text->clear();
            continue;
          }
        }
        todo.emplace_back(std::move(name), text);
      }
    }
  }
  std::map<std::string, Written> fresh;
  for (auto& [name, text] : todo) {
    CRL_ASSIGN_OR_RETURN(std::string address, content_->Put(*text));
    (*refs)[name] = address;
    fresh[name] = Written{std::move(address), std::move(*text)};
    text->clear();
  }
  if (!fresh.empty() && !run.run_id().empty()) {
    absl::MutexLock lock(&mu_);
    if (!written_.count(run.run_id())) {
      written_order_.push_back(run.run_id());
      if (written_order_.size() > kRecentRuns) {
        written_.erase(written_order_.front());
        written_order_.pop_front();
      }
    }
    for (auto& [name, w] : fresh) written_[run.run_id()][name] = std::move(w);
  }
  return row;
}

absl::Status ContentBackedStore::Fill(v1::Run* run) {
  return MoveIn(content_.get(), run->content(), RunFieldOf(run), absl::StrCat("run ", run->run_id()));
}

absl::StatusOr<v1::Run> ContentBackedStore::CreateRun(const v1::Run& run, bool* created) {
  CRL_ASSIGN_OR_RETURN(v1::Run row, RunRow(run));
  CRL_ASSIGN_OR_RETURN(v1::Run stored, rows_->CreateRun(row, created));
  CRL_RETURN_IF_ERROR(Fill(&stored));
  return stored;
}

absl::StatusOr<v1::Run> ContentBackedStore::GetRun(const std::string& run_id) {
  CRL_ASSIGN_OR_RETURN(v1::Run run, rows_->GetRun(run_id));
  CRL_RETURN_IF_ERROR(Fill(&run));
  return run;
}

absl::Status ContentBackedStore::PutRun(const v1::Run& run) {
  CRL_ASSIGN_OR_RETURN(v1::Run row, RunRow(run));
  return rows_->PutRun(row);
}

absl::StatusOr<std::vector<v1::Run>> ContentBackedStore::ListRuns(v1::RunState state, int limit,
                                                                 const std::string& after_id) {
  // The rows as stored: task files by path, their addresses in `content`.
  // Nothing that lists runs reads the files (resumption, metrics, the
  // held-reward sweep, ListRuns), and a page of runs would otherwise read
  // every run's task files from the content store.
  return rows_->ListRuns(state, limit, after_id);
}

absl::StatusOr<v1::Variant> ContentBackedStore::Stripped(v1::Variant* full) {
  v1::Variant row = *full;
  CRL_RETURN_IF_ERROR(MoveOut(content_.get(), VariantFieldNames(), VariantFieldOf(&row), row.mutable_content()));
  *full->mutable_content() = row.content();
  return row;
}

absl::Status ContentBackedStore::Fill(const std::string& run_id, v1::Variant* v) {
  return MoveIn(content_.get(), v->content(), VariantFieldOf(v),
                absl::StrCat("run ", run_id, " variant ", v->key()));
}

absl::Status ContentBackedStore::Fill(const std::string& run_id, std::vector<v1::Variant>* vs) {
  for (v1::Variant& v : *vs) CRL_RETURN_IF_ERROR(Fill(run_id, &v));
  return absl::OkStatus();
}

absl::StatusOr<v1::RunEvent> ContentBackedStore::AppendEvent(v1::RunEvent event) {
  DropTaskFileContents(&event);
  if (!event.has_variant()) return rows_->AppendEvent(std::move(event));
  v1::Variant full = event.variant();
  CRL_ASSIGN_OR_RETURN(*event.mutable_variant(), Stripped(&full));
  CRL_ASSIGN_OR_RETURN(v1::RunEvent stored, rows_->AppendEvent(std::move(event)));
  *stored.mutable_variant() = std::move(full);
  return stored;
}

absl::StatusOr<std::vector<v1::RunEvent>> ContentBackedStore::EventsAfter(const std::string& run_id,
                                                                         int64_t after_sequence, int limit) {
  CRL_ASSIGN_OR_RETURN(std::vector<v1::RunEvent> events, rows_->EventsAfter(run_id, after_sequence, limit));
  for (v1::RunEvent& e : events) {
    if (e.has_variant()) CRL_RETURN_IF_ERROR(Fill(run_id, e.mutable_variant()));
  }
  return events;
}

absl::StatusOr<v1::RunEvent> ContentBackedStore::RecordScored(const v1::Variant& variant, const v1::Run& run,
                                                              v1::RunEvent event) {
  v1::Variant full = variant;
  CRL_ASSIGN_OR_RETURN(v1::Variant row, Stripped(&full));
  DropTaskFileContents(&event);
  std::optional<v1::Variant> event_full;
  if (event.has_variant()) {
    event_full = event.variant();
    CRL_ASSIGN_OR_RETURN(*event.mutable_variant(), Stripped(&*event_full));
  }
  CRL_ASSIGN_OR_RETURN(const v1::Run run_row, RunRow(run));
  CRL_ASSIGN_OR_RETURN(v1::RunEvent stored, rows_->RecordScored(row, run_row, std::move(event)));
  if (event_full) *stored.mutable_variant() = *std::move(event_full);
  return stored;
}

absl::Status ContentBackedStore::PutVariant(const std::string& run_id, const v1::Variant& variant) {
  v1::Variant full = variant;
  CRL_ASSIGN_OR_RETURN(v1::Variant row, Stripped(&full));
  return rows_->PutVariant(run_id, row);
}

absl::StatusOr<std::optional<v1::Variant>> ContentBackedStore::GetVariant(const std::string& run_id,
                                                                         const std::string& key) {
  CRL_ASSIGN_OR_RETURN(std::optional<v1::Variant> v, rows_->GetVariant(run_id, key));
  if (v) CRL_RETURN_IF_ERROR(Fill(run_id, &*v));
  return v;
}

absl::StatusOr<std::vector<v1::Variant>> ContentBackedStore::Variants(const std::string& run_id,
                                                                     const std::string& task_name) {
  CRL_ASSIGN_OR_RETURN(std::vector<v1::Variant> vs, rows_->Variants(run_id, task_name));
  CRL_RETURN_IF_ERROR(Fill(run_id, &vs));
  return vs;
}

absl::StatusOr<std::vector<v1::Variant>> ContentBackedStore::GroupVariants(const std::string& run_id,
                                                                          const std::string& group_id) {
  CRL_ASSIGN_OR_RETURN(std::vector<v1::Variant> vs, rows_->GroupVariants(run_id, group_id));
  CRL_RETURN_IF_ERROR(Fill(run_id, &vs));
  return vs;
}

absl::Status ContentBackedStore::PutGroup(const std::string& run_id, const v1::StoredGroup& group) {
  v1::StoredGroup row = group;
  CRL_RETURN_IF_ERROR(MoveOut(content_.get(), GroupFieldNames(row), GroupFieldOf(&row), row.mutable_content()));
  return rows_->PutGroup(run_id, row);
}

absl::StatusOr<std::optional<v1::StoredGroup>> ContentBackedStore::GetGroup(const std::string& run_id,
                                                                            const std::string& group_id) {
  CRL_ASSIGN_OR_RETURN(std::optional<v1::StoredGroup> g, rows_->GetGroup(run_id, group_id));
  if (g) {
    CRL_RETURN_IF_ERROR(MoveIn(content_.get(), g->content(), GroupFieldOf(&*g),
                               absl::StrCat("run ", run_id, " group ", group_id)));
  }
  return g;
}

}  // namespace crl::orchestrator
