#include "lib/task/native_task.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <regex>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "crl/kernel.h"
#include "runner/dtype.h"

namespace crl {
namespace {

namespace fs = std::filesystem;

// Builds "file:line: field: problem" errors.
class ErrorAt {
 public:
  explicit ErrorAt(std::string source) : source_(std::move(source)) {}
  absl::Status operator()(const YAML::Node& node, const std::string& field,
                          const std::string& problem) const {
    int line = node.IsDefined() ? node.Mark().line + 1 : 0;
    return absl::InvalidArgumentError(absl::StrCat(source_, ":", line > 0 ? line : 1, ": ",
                                                   field, ": ", problem));
  }

 private:
  std::string source_;
};

absl::StatusOr<std::string> Scalar(const YAML::Node& node, const std::string& field,
                                   const ErrorAt& err, bool required = true) {
  if (!node.IsDefined() || node.IsNull()) {
    if (required) return err(node, field, "missing");
    return std::string();
  }
  if (!node.IsScalar()) return err(node, field, "expected a scalar");
  return node.Scalar();
}

absl::StatusOr<SizeSet> ParseSizes(const YAML::Node& node, const std::string& field,
                                   const ErrorAt& err) {
  if (!node.IsMap()) return err(node, field, "expected a mapping of NAME: integer");
  SizeSet sizes;
  static const std::regex kName("[A-Za-z_][A-Za-z0-9_]*");
  for (const auto& kv : node) {
    std::string name = kv.first.Scalar();
    if (!std::regex_match(name, kName)) {
      return err(kv.first, field, absl::StrCat("bad size name '", name, "'"));
    }
    int64_t v;
    if (!kv.second.IsScalar() || !absl::SimpleAtoi(kv.second.Scalar(), &v) || v < 1) {
      return err(kv.second, absl::StrCat(field, ".", name), "expected an integer >= 1");
    }
    sizes.emplace_back(name, v);
  }
  if (sizes.empty()) return err(node, field, "must not be empty");
  return sizes;
}

absl::StatusOr<TensorDecl> ParseTensor(const YAML::Node& node, const std::string& field,
                                       bool is_input, const ErrorAt& err) {
  if (!node.IsMap()) return err(node, field, "expected a mapping");
  TensorDecl t;
  auto name = Scalar(node["name"], field + ".name", err);
  if (!name.ok()) return name.status();
  t.name = *name;
  auto dtype = Scalar(node["dtype"], field + ".dtype", err);
  if (!dtype.ok()) return dtype.status();
  if (!runner::DtypeFromName(*dtype, &t.dtype)) {
    return err(node["dtype"], field + ".dtype", absl::StrCat("unknown dtype '", *dtype, "'"));
  }
  const YAML::Node shape = node["shape"];
  if (!shape.IsSequence()) return err(shape, field + ".shape", "expected a list of dimensions");
  if (shape.size() > CRL_MAX_DIMS) {
    return err(shape, field + ".shape", absl::StrCat("more than ", CRL_MAX_DIMS, " dimensions"));
  }
  for (const auto& d : shape) {
    if (!d.IsScalar()) return err(d, field + ".shape", "each dimension must be a scalar");
    t.shape.push_back(d.Scalar());
  }
  const YAML::Node dists = node["distributions"];
  if (is_input) {
    if (!dists.IsSequence() || dists.size() == 0) {
      return err(dists.IsDefined() ? dists : node, field + ".distributions",
                 "expected a non-empty list, e.g. [uniform(-1, 1), normal(0, 2)]");
    }
    for (size_t i = 0; i < dists.size(); ++i) {
      std::string f = absl::StrCat(field, ".distributions[", i, "]");
      if (!dists[i].IsScalar()) return err(dists[i], f, "expected a string");
      runner::Distribution d;
      std::string why;
      if (!runner::ParseDistribution(dists[i].Scalar(), &d, &why) ||
          !runner::CheckDistributionForDtype(d, t.dtype, &why)) {
        // In a YAML flow list the comma inside "uniform(-1, 1)" splits items.
        if (dists[i].Scalar().find(')') == std::string::npos) {
          why += " (in a [flow, list] quote each distribution: 'uniform(-1, 1)')";
        }
        return err(dists[i], f, why);
      }
      t.distribution_text.push_back(dists[i].Scalar());
      t.distributions.push_back(d);
    }
  } else if (dists.IsDefined()) {
    return err(dists, field + ".distributions", "only inputs have distributions");
  }
  return t;
}

absl::StatusOr<std::vector<runner::TensorSpec>> Specs(const std::vector<TensorDecl>& decls,
                                                      const SizeSet& sizes) {
  std::vector<runner::TensorSpec> specs;
  for (const TensorDecl& d : decls) {
    runner::TensorSpec s;
    s.name = d.name;
    s.dtype = d.dtype;
    for (const std::string& e : d.shape) {
      auto v = EvalSizeExpr(e, sizes);
      if (!v.ok()) return v.status();
      if (*v < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(d.name, ": dimension '", e, "' evaluates to ", *v, " (must be >= 1)"));
      }
      s.shape.push_back(*v);
    }
    uint64_t bytes;
    if (!runner::SpecBytes(s, &bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(d.name, ": tensor too large"));
    }
    specs.push_back(std::move(s));
  }
  return specs;
}

}  // namespace

