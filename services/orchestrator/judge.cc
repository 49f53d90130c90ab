#include "services/orchestrator/judge.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "common/status.h"
#include "lib/reward/names.h"

namespace crl::orchestrator {
namespace {

namespace fs = std::filesystem;

v1::Judgement Undecided(const std::string& error) {
  v1::Judgement j;
  j.set_decision("undecided");
  j.set_error(error);
  return j;
}

std::string Capped(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  return absl::StrCat(s.substr(0, max_bytes), "\n[... ", s.size() - max_bytes, " more bytes]");
}

std::string ChatUrl(const std::string& url) {
  if (absl::EndsWith(url, "/chat/completions")) return url;
  std::string base = url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/chat/completions";
}

std::string FlagList(const v1::Variant& v) {
  std::vector<std::string> names;
  AddFlagNamesOnce(v.flags(), &names);
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

}  // namespace

const std::vector<std::string>& JudgeTemplateNames() {
  static const std::vector<std::string> names = {
      "task_name", "reference", "candidate", "speedup", "trigger", "flags", "evidence", "has_evidence",
      "examples",  "case_id",   "kinds",     "verdict", "code",    "judged"};
  return names;
}

v1::Judgement ParseJudgeAnswer(const std::string& answer) {
  const std::vector<std::string> lines = absl::StrSplit(answer, '\n');
  for (size_t i = lines.size(); i-- > 0;) {
    std::string line = absl::AsciiStrToUpper(lines[i]);
    line.erase(std::remove_if(line.begin(), line.end(), [](char c) { return c == '*' || c == '`' || c == '#'; }),
               line.end());
    const size_t at = line.find("VERDICT:");
    if (at == std::string::npos) continue;
    const std::string word(absl::StripAsciiWhitespace(line.substr(at + 8)));
    v1::Judgement j;
    if (absl::StartsWith(word, "CHEAT")) {
      j.set_decision("cheat");
    } else if (absl::StartsWith(word, "HONEST")) {
      j.set_decision("honest");
    } else {
      return Undecided(absl::StrCat("the judge's verdict line says neither CHEAT nor HONEST: ", lines[i]));
    }
    std::vector<std::string> before(lines.begin(), lines.begin() + static_cast<long>(i));
    j.set_reasoning(std::string(absl::StripAsciiWhitespace(absl::StrJoin(before, "\n"))));
    return j;
  }
  return Undecided(absl::StrCat("no \"VERDICT: CHEAT\" or \"VERDICT: HONEST\" line in the judge's answer (",
                                answer.size(), " bytes)"));
}

std::string ReferenceText(const v1::Task& task, size_t max_bytes) {
  std::string out;
  for (const auto& f : task.files()) absl::StrAppend(&out, "// ", f.path(), "\n", f.content(), "\n");
  if (!out.empty()) return Capped(out, max_bytes);
  std::error_code ec;
  if (task.path().empty()) return "(the task has no reference the orchestrator can read)";
  if (fs::is_regular_file(task.path(), ec)) {
    auto text = ReadFileToString(task.path(), "reference");
    return text.ok() ? Capped(*text, max_bytes) : absl::StrCat("(", text.status().message(), ")");
  }
  if (!fs::is_directory(task.path(), ec)) return absl::StrCat("(", task.path(), " is not readable here)");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(task.path(), ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && (name == "task.yaml" || absl::StartsWith(name, "reference"))) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    auto text = ReadFileToString(p.string(), "reference");
    if (text.ok()) absl::StrAppend(&out, "// ", p.filename().string(), "\n", *text, "\n");
  }
  return out.empty() ? absl::StrCat("(no reference files under ", task.path(), ")") : Capped(out, max_bytes);
}

absl::StatusOr<std::unique_ptr<OpenAiJudge>> OpenAiJudge::Create(HttpClientInterface* http,
                                                                 OpenAiJudgeOptions options,
                                                                 const std::string& template_path) {
  if (options.url.empty()) return absl::InvalidArgumentError("judge_url: empty");
  CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(template_path, "judge template"));
  CRL_ASSIGN_OR_RETURN(prompt::PromptTemplate t,
                       prompt::PromptTemplate::Parse("judge", text, template_path, JudgeTemplateNames()));
  return std::unique_ptr<OpenAiJudge>(new OpenAiJudge(http, std::move(options), std::move(t)));
}

