#include "services/prompt/prompt_builder.h"

#include <cmath>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/file.h"
#include "common/status.h"
#include "lib/reward/names.h"
#include "lib/task/kernelbench_task.h"
#include "lib/task/native_task.h"
#include "runner/dtype.h"
#include "services/prompt/exemplars.h"

namespace crl::prompt {
namespace {

namespace fs = std::filesystem;

// What the template shows of the task.
struct TaskView {
  TaskFormat format = TaskFormat::kNative;
  std::string name;
  std::string description;
  std::string reference;
  std::string signature;  // native: tensors, sizes, scalars
};

std::string Dims(const std::vector<std::string>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::string SizesText(const SizeSet& sizes) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : sizes) parts.push_back(absl::StrCat(name, "=", value));
  return absl::StrJoin(parts, ", ");
}

std::string Signature(const NativeTask& t) {
  std::string s = "Inputs (read-only, in this order):\n";
  for (const TensorDecl& in : t.inputs) {
    absl::StrAppend(&s, "  ", in.name, ": ", runner::DtypeName(in.dtype), " ", Dims(in.shape),
                    "\n");
  }
  absl::StrAppend(&s, "Outputs (write every element, in this order):\n");
  for (const TensorDecl& out : t.outputs) {
    absl::StrAppend(&s, "  ", out.name, ": ", runner::DtypeName(out.dtype), " ", Dims(out.shape),
                    "\n");
  }
  if (!t.scalars.empty()) {
    std::vector<std::string> scalars;
    for (const auto& [name, value] : t.scalars) scalars.push_back(absl::StrCat(name, "=", value));
    absl::StrAppend(&s, "Scalars (args->scalars, in this order): ", absl::StrJoin(scalars, ", "),
                    "\n");
  }
  absl::StrAppend(&s, "Sizes timed: ", SizesText(t.sizes), "\n");
  if (!t.verify_sizes.empty()) {
    std::vector<std::string> sets;
    for (const SizeSet& v : t.verify_sizes) sets.push_back(SizesText(v));
    absl::StrAppend(&s, "Correctness is also checked at: ", absl::StrJoin(sets, "; "),
                    " (read sizes from the tensors' shapes; never hard-code them)\n");
  }
  return s;
}

const v1::File* FindFile(const v1::Task& task, const std::string& path) {
  for (const v1::File& f : task.files()) {
    if (f.path() == path) return &f;
  }
  return nullptr;
}

absl::StatusOr<TaskView> NativeView(const v1::Task& task, BackendKind backend) {
  NativeTask t;
  std::string reference;
  if (!task.path().empty()) {
    CRL_ASSIGN_OR_RETURN(t, LoadNativeTask(task.path()));
    if (t.Supports(backend)) {
      CRL_ASSIGN_OR_RETURN(reference, ReadFileToString(t.reference.at(backend), "reference"));
    }
  } else {
    const v1::File* manifest = FindFile(task, "task.yaml");
    if (!manifest) return absl::InvalidArgumentError("task.files: no task.yaml");
    // Paths in the manifest are relative to the bundle's root.
    CRL_ASSIGN_OR_RETURN(t, ParseNativeTask(manifest->content(), "/bundle", "task.yaml"));
    if (t.Supports(backend)) {
      const std::string rel = fs::path(t.reference.at(backend)).lexically_relative("/bundle").string();
      const v1::File* ref = FindFile(task, rel);
      if (!ref) return absl::InvalidArgumentError(absl::StrCat("task.files: no ", rel));
      reference = ref->content();
    }
  }
  if (!t.Supports(backend)) {
    return absl::InvalidArgumentError(absl::StrCat("backend: task '", t.name, "' has no ",
                                                   BackendName(backend), " reference"));
  }
  return TaskView{TaskFormat::kNative, t.name, t.description, reference, Signature(t)};
}

absl::StatusOr<TaskView> KernelBenchView(const v1::Task& task) {
  TaskView v;
  v.format = TaskFormat::kKernelBench;
  if (!task.path().empty()) {
    CRL_ASSIGN_OR_RETURN(KbTask t, LoadKbTask(task.path()));
    v.name = t.name;
    v.reference = t.source;
  } else {
    if (task.files_size() != 1) {
      return absl::InvalidArgumentError("task.files: a KernelBench task is exactly one .py file");
    }
    v.name = fs::path(task.files(0).path()).stem().string();
    v.reference = task.files(0).content();
  }
  if (!task.name().empty()) v.name = task.name();
  return v;
}

std::string Trimmed(const std::string& s) { return std::string(absl::StripAsciiWhitespace(s)); }

std::string SpeedupText(const v1::Exemplar& e) {
  std::vector<std::string> flags;
  for (int f : e.flags()) {
    if (IsTrustFlag(static_cast<v1::Flag>(f))) flags.push_back(FlagShortName(static_cast<v1::Flag>(f)));
  }
  if (!flags.empty()) {
    return absl::StrCat("speedup withheld: flagged ", absl::StrJoin(flags, ", "),
                        " by the verifier, so it does not count as faster");
  }
  const double s = TrustedSpeedup(e);
  if (s <= 0) return "correct; not timed";
  if (s >= 1.005) return absl::StrFormat("%.2fx faster than the reference", s);
  if (s > 0.995) return "as fast as the reference (1.00x)";
  return absl::StrFormat("%.2fx the reference's speed (slower)", s);
}

}  // namespace

