#include "lib/run/run_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <initializer_list>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"
#include "lib/reward/rewards.h"

namespace crl::run {
namespace {

namespace fs = std::filesystem;

absl::Status FieldError(const std::string& file, const YAML::Node& node, const std::string& field,
                        const std::string& what) {
  const int line = node.IsDefined() && node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
  return absl::InvalidArgumentError(
      absl::StrCat(file, line > 0 ? absl::StrCat(":", line) : "", ": ", field, ": ", what));
}

// Reads a scalar of type T, or says which field is wrong.
template <typename T>
absl::Status Read(const std::string& file, const YAML::Node& node, const std::string& field, T* out) {
  try {
    *out = node.as<T>();
    return absl::OkStatus();
  } catch (const YAML::Exception&) {
    return FieldError(file, node, field, "not a valid value");
  }
}

absl::Status AddTasks(const std::string& file, const YAML::Node& node, const std::string& field,
                      const std::string& path, v1::RunSpec* spec) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(path, ec);
  auto add = [&](const fs::path& t, v1::TaskFormat format) {
    v1::Task* task = spec->add_tasks();
    task->set_path(t.string());
    task->set_format(format);
    task->set_name(format == v1::TASK_FORMAT_NATIVE ? t.filename().string() : t.stem().string());
  };
  if (fs::is_directory(p / "", ec) && fs::exists(p / "task.yaml", ec)) {
    add(p, v1::TASK_FORMAT_NATIVE);
  } else if (fs::is_regular_file(p, ec) && p.extension() == ".py") {
    add(p, v1::TASK_FORMAT_KERNELBENCH);
  } else if (fs::is_directory(p, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(p, ec)) {
      if (e.path().extension() == ".py") files.push_back(e.path());
    }
    if (files.empty()) {
      return FieldError(file, node, field,
                        absl::StrCat("'", path, "' holds neither task.yaml nor KernelBench .py files"));
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) add(f, v1::TASK_FORMAT_KERNELBENCH);
  } else {
    return FieldError(file, node, field, absl::StrCat("'", path, "' does not exist"));
  }
  return absl::OkStatus();
}

// The first line's "// expect: OK — why" comment of a shipped candidate,
// without the marker: the analysis its author wrote.
std::string ShippedAnalysis(const std::string& source) {
  const std::string first = source.substr(0, source.find('\n'));
  const size_t dash = first.find("\xe2\x80\x94");  // an em dash
  if (first.rfind("// expect:", 0) != 0 || dash == std::string::npos) return "";
  std::string why = first.substr(dash + 3);
  while (!why.empty() && why.front() == ' ') why.erase(0, 1);
  if (!why.empty()) why[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(why[0])));
  return why;
}

// `sft_examples: shipped[:PREFIX]`: each native task's shipped candidates
// for the backend whose expected verdict is OK (candidates/expect.yaml),
// only those whose file name starts with PREFIX when given.
absl::Status AddShippedExamples(const std::string& file, const YAML::Node& node, const std::string& prefix,
                                v1::RunSpec* spec) {
  const std::string ext = spec->backend() == v1::BACKEND_CUDA ? ".cu" : ".cc";
  for (const v1::Task& task : spec->tasks()) {
    if (task.format() != v1::TASK_FORMAT_NATIVE) continue;
    const fs::path dir = fs::path(task.path()) / "candidates";
    YAML::Node expect;
    try {
      expect = YAML::LoadFile((dir / "expect.yaml").string());
    } catch (const YAML::Exception& e) {
      return FieldError(file, node, "sft_examples",
                        absl::StrCat((dir / "expect.yaml").string(), ": ", e.what()));
    }
    std::vector<std::string> names;
    for (const auto& kv : expect) {
      const std::string name = kv.first.as<std::string>();
      const YAML::Node v = kv.second;
      const std::string verdict = v.IsMap() ? v["verdict"].as<std::string>("") : v.as<std::string>("");
      if (verdict == "OK" && fs::path(name).extension() == ext && name.rfind(prefix, 0) == 0) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      CRL_ASSIGN_OR_RETURN(std::string source, ReadFileToString((dir / name).string(), "shipped candidate"));
      v1::SftExample* e = spec->add_sft_examples();
      e->set_task_name(task.name());
      e->set_analysis(ShippedAnalysis(source));
      // The "// expect:" line is the test suite's label, not part of the code.
      if (source.rfind("// expect:", 0) == 0) source.erase(0, std::min(source.size(), source.find('\n') + 1));
      e->set_source(std::move(source));
      e->set_origin((dir / name).string());
    }
  }
  return absl::OkStatus();
}

