// KernelBench candidates: the harness imports the candidate module in the
// compile sandbox, so its load_inline builds land in the artifact
// (runner/python/crl_kb_harness.py build). torch's headers are precompiled
// once per cache and toolchain, from trusted inputs only (crl_pch.py).
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "common/command.h"
#include "common/file.h"
#include "common/hash.h"
#include "common/logging.h"
#include "runner/clock.h"
#include "services/worker/compile/build_recipe.h"

namespace crl {
namespace {

namespace fs = std::filesystem;

// What crl_kb_harness.py's build mode prints once python and torch are up and
// before it imports the candidate (TOOLCHAIN_READY there).
constexpr char kToolchainReady[] = "crl-harness: toolchain ready";

class KernelBenchRecipe final : public BuildRecipe {
 public:
  KernelBenchRecipe(const CompilerOptions& options, const Toolchains& toolchains)
      : options_(options), toolchains_(toolchains) {}

  absl::Status Available(BackendKind backend) override {
    if (TorchToolchain().empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "KernelBench tasks unavailable: ", options_.python,
          " cannot import torch (or the harness ", options_.kb_harness, " is missing)"));
    }
    return CompilerFound(options_, toolchains_, backend);
  }

  std::string ArtifactId(const CompileJob& job) const override {
    const bool cuda = job.backend == BackendKind::kCuda;
    return Sha256Hex(absl::StrCat(
        "crl-kb-artifact-v1\n", BackendName(job.backend), "\n", TorchToolchain(), "\n",
        toolchains_.gxx, "\n",
        cuda ? toolchains_.nvcc + "\n" + options_.cuda_arch : toolchains_.host_arch, "\n",
        HarnessHash(), "\n", absl::StrJoin(options_.hidden_paths, ","), "\n",
        cuda && options_.kb_split_cuda ? "split\n" : "", job.source));
  }

  std::string SourceName(BackendKind) const override { return "candidate.py"; }
  const char* ProductName() const override { return "manifest.json"; }

  Command Prepare(const CompileJob& job, const std::string& build_dir, const std::string& source,
                  const std::string&) override {
    const std::string pch = EnsurePch();
    // TORCH_CUDA_ARCH_LIST: "sm_90" -> "9.0" (one architecture, not all).
    std::string arch =
        absl::StrReplaceAll(absl::StripPrefix(options_.cuda_arch, "sm_"), {{"a", ""}});
    if (arch.size() >= 2) {
      arch = absl::StrCat(arch.substr(0, arch.size() - 1), ".", arch.substr(arch.size() - 1));
    }
    Command command;
    command.argv = {options_.python, "-B", options_.kb_harness, "build", source, build_dir, pch,
                    job.backend == BackendKind::kCuda ? arch : "",
                    options_.kb_split_cuda ? "split" : "whole"};
    command.readonly = {fs::path(options_.kb_harness).parent_path().string()};
    if (!pch.empty()) command.readonly.push_back(pch);
    command.default_timeout_seconds = options_.kb_timeout_seconds;
    return command;
  }

  absl::Status CheckToolchainRan(const runner::ExitInfo& exit) const override {
    // Without the harness's line, python or torch failed before any
    // candidate code ran.
    if (exit.log.find(kToolchainReady) != std::string::npos) return absl::OkStatus();
    return absl::UnavailableError(absl::StrCat(
        "KernelBench build toolchain failed before the candidate was imported (",
        exit.Describe(), "): ", exit.log.substr(0, 2000)));
  }

  bool KeepSource() const override { return true; }