const std::vector<std::string>& TemplateNames() {
  static const std::vector<std::string> names = {
      "task_name",   "task_description", "format",       "backend",  "language",
      "fence",       "entry_point",      "reference",    "abi",      "signature",
      "has_exemplars", "exemplars",      "index",        "variant_id", "code",
      "speedup_text", "analysis",        "policy_version", "fast"};
  return names;
}

int EstimateTokens(const std::string& text) {
  return static_cast<int>(std::ceil(static_cast<double>(text.size()) / 3.5));
}

absl::StatusOr<v1::BuildPromptResponse> PromptBuilder::Build(
    const v1::BuildPromptRequest& request) const {
  if (request.pool_size() > kMaxPool) {
    return absl::InvalidArgumentError(
        absl::StrCat("pool: ", request.pool_size(), " variants, at most ", kMaxPool));
  }
  if (request.max_prompt_tokens() < 0) {
    return absl::InvalidArgumentError("max_prompt_tokens: negative");
  }
  const v1::Task& task = request.task();
  if (task.path().empty() == (task.files_size() == 0)) {
    return absl::InvalidArgumentError("task: set exactly one of path or files");
  }
  BackendKind backend = BackendKind::kCuda;
  if (request.backend() == v1::BACKEND_HOST) backend = BackendKind::kHost;
  else if (request.backend() != v1::BACKEND_CUDA && request.backend() != v1::BACKEND_UNSPECIFIED) {
    return absl::InvalidArgumentError("backend: unknown value");
  }
  TaskView view;
  switch (task.format()) {
    case v1::TASK_FORMAT_KERNELBENCH: {
      CRL_ASSIGN_OR_RETURN(view, KernelBenchView(task));
      break;
    }
    case v1::TASK_FORMAT_NATIVE:
    case v1::TASK_FORMAT_UNSPECIFIED: {
      auto native = NativeView(task, backend);
      if (!native.ok()) return Annotate(native.status(), "task");
      view = std::move(*native);
      break;
    }
    default: return absl::InvalidArgumentError("task.format: unknown value");
  }
  if (!request.reference_source().empty()) view.reference = request.reference_source();
  const bool kb = view.format == TaskFormat::kKernelBench;
  const std::string template_name =
      request.template_name().empty() ? TaskFormatName(view.format) : request.template_name();
  CRL_ASSIGN_OR_RETURN(const PromptTemplate* tmpl, templates_->Find(template_name));

  TemplateContext context;
  context.values = {
      {"task_name", view.name},
      {"task_description", view.description},
      {"format", TaskFormatName(view.format)},
      {"backend", kb ? "" : BackendName(backend)},
      {"language", kb ? "Python" : backend == BackendKind::kCuda ? "CUDA C++" : "C++"},
      {"fence", kb ? "python" : backend == BackendKind::kCuda ? "cuda" : "cpp"},
      {"entry_point", kb ? "class ModelNew" : "crl_run"},
      {"reference", Trimmed(view.reference)},
      {"abi", kb ? "" : Trimmed(abi_header_)},
      {"signature", Trimmed(view.signature)},
  };
  context.values["task_description"] = Trimmed(view.description);

  const std::vector<v1::Exemplar> pool(request.pool().begin(), request.pool().end());
  const Selection selection =
      SelectExemplars(pool, ParamsFrom(request.selection(), request.num_exemplars()), request.seed());
  v1::BuildPromptResponse response;
  for (const auto& note : selection.notes) response.add_notes(note);

  // Renders with the first `shown` exemplars of the selection kept (the
  // fastest, shown last, go last) and analyses kept for the last `analyses`.
  std::vector<int> chosen = selection.chosen;
  size_t analyses = chosen.size();
  auto render = [&](PromptTemplate::Rendered* out) {
    TemplateContext ctx = context;
    ctx.values["has_exemplars"] = chosen.empty() ? "" : "yes";
    auto& list = ctx.lists["exemplars"];
    for (size_t i = 0; i < chosen.size(); ++i) {
      const v1::Exemplar& e = pool[chosen[i]];
      TemplateContext item;
      item.values = {{"index", std::to_string(i + 1)},
                     {"variant_id", e.variant_id()},
                     {"code", Trimmed(e.source())},
                     {"speedup_text", SpeedupText(e)},
                     {"analysis", i + analyses >= chosen.size() ? Trimmed(e.analysis()) : ""},
                     {"policy_version", e.policy_version()},
                     {"fast", TrustedSpeedup(e) > 1 ? "yes" : ""}};
      list.push_back(std::move(item));
    }
    *out = tmpl->Render(ctx);
    return EstimateTokens(out->system) + EstimateTokens(out->user) + 8;
  };
  PromptTemplate::Rendered rendered;
  int tokens = render(&rendered);
  const int budget = request.max_prompt_tokens();
  if (budget > 0) {
    auto has_analysis = [&] {
      for (size_t i = chosen.size() - analyses; i < chosen.size(); ++i) {
        if (!pool[chosen[i]].analysis().empty()) return true;
      }
      return false;
    };
    // Analyses first (the slowest exemplar's first), then whole exemplars.
    while (tokens > budget && analyses > 0 && has_analysis()) {
      if (!pool[chosen[chosen.size() - analyses]].analysis().empty()) {
        response.set_analyses_dropped(response.analyses_dropped() + 1);
      }
      --analyses;
      tokens = render(&rendered);
    }
    while (tokens > budget && !chosen.empty()) {
      chosen.erase(chosen.begin());
      analyses = std::min(analyses, chosen.size());
      response.set_exemplars_dropped(response.exemplars_dropped() + 1);
      tokens = render(&rendered);
    }
    if (tokens > budget) {
      return absl::OutOfRangeError(absl::StrCat(
          "max_prompt_tokens: the task alone needs about ", tokens, " tokens; the budget is ",
          budget, " (the task is never truncated)"));
    }
    if (response.analyses_dropped() || response.exemplars_dropped()) {
      response.add_notes(absl::StrCat("budget: dropped ", response.analyses_dropped(),
                                      " analysis(es) and ", response.exemplars_dropped(),
                                      " exemplar(s) to fit ", budget, " tokens"));
    }
  }
  for (int i : chosen) response.add_exemplar_ids(pool[i].variant_id());
  auto* system = response.add_messages();
  system->set_role("system");
  system->set_content(rendered.system);
  auto* user = response.add_messages();
  user->set_role("user");
  user->set_content(rendered.user);
  response.set_prompt(absl::StrCat("system:\n", rendered.system, "\n\nuser:\n", rendered.user));
  response.set_estimated_tokens(tokens);
  response.set_template_version(tmpl->version());
  return response;
}

}  // namespace crl::prompt