// `sft_examples: FILE.jsonl`: one {"task", "source", "analysis"} per line.
absl::Status AddFileExamples(const std::string& file, const YAML::Node& node, const std::string& path,
                             v1::RunSpec* spec) {
  CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, "sft_examples"));
  int line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = absl::StrCat(path, ":", line_no);
    YAML::Node row;
    try {
      row = YAML::Load(line);
    } catch (const YAML::Exception& e) {
      return FieldError(file, node, "sft_examples", absl::StrCat(where, ": not JSON: ", e.what()));
    }
    if (!row.IsMap() || !row["task"] || !row["source"]) {
      return FieldError(file, node, "sft_examples", absl::StrCat(where, ": needs \"task\" and \"source\""));
    }
    v1::SftExample* e = spec->add_sft_examples();
    e->set_task_name(row["task"].as<std::string>(""));
    e->set_source(row["source"].as<std::string>(""));
    e->set_analysis(row["analysis"].as<std::string>(""));
    e->set_origin(where);
  }
  return absl::OkStatus();
}

absl::Status ParseNode(const std::string& file, const YAML::Node& root, const std::string& base,
                       v1::RunSpec* spec) {
  static const std::vector<std::string> kKnown = {
      "name", "tasks", "backend", "policy", "stages", "rounds", "training", "group_size",
      "exemplars", "sampling", "reward", "budget", "timing_budget_seconds", "seed", "control",
      "max_infra_attempts", "template", "sft_examples", "judge"};
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(kKnown.begin(), kKnown.end(), key) == kKnown.end()) {
      return FieldError(file, kv.first, key, "unknown field");
    }
  }
  std::string s;
  if (root["name"]) CRL_RETURN_IF_ERROR(Read(file, root["name"], "name", spec->mutable_name()));
  if (root["policy"]) CRL_RETURN_IF_ERROR(Read(file, root["policy"], "policy", spec->mutable_policy()));
  if (root["template"]) {
    CRL_RETURN_IF_ERROR(Read(file, root["template"], "template", spec->mutable_template_name()));
  }
  const YAML::Node tasks = root["tasks"];
  if (!tasks || !tasks.IsSequence() || tasks.size() == 0) {
    return FieldError(file, tasks ? tasks : root, "tasks", "a non-empty list of task paths is required");
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::string field = absl::StrCat("tasks[", i, "]");
    CRL_RETURN_IF_ERROR(Read(file, tasks[i], field, &s));
    const std::string path = fs::path(s).is_absolute() ? s : (fs::path(base) / s).string();
    CRL_RETURN_IF_ERROR(AddTasks(file, tasks[i], field, path, spec));
  }
  s = "host";
  if (root["backend"]) CRL_RETURN_IF_ERROR(Read(file, root["backend"], "backend", &s));
  if (s == "host") {
    spec->set_backend(v1::BACKEND_HOST);
  } else if (s == "cuda") {
    spec->set_backend(v1::BACKEND_CUDA);
  } else {
    return FieldError(file, root["backend"], "backend", absl::StrCat("'", s, "' is not host or cuda"));
  }
  if (const YAML::Node sft = root["sft_examples"]) {
    CRL_RETURN_IF_ERROR(Read(file, sft, "sft_examples", &s));
    if (s == "shipped" || s.rfind("shipped:", 0) == 0) {
      CRL_RETURN_IF_ERROR(AddShippedExamples(file, sft, s == "shipped" ? "" : s.substr(8), spec));
      if (spec->sft_examples_size() == 0) {
        return FieldError(file, sft, "sft_examples", absl::StrCat("'", s, "' matches no shipped candidate with verdict OK"));
      }
    } else {
      const std::string path = fs::path(s).is_absolute() ? s : (fs::path(base) / s).string();
      CRL_RETURN_IF_ERROR(AddFileExamples(file, sft, path, spec));
    }
  }
  if (const YAML::Node st = root["stages"]) {
    if (!st.IsSequence()) return FieldError(file, st, "stages", "a list of {kind, rounds}");
    for (size_t i = 0; i < st.size(); ++i) {
      v1::Stage* stage = spec->add_stages();
      const std::string f = absl::StrCat("stages[", i, "]");
      if (!st[i].IsMap()) return FieldError(file, st[i], f, "a map {kind, rounds}");
      CRL_RETURN_IF_ERROR(Read(file, st[i]["kind"], f + ".kind", stage->mutable_kind()));
      int rounds = 1;
      if (st[i]["rounds"]) CRL_RETURN_IF_ERROR(Read(file, st[i]["rounds"], f + ".rounds", &rounds));
      stage->set_rounds(rounds);
      for (const auto& kv : st[i]) {
        const std::string k = kv.first.as<std::string>("");
        if (k != "kind" && k != "rounds" && k != "optimizer") {
          return FieldError(file, kv.first, absl::StrCat(f, ".", k), "unknown (kind, rounds, optimizer)");
        }
      }
      // optimizer: {lr, warmup_steps, total_steps, min_lr_ratio}: the stage's own trainer phase.
      if (const YAML::Node o = st[i]["optimizer"]) {
        const std::string of = f + ".optimizer";
        if (!o.IsMap()) return FieldError(file, o, of, "a map {lr, warmup_steps, total_steps, min_lr_ratio}");
        v1::OptimizerSchedule* sc = stage->mutable_optimizer();
        double x = 0;
        int k = 0;
        for (const auto& kv : o) {
          const std::string key = kv.first.as<std::string>("");
          const std::string field = absl::StrCat(of, ".", key);
          if (key == "lr") {
            CRL_RETURN_IF_ERROR(Read(file, kv.second, field, &x));
            sc->set_lr(x);
          } else if (key == "min_lr_ratio") {
            CRL_RETURN_IF_ERROR(Read(file, kv.second, field, &x));
            sc->set_min_lr_ratio(x);
          } else if (key == "warmup_steps" || key == "total_steps") {
            CRL_RETURN_IF_ERROR(Read(file, kv.second, field, &k));
            key == "warmup_steps" ? sc->set_warmup_steps(k) : sc->set_total_steps(k);
          } else {
            return FieldError(file, kv.first, field, "unknown (lr, warmup_steps, total_steps, min_lr_ratio)");
          }
        }
        if (!(sc->lr() > 0)) return FieldError(file, o, of + ".lr", "required, positive");
      }
    }
  }
  int n = 0;
  if (root["rounds"]) {
    CRL_RETURN_IF_ERROR(Read(file, root["rounds"], "rounds", &n));
    spec->set_rounds(n);
  }
  if (root["training"]) CRL_RETURN_IF_ERROR(Read(file, root["training"], "training", spec->mutable_training()));
  if (root["control"]) CRL_RETURN_IF_ERROR(Read(file, root["control"], "control", spec->mutable_control()));
  if (root["group_size"]) {
    CRL_RETURN_IF_ERROR(Read(file, root["group_size"], "group_size", &n));
    spec->set_group_size(n);
  }
  if (const YAML::Node ex = root["exemplars"]) {
    v1::ExemplarSelection* sel = spec->mutable_selection();
    if (ex["strategy"]) {
      CRL_RETURN_IF_ERROR(Read(file, ex["strategy"], "exemplars.strategy", &s));
      if (s == "buckets") {
        sel->set_strategy(v1::EXEMPLAR_STRATEGY_BUCKETS);
      } else if (s == "top-k") {
        sel->set_strategy(v1::EXEMPLAR_STRATEGY_TOP_K);
      } else if (s == "uniform") {
        sel->set_strategy(v1::EXEMPLAR_STRATEGY_UNIFORM);
      } else if (s == "none") {
        sel->set_strategy(v1::EXEMPLAR_STRATEGY_NONE);
      } else {
        return FieldError(file, ex["strategy"], "exemplars.strategy",
                          absl::StrCat("'", s, "' is not buckets, top-k, uniform or none"));
      }
    }
    if (ex["count"]) {
      CRL_RETURN_IF_ERROR(Read(file, ex["count"], "exemplars.count", &n));
      sel->set_num_exemplars(n);
    }
    if (ex["buckets"]) {
      CRL_RETURN_IF_ERROR(Read(file, ex["buckets"], "exemplars.buckets", &n));
      sel->set_num_buckets(n);
    }
    double t = 0;
    if (ex["temperature"]) {
      CRL_RETURN_IF_ERROR(Read(file, ex["temperature"], "exemplars.temperature", &t));
      sel->set_temperature(t);
    }
    if (ex["trusted_only"]) {
      bool b = false;
      CRL_RETURN_IF_ERROR(Read(file, ex["trusted_only"], "exemplars.trusted_only", &b));
      sel->set_trusted_only(b);
    }
  }
  if (const YAML::Node sm = root["sampling"]) {
    double t = 0;
    if (sm["temperature"]) {
      CRL_RETURN_IF_ERROR(Read(file, sm["temperature"], "sampling.temperature", &t));
      spec->set_temperature(t);
    }
    if (sm["max_tokens"]) {
      CRL_RETURN_IF_ERROR(Read(file, sm["max_tokens"], "sampling.max_tokens", &n));
      spec->set_max_tokens(n);
    }
  }
  if (const YAML::Node rw = root["reward"]) {
    // `reward: cuda-l1`, or `reward: {preset: cuda-l1, clip: 2, incorrect: -1, bonus: 0.3, cap: 10}`.
    const bool map = rw.IsMap();
    if (map) {
      for (const auto& kv : rw) {
        const std::string k = kv.first.as<std::string>("");
        if (k != "preset" && k != "clip" && k != "incorrect" && k != "bonus" && k != "cap") {
          return FieldError(file, kv.first, "reward." + k, "unknown (preset, clip, incorrect, bonus, cap)");
        }
      }
    }
    const YAML::Node preset = map ? rw["preset"] : rw;
    CRL_RETURN_IF_ERROR(Read(file, preset, map ? "reward.preset" : "reward", &s));
    if (s == "cuda-l1") {
      spec->set_reward_preset(v1::REWARD_PRESET_CUDA_L1);
    } else if (s == "speedup-bonus") {
      spec->set_reward_preset(v1::REWARD_PRESET_SPEEDUP_BONUS);
    } else if (s == "tiered") {
      spec->set_reward_preset(v1::REWARD_PRESET_TIERED);
    } else {
      return FieldError(file, preset, map ? "reward.preset" : "reward",
                        absl::StrCat("'", s, "' is not cuda-l1, speedup-bonus or tiered"));
    }
    v1::RewardParams* params = spec->mutable_reward_params();
    double x = 0;
    for (const auto& [key, setter] :
         std::initializer_list<std::pair<const char*, void (v1::RewardParams::*)(double)>>{
             {"clip", &v1::RewardParams::set_clip},
             {"incorrect", &v1::RewardParams::set_incorrect_reward},
             {"bonus", &v1::RewardParams::set_correctness_bonus},
             {"cap", &v1::RewardParams::set_speedup_cap}}) {
      if (!map || !rw[key]) continue;
      CRL_RETURN_IF_ERROR(Read(file, rw[key], absl::StrCat("reward.", key), &x));
      (params->*setter)(x);
    }
  }
  if (const YAML::Node jd = root["judge"]) {
    // `judge: {jump: 4, ceiling: 50, examples: 3}` (docs/hacks.md).
    if (!jd.IsMap()) return FieldError(file, jd, "judge", "a map (jump, ceiling, examples)");
    v1::JudgeSpec* j = spec->mutable_judge();
    for (const auto& kv : jd) {
      const std::string k = kv.first.as<std::string>("");
      double x = 0;
      if (k == "jump" || k == "ceiling") {
        CRL_RETURN_IF_ERROR(Read(file, kv.second, "judge." + k, &x));
        k == "jump" ? j->set_jump_factor(x) : j->set_ceiling(x);
      } else if (k == "examples") {
        int n = 0;
        CRL_RETURN_IF_ERROR(Read(file, kv.second, "judge.examples", &n));
        j->set_examples(n);
      } else {
        return FieldError(file, kv.first, "judge." + k, "unknown (jump, ceiling, examples)");
      }
    }
  }
  if (const YAML::Node b = root["budget"]) {
    double secs = 0;
    if (b["seconds"]) {
      CRL_RETURN_IF_ERROR(Read(file, b["seconds"], "budget.seconds", &secs));
      spec->set_budget_seconds(secs);
    }
    if (b["candidates"]) {
      CRL_RETURN_IF_ERROR(Read(file, b["candidates"], "budget.candidates", &n));
      spec->set_max_candidates(n);
    }
  }
  double d = 0;
  if (root["timing_budget_seconds"]) {
    CRL_RETURN_IF_ERROR(Read(file, root["timing_budget_seconds"], "timing_budget_seconds", &d));
    spec->set_timing_budget_seconds(d);
  }
  if (root["max_infra_attempts"]) {
    CRL_RETURN_IF_ERROR(Read(file, root["max_infra_attempts"], "max_infra_attempts", &n));
    spec->set_max_infra_attempts(n);
  }
  if (root["seed"]) {
    uint64_t seed = 0;
    CRL_RETURN_IF_ERROR(Read(file, root["seed"], "seed", &seed));
    spec->set_seed(seed);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::RunSpec> ParseRunSpec(const std::string& text, const std::string& base_dir,
                                         const std::string& file_name) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(file_name, ":", e.mark.line + 1, ": ", e.msg));
  }
  if (!root.IsMap()) return absl::InvalidArgumentError(absl::StrCat(file_name, ": not a map of fields"));
  v1::RunSpec spec;
  CRL_RETURN_IF_ERROR(ParseNode(file_name, root, base_dir, &spec));
  absl::Status valid = ValidateRunSpec(spec);
  if (!valid.ok()) return absl::InvalidArgumentError(absl::StrCat(file_name, ": ", valid.message()));
  return spec;
}