 private:
  // The harness and the modules beside it (the CUDA source split).
  std::string HarnessHash() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::path(options_.kb_harness).parent_path(), ec)) {
      if (entry.path().extension() == ".py") names.push_back(entry.path().string());
    }
    std::sort(names.begin(), names.end());
    std::string all;
    for (const std::string& name : names) {
      absl::StrAppend(&all, fs::path(name).filename().string(), "\n",
                      Sha256Hex(ReadFileToString(name, "harness").value_or("")), "\n");
    }
    return Sha256Hex(all);
  }

  // "python 3.11.2 torch 1.13.0 <hash>" once probed; empty without torch.
  std::string TorchToolchain() const {
    absl::MutexLock lock(&mu_);
    if (probed_) return torch_;
    probed_ = true;
    if (!fs::exists(options_.python) || !fs::exists(options_.kb_harness)) return torch_;
    // Locates torch without importing it (an import costs ~5 s per
    // process); its version.py (version, CUDA, git hash) identifies it.
    const std::string probe = CommandLine(
        options_.python +
            " -c 'import sys, importlib.util as u; s = u.find_spec(\"torch\"); "
            "print(\"python\", sys.version.split()[0], s.origin if s else \"\")'",
        true);
    std::vector<std::string> parts = absl::StrSplit(absl::StripAsciiWhitespace(probe), ' ');
    if (parts.size() != 3 || parts[0] != "python") return torch_;
    const std::string version =
        ReadFileToString((fs::path(parts[2]).parent_path() / "version.py").string(), "torch")
            .value_or("");
    if (version.empty()) return torch_;
    std::string torch_version = "?";
    for (absl::string_view line : absl::StrSplit(version, '\n')) {
      if (absl::StartsWith(line, "__version__")) {
        torch_version = std::string(absl::StripAsciiWhitespace(line.substr(line.find('=') + 1)));
      }
    }
    torch_ = absl::StrCat("python ", parts[1], " torch ", torch_version, " ",
                          Sha256Hex(version).substr(0, 16));
    return torch_;
  }

  // The precompiled-header directory ("" when disabled or it failed).
  std::string EnsurePch() {
    if (!options_.kb_pch) return "";
    const std::string torch = TorchToolchain();
    absl::MutexLock lock(&pch_mu_);
    if (pch_tried_) return pch_dir_;
    pch_tried_ = true;
    const fs::path dir = fs::path(options_.cache_dir) / "kb-pch" /
                         Sha256Hex(absl::StrCat(torch, "\n", toolchains_.gxx, "\n", HarnessHash()))
                             .substr(0, 16);
    if (fs::exists(dir / "done")) return pch_dir_ = dir.string();
    auto tmp = MakeBuildDir(options_, "pch");
    if (!tmp.ok()) return "";
    const double start = runner::MonotonicSeconds();
    auto exit = RunCompileSandbox(
        options_, {options_.python, "-B", options_.kb_harness, "pch", *tmp}, *tmp,
        {fs::path(options_.kb_harness).parent_path().string()}, 900, 16 << 10,
        // Each header precompiles to 0.4-0.75 GB with torch 2.11 (crl_pch.py).
        uint64_t{4} << 30, RequestContext::Background());
    std::error_code ec;
    if (exit.ok() && exit->kind == runner::ExitInfo::kExited && exit->exit_code == 0) {
      (void)WriteStringToFile((fs::path(*tmp) / "done").string(), "");
      fs::create_directories(dir.parent_path(), ec);
      fs::rename(*tmp, dir, ec);
      if (ec) fs::remove_all(*tmp, ec);  // another worker finished first
      // The harness's own "pch: ..." lines say how many headers it built and
      // why any were left out (host parts then build without one).
      std::vector<std::string> said;
      for (absl::string_view line : absl::StrSplit(exit->log, '\n')) {
        if (absl::StartsWith(line, "pch: ")) said.emplace_back(line);
      }
      CRL_LOG(INFO) << "precompiled torch headers in " << runner::MonotonicSeconds() - start
                    << " s: " << dir.string() << " (" << absl::StrJoin(said, "; ") << ")";
      pch_dir_ = dir.string();
    } else {
      CRL_LOG(WARNING) << "no precompiled header for KernelBench builds ("
                       << (exit.ok() ? exit->Describe() : exit.status().ToString()) << "): "
                       << (exit.ok() ? exit->log.substr(0, 1000) : "");
      fs::remove_all(*tmp, ec);
    }
    return pch_dir_;
  }

  const CompilerOptions& options_;
  const Toolchains toolchains_;
  mutable absl::Mutex mu_;
  mutable bool probed_ ABSL_GUARDED_BY(mu_) = false;
  mutable std::string torch_ ABSL_GUARDED_BY(mu_);
  absl::Mutex pch_mu_;
  bool pch_tried_ ABSL_GUARDED_BY(pch_mu_) = false;
  std::string pch_dir_ ABSL_GUARDED_BY(pch_mu_);
};

}  // namespace

std::unique_ptr<BuildRecipe> MakeKernelBenchRecipe(const CompilerOptions& options,
                                                   const Toolchains& toolchains) {
  return std::make_unique<KernelBenchRecipe>(options, toolchains);
}

}  // namespace crl
