#include "services/trainer/offline.h"

#include <google/protobuf/util/json_util.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace crl::trainer {
namespace {

using nlohmann::json;

struct Cursor {
  int epoch = 0;
  int64_t line = 0;  // lines of the file consumed in this epoch
};

absl::Status ParseLine(const std::string& text, google::protobuf::Message* m, const std::string& where) {
  google::protobuf::util::JsonParseOptions o;
  o.ignore_unknown_fields = false;
  auto s = google::protobuf::util::JsonStringToMessage(text, m, o);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", s.ToString()));
  return absl::OkStatus();
}

}  // namespace

absl::Status RunOffline(StepRunner* runner, const Intake& intake, const OfflineOptions& options,
                        const std::atomic<bool>* stop, std::FILE* log) {
  std::vector<std::string> lines;
  {
    std::ifstream in(options.data);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", options.data));
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  Trainer* trainer = runner->trainer();
  Cursor cursor;
  if (options.resume) {
    auto extra = trainer->Resume();
    if (extra.ok()) {
      const json c = extra->value("offline", json::object());
      cursor.epoch = c.value("epoch", 0);
      cursor.line = c.value("line", int64_t{0});
      std::fprintf(log, "resumed at step %lld (epoch %d, line %lld)\n",
                   static_cast<long long>(trainer->step()), cursor.epoch + 1,
                   static_cast<long long>(cursor.line));
    } else if (extra.status().code() != absl::StatusCode::kNotFound) {
      return extra.status();
    }
  }
  auto checkpoint = [&]() {
    json extra = json::object();
    extra["offline"] = {{"epoch", cursor.epoch}, {"line", cursor.line}};
    extra["data"] = options.data;
    return runner->Checkpoint(extra);
  };
  int64_t since_checkpoint = 0;
  auto done = [&] {
    return (options.max_steps > 0 && trainer->step() >= options.max_steps) ||
           cursor.epoch >= options.epochs || (stop && stop->load());
  };
  while (!done()) {
    // Gather one batch of one kind from the cursor on.
    std::vector<TrainSequence> batch;
    Objective objective = Objective::kSupervised;
    int groups = 0, examples = 0;
    bool kind_known = false;
    Cursor next = cursor;
    while (next.line < static_cast<int64_t>(lines.size())) {
      const std::string& text = lines[next.line];
      const std::string where = absl::StrCat(options.data, ":", next.line + 1);
      if (text.find_first_not_of(" \t\r") == std::string::npos) {
        ++next.line;
        continue;
      }
      json probe = json::parse(text, nullptr, false);
      if (!probe.is_object()) return absl::InvalidArgumentError(where + ": not a JSON object");
      const bool is_group = probe.contains("completions");
      const Objective kind = is_group ? Objective::kPolicyGradient : Objective::kSupervised;
      if (kind_known && kind != objective) break;  // a change of kind ends the batch
      if (is_group) {
        v1::SubmitGroupRequest r;
        CRL_RETURN_IF_ERROR(ParseLine(text, &r, where));
        auto g = intake.Group(r);
        if (!g.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", g.status().message()));
        ++next.line;
        if (g->outcome != v1::GROUP_OUTCOME_QUEUED) continue;  // nothing to learn
        for (TrainSequence& s : g->sequences) batch.push_back(std::move(s));
        ++groups;
      } else {
        v1::SubmitExamplesRequest r;
        CRL_RETURN_IF_ERROR(ParseLine(text, r.add_examples(), where));
        auto e = intake.Examples(r);
        if (!e.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", e.status().message()));
        ++next.line;
        batch.push_back(std::move((*e)[0]));
        ++examples;
      }
      objective = kind;
      kind_known = true;
      if ((is_group && groups >= options.groups_per_step) ||
          (!is_group && examples >= options.examples_per_step)) {
        break;
      }
    }
    if (next.line >= static_cast<int64_t>(lines.size()) && batch.empty()) {
      cursor = {cursor.epoch + 1, 0};  // the epoch ended on skipped lines
      continue;
    }
    if (next.line >= static_cast<int64_t>(lines.size())) next = {next.epoch + 1, 0};
    CRL_ASSIGN_OR_RETURN(StepStats s, runner->Train(batch, objective));
    cursor = next;
    std::fprintf(log,
                 "step %lld %s loss=%.6f grad_norm=%.4f lr=%.3g sequences=%lld tokens=%lld "
                 "seconds=%.3f\n",
                 static_cast<long long>(s.step), ObjectiveName(objective), s.loss, s.grad_norm, s.lr,
                 static_cast<long long>(s.sequences), static_cast<long long>(s.tokens), s.seconds);
    std::fflush(log);
    if (options.checkpoint_every > 0 && ++since_checkpoint >= options.checkpoint_every) {
      CRL_RETURN_IF_ERROR(checkpoint());
      since_checkpoint = 0;
    }
  }
  CRL_RETURN_IF_ERROR(checkpoint());
  CRL_ASSIGN_OR_RETURN(PublishedPolicy p, runner->Publish());
  std::fprintf(log, "published version %lld at %s\n", static_cast<long long>(p.version), p.path.c_str());
  return runner->Stop();
}

}  // namespace crl::trainer