absl::StatusOr<v1::RunSpec> LoadRunSpecFile(const std::string& path) {
  CRL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, "run spec"));
  std::error_code ec;
  return ParseRunSpec(text, fs::absolute(path, ec).parent_path().string(), path);
}

std::string SftAnswer(const v1::SftExample& e, const v1::Task& task, v1::Backend backend) {
  const std::string fence = task.format() == v1::TASK_FORMAT_KERNELBENCH ? "python"
                            : backend == v1::BACKEND_CUDA               ? "cuda"
                                                                        : "cpp";
  const std::string analysis = e.analysis().empty() ? "The reference leaves performance unused." : e.analysis();
  std::string code = e.source();
  if (!code.empty() && code.back() != '\n') code += '\n';
  return absl::StrCat("### Performance analysis\n", analysis, "\n\n### Algorithm design\n", analysis,
                      "\n\n### Code\n```", fence, "\n", code, "```\n");
}

std::vector<v1::Stage> EffectiveStages(const v1::RunSpec& spec) {
  if (spec.stages_size() > 0) return {spec.stages().begin(), spec.stages().end()};
  v1::Stage s;
  s.set_kind(spec.training() == "none" ? "sample-only" : "contrastive-rl");
  s.set_rounds(spec.rounds() > 0 ? spec.rounds() : 1);
  return {s};
}