v1::Judgement OpenAiJudge::Judge(const JudgeCase& c, const RequestContext& context) {
  prompt::TemplateContext ctx;
  ctx.values["task_name"] = c.task_name;
  ctx.values["reference"] = c.reference;
  ctx.values["candidate"] = Capped(c.candidate.candidate().source(), 32768);
  ctx.values["speedup"] = absl::StrFormat("%.3g", c.candidate.speedup());
  ctx.values["trigger"] = c.trigger;
  ctx.values["flags"] = FlagList(c.candidate);
  ctx.values["evidence"] = absl::StrJoin(c.candidate.flag_evidence(), "\n");
  ctx.values["has_evidence"] = c.candidate.flag_evidence().empty() ? "" : "yes";
  for (const auto& e : c.examples) {
    prompt::TemplateContext x;
    x.values["case_id"] = e.case_id();
    x.values["kinds"] = absl::StrJoin(e.kinds(), ", ");
    x.values["verdict"] = VerdictShortName(e.verdict());
    x.values["code"] = Capped(e.source(), 8192);
    x.values["evidence"] = Capped(absl::StrJoin(e.evidence(), "\n"), 2048);
    x.values["judged"] = e.judgement().decision().empty()
                             ? ""
                             : absl::StrCat(e.judgement().decision(), ": ", e.judgement().reasoning());
    ctx.lists["examples"].push_back(std::move(x));
  }
  const prompt::PromptTemplate::Rendered r = template_.Render(ctx);
  nlohmann::json body = {{"model", options_.model},
                         {"temperature", 0},
                         {"max_tokens", options_.max_tokens},
                         {"messages",
                          {{{"role", "system"}, {"content", r.system}}, {{"role", "user"}, {"content", r.user}}}}};
  HttpRequest req;
  req.url = ChatUrl(options_.url);
  req.headers["Content-Type"] = "application/json";
  if (!options_.api_key.empty()) req.headers["Authorization"] = "Bearer " + options_.api_key;
  req.body = body.dump();
  req.timeout = options_.timeout;
  req.max_response_bytes = 4 << 20;
  absl::StatusOr<HttpResponse> res = http_->Send(req, context, nullptr);
  if (!res.ok()) return Undecided(absl::StrCat("judge at ", req.url, ": ", res.status().ToString()));
  if (res->status != 200) {
    return Undecided(absl::StrCat("judge at ", req.url, ": HTTP ", res->status, ": ", Capped(res->body, 300)));
  }
  std::string content, model = options_.model;
  try {
    const nlohmann::json j = nlohmann::json::parse(res->body);
    content = j.at("choices").at(0).at("message").at("content").get<std::string>();
    if (j.contains("model") && j["model"].is_string()) model = j["model"].get<std::string>();
  } catch (const std::exception& e) {
    return Undecided(absl::StrCat("judge at ", req.url, ": not a chat completion (", e.what(), ")"));
  }
  v1::Judgement j = ParseJudgeAnswer(content);
  j.set_model(model);
  if (j.decision() == "undecided") j.set_reasoning(Capped(content, 4096));
  return j;
}

std::string SuspicionGate::Trigger(const std::string& task, double speedup) const {
  if (!active()) return "";
  if (spec_.ceiling() > 0 && speedup > spec_.ceiling()) {
    return absl::StrFormat("%.3gx is above the ceiling %.3gx", speedup, spec_.ceiling());
  }
  if (spec_.jump_factor() > 0) {
    absl::MutexLock l(&mu_);
    auto it = best_.find(task);
    const double best = it == best_.end() ? 1.0 : it->second;
    if (speedup > spec_.jump_factor() * best) {
      return absl::StrFormat("%.3gx is above %.3g x the run's best %.3gx on %s", speedup, spec_.jump_factor(), best,
                             task);
    }
  }
  return "";
}

void SuspicionGate::Accept(const std::string& task, double speedup) {
  absl::MutexLock l(&mu_);
  double& best = best_.try_emplace(task, 1.0).first->second;
  best = std::max(best, speedup);
}

void ApplyJudgement(const v1::Judgement& judgement, v1::Variant* v) {
  *v->mutable_judgement() = judgement;
  if (judgement.decision() == "honest") return;
  v1::RewardResult* r = v->mutable_reward();
  r->set_reward(0);
  if (judgement.decision() == "cheat") {
    AddFlag(v->mutable_flags(), v1::FLAG_JUDGED_CHEAT);
    v->add_flag_evidence(absl::StrCat("judge (", judgement.model(), "): ", Capped(judgement.reasoning(), 1000)));
    r->set_status(v1::REWARD_STATUS_WITHHELD);
    r->set_explanation("withheld: the judge found that it cheats");
    return;
  }
  r->set_status(v1::REWARD_STATUS_HELD);
  r->set_explanation(absl::StrCat("held for the judge (", judgement.trigger(), "): ", judgement.error()));
}

}  // namespace crl::orchestrator