bool NativeTask::Supports(BackendKind backend) const {
  return reference.count(backend) > 0;
}

Tolerance NativeTask::ToleranceFor(int32_t dtype) const {
  auto it = tolerance.find(dtype);
  return it != tolerance.end() ? it->second : DefaultTolerance(dtype);
}

std::vector<SizeSet> NativeTask::AllSizeSets() const {
  std::vector<SizeSet> all{sizes};
  all.insert(all.end(), verify_sizes.begin(), verify_sizes.end());
  return all;
}

absl::StatusOr<std::vector<runner::TensorSpec>> NativeTask::InputSpecs(const SizeSet& s) const {
  return Specs(inputs, s);
}

absl::StatusOr<std::vector<runner::TensorSpec>> NativeTask::OutputSpecs(const SizeSet& s) const {
  return Specs(outputs, s);
}

std::vector<double> NativeTask::ScalarValues() const {
  std::vector<double> v;
  for (const auto& [name, value] : scalars) v.push_back(value);
  return v;
}

absl::StatusOr<NativeTask> ParseNativeTask(const std::string& yaml, const std::string& dir,
                                           const std::string& source_name) {
  ErrorAt err(source_name);
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ":", e.mark.line + 1, ": invalid YAML: ", e.msg));
  }
  if (!root.IsMap()) return err(root, "manifest", "expected a mapping");

  static const std::set<std::string> kKeys = {
      "name",    "description", "backends",  "reference", "sizes", "verify_sizes", "scalars",
      "inputs",  "outputs",     "tolerance", "flops",     "bytes", "degenerate_expected"};
  for (const auto& kv : root) {
    if (!kKeys.count(kv.first.Scalar())) {
      return err(kv.first, kv.first.Scalar(), "unknown key");
    }
  }

  NativeTask task;
  task.dir = dir;
  try {
    auto name = Scalar(root["name"], "name", err);
    if (!name.ok()) return name.status();
    static const std::regex kTaskName("[a-z0-9_]+");
    if (!std::regex_match(*name, kTaskName)) {
      return err(root["name"], "name", "must match [a-z0-9_]+");
    }
    task.name = *name;
    auto desc = Scalar(root["description"], "description", err);
    if (!desc.ok()) return desc.status();
    task.description = *desc;

    const YAML::Node backends = root["backends"];
    if (!backends.IsSequence() || backends.size() == 0) {
      return err(backends.IsDefined() ? backends : root, "backends",
                 "expected a non-empty list of host/cuda");
    }
    const YAML::Node reference = root["reference"];
    if (!reference.IsMap()) {
      return err(reference.IsDefined() ? reference : root, "reference",
                 "expected a mapping backend: source file");
    }
    for (const auto& b : backends) {
      BackendKind kind;
      if (!b.IsScalar() || !ParseBackend(b.Scalar(), &kind)) {
        return err(b, "backends", absl::StrCat("unknown backend '", b.Scalar(), "'"));
      }
      task.backends.push_back(kind);
      const YAML::Node src = reference[b.Scalar()];
      auto file = Scalar(src, absl::StrCat("reference.", b.Scalar()), err);
      if (!file.ok()) return file.status();
      if (file->empty() || file->find("..") != std::string::npos || (*file)[0] == '/') {
        return err(src, absl::StrCat("reference.", b.Scalar()),
                   "must be a file name inside the task directory");
      }
      task.reference[kind] = (fs::path(dir) / *file).string();
    }

    auto sizes = ParseSizes(root["sizes"], "sizes", err);
    if (!sizes.ok()) return sizes.status();
    task.sizes = *sizes;
    if (const YAML::Node vs = root["verify_sizes"]; vs.IsDefined()) {
      if (!vs.IsSequence()) return err(vs, "verify_sizes", "expected a list of size mappings");
      for (size_t i = 0; i < vs.size(); ++i) {
        std::string f = absl::StrCat("verify_sizes[", i, "]");
        auto set = ParseSizes(vs[i], f, err);
        if (!set.ok()) return set.status();
        // Same names in the same order: sizes are positional in the ABI.
        if (set->size() != task.sizes.size()) {
          return err(vs[i], f, "must name the same sizes as `sizes`");
        }
        for (size_t k = 0; k < set->size(); ++k) {
          if ((*set)[k].first != task.sizes[k].first) {
            return err(vs[i], f, "must name the same sizes as `sizes`, in the same order");
          }
        }
        task.verify_sizes.push_back(*set);
      }
    }

    if (const YAML::Node sc = root["scalars"]; sc.IsDefined()) {
      if (!sc.IsMap()) return err(sc, "scalars", "expected a mapping NAME: number");
      for (const auto& kv : sc) {
        double v;
        if (!kv.second.IsScalar() || !absl::SimpleAtod(kv.second.Scalar(), &v)) {
          return err(kv.second, absl::StrCat("scalars.", kv.first.Scalar()), "expected a number");
        }
        task.scalars.emplace_back(kv.first.Scalar(), v);
      }
    }

    for (const char* which : {"inputs", "outputs"}) {
      const YAML::Node list = root[which];
      bool is_input = std::string(which) == "inputs";
      if (!list.IsSequence() || list.size() == 0) {
        return err(list.IsDefined() ? list : root, which, "expected a non-empty list");
      }
      std::set<std::string> names;
      for (size_t i = 0; i < list.size(); ++i) {
        std::string f = absl::StrCat(which, "[", i, "]");
        auto t = ParseTensor(list[i], f, is_input, err);
        if (!t.ok()) return t.status();
        if (!names.insert(t->name).second) {
          return err(list[i], f + ".name", absl::StrCat("duplicate name '", t->name, "'"));
        }
        (is_input ? task.inputs : task.outputs).push_back(std::move(*t));
      }
    }

    if (const YAML::Node tol = root["tolerance"]; tol.IsDefined()) {
      if (!tol.IsMap()) return err(tol, "tolerance", "expected a mapping dtype: {atol, rtol}");
      for (const auto& kv : tol) {
        std::string f = absl::StrCat("tolerance.", kv.first.Scalar());
        int32_t dtype;
        if (!runner::DtypeFromName(kv.first.Scalar(), &dtype)) {
          return err(kv.first, f, "unknown dtype");
        }
        Tolerance t = DefaultTolerance(dtype);
        for (const char* k : {"atol", "rtol"}) {
          if (const YAML::Node v = kv.second[k]; v.IsDefined()) {
            double d;
            if (!v.IsScalar() || !absl::SimpleAtod(v.Scalar(), &d) || d < 0) {
              return err(v, absl::StrCat(f, ".", k), "expected a number >= 0");
            }
            (std::string(k) == "atol" ? t.atol : t.rtol) = d;
          }
        }
        task.tolerance[dtype] = t;
      }
    }

    for (const char* k : {"flops", "bytes"}) {
      auto text = Scalar(root[k], k, err, /*required=*/false);
      if (!text.ok()) return text.status();
      if (!text->empty()) {
        auto v = EvalSizeExpr(*text, task.sizes);
        if (!v.ok()) return err(root[k], k, std::string(v.status().message()));
      }
      (std::string(k) == "flops" ? task.flops_expr : task.bytes_expr) = *text;
    }
    if (const YAML::Node d = root["degenerate_expected"]; d.IsDefined()) {
      task.degenerate_expected = d.as<bool>();
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ":", e.mark.line + 1, ": ", e.msg));
  }

  // Every declared size set must give valid shapes.
  const std::vector<SizeSet> sets = task.AllSizeSets();
  for (size_t i = 0; i < sets.size(); ++i) {
    for (auto* specs : {&task.inputs, &task.outputs}) {
      auto s = Specs(*specs, sets[i]);
      if (!s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            source_name, ": ", i == 0 ? "sizes" : absl::StrCat("verify_sizes[", i - 1, "]"),
            ": ", s.status().message()));
      }
    }
  }
  return task;
}

absl::StatusOr<NativeTask> LoadNativeTask(const std::string& dir) {
  std::error_code ec;
  fs::path abs = fs::canonical(dir, ec);
  if (ec) return absl::NotFoundError(absl::StrCat("task directory ", dir, ": ", ec.message()));
  fs::path manifest = abs / "task.yaml";
  auto text = ReadFileToString(manifest.string(), "task manifest");
  if (!text.ok()) return absl::NotFoundError(absl::StrCat("no task.yaml in ", abs.string()));
  auto task = ParseNativeTask(*text, abs.string(), manifest.string());
  if (!task.ok()) return task.status();
  for (const auto& [backend, path] : task->reference) {
    if (!fs::is_regular_file(path)) {
      return absl::InvalidArgumentError(absl::StrCat(manifest.string(), ": reference.",
                                                     BackendName(backend), ": no file ", path));
    }
  }
  return task;
}

}  // namespace crl