absl::Status ValidateRunSpec(const v1::RunSpec& spec) {
  auto bad = [](const std::string& field, const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
  };
  if (spec.tasks_size() == 0) return bad("tasks", "at least one task is required");
  for (int i = 0; i < spec.tasks_size(); ++i) {
    const v1::Task& t = spec.tasks(i);
    if (t.path().empty() && t.files_size() == 0) return bad(absl::StrCat("tasks[", i, "]"), "no path and no files");
    if (t.format() == v1::TASK_FORMAT_UNSPECIFIED) {
      return bad(absl::StrCat("tasks[", i, "].format"), "native or kernelbench is required");
    }
  }
  if (spec.backend() != v1::BACKEND_HOST && spec.backend() != v1::BACKEND_CUDA) {
    return bad("backend", "host or cuda is required");
  }
  if (spec.group_size() < 0 || spec.group_size() > 256) return bad("group_size", "0 (default 4) to 256");
  if (spec.rounds() < 0) return bad("rounds", "must not be negative");
  if (!spec.training().empty() && spec.training() != "grpo" && spec.training() != "none" &&
      spec.training() != "self-train") {
    return bad("training", absl::StrCat("'", spec.training(), "' is not grpo, self-train or none"));
  }
  for (int i = 0; i < spec.stages_size(); ++i) {
    const v1::Stage& s = spec.stages(i);
    const std::string f = absl::StrCat("stages[", i, "]");
    // Which kinds exist, and what each needs of the spec, is the
    // orchestrator's to say (its stage registry checks them on submit).
    if (s.kind().empty()) return bad(f + ".kind", "required");
    if (s.rounds() < 1 || s.rounds() > 100000) return bad(f + ".rounds", "1 to 100000");
    const v1::OptimizerSchedule& o = s.optimizer();
    if (o.lr() < 0 || o.warmup_steps() < 0 || o.total_steps() < 0) {
      return bad(f + ".optimizer", "lr, warmup_steps and total_steps must not be negative");
    }
    if (o.has_min_lr_ratio() && (o.min_lr_ratio() < 0 || o.min_lr_ratio() > 1)) {
      return bad(f + ".optimizer.min_lr_ratio", "0 to 1");
    }
  }
  for (int i = 0; i < spec.sft_examples_size(); ++i) {
    const v1::SftExample& e = spec.sft_examples(i);
    const std::string f = absl::StrCat("sft_examples[", i, "]");
    if (e.source().empty()) return bad(f + ".source", "empty");
    bool known = false;
    for (const auto& t : spec.tasks()) known = known || t.name() == e.task_name();
    if (!known) return bad(f + ".task", absl::StrCat("'", e.task_name(), "' is not a task of this run"));
  }
  if (spec.temperature() < 0 || spec.temperature() > 5) return bad("sampling.temperature", "0 to 5");
  if (spec.max_tokens() < 0) return bad("sampling.max_tokens", "must not be negative");
  if (spec.budget_seconds() < 0) return bad("budget.seconds", "must not be negative");
  if (spec.max_candidates() < 0) return bad("budget.candidates", "must not be negative");
  if (spec.timing_budget_seconds() < 0) return bad("timing_budget_seconds", "must not be negative");
  if (!spec.control().empty() && spec.control() != "permuted-rewards") {
    return bad("control", absl::StrCat("'", spec.control(), "' is not permuted-rewards"));
  }
  CRL_RETURN_IF_ERROR(reward::ValidateRewardParams(spec.reward_params()));
  const v1::JudgeSpec& judge = spec.judge();
  if (judge.jump_factor() < 0 || (judge.jump_factor() > 0 && judge.jump_factor() <= 1)) {
    return bad("judge.jump", "0 (off) or above 1");
  }
  if (judge.ceiling() < 0 || (judge.ceiling() > 0 && judge.ceiling() <= 1)) return bad("judge.ceiling", "0 (off) or above 1");
  if (judge.examples() < 0 || judge.examples() > 16) return bad("judge.examples", "0 to 16");
  if (spec.max_infra_attempts() < 0 || spec.max_infra_attempts() > 20) return bad("max_infra_attempts", "0 to 20");
  if (spec.selection().num_exemplars() < 0 || spec.selection().num_exemplars() > 16) {
    return bad("exemplars.count", "0 to 16");
  }
  return absl::OkStatus();
}

bool RunEnded(v1::RunState s) {
  return s == v1::RUN_STATE_SUCCEEDED || s == v1::RUN_STATE_FAILED || s == v1::RUN_STATE_CANCELLED;
}

}  // namespace crl::run
