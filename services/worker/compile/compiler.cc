#include "services/worker/compile/compiler.h"

#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/command.h"
#include "common/file.h"
#include "services/worker/compile/disk_budget.h"
#include "common/hash.h"
#include "common/status.h"
#include "runner/clock.h"
#include "services/worker/compile/build_recipe.h"

namespace crl {
namespace {

namespace fs = std::filesystem;

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
  }
  return "unknown-cpu";
}

}  // namespace

absl::Status CompilerFound(const CompilerOptions& options, const Toolchains& toolchains,
                           BackendKind backend) {
  const bool cuda = backend == BackendKind::kCuda;
  if (!(cuda ? toolchains.nvcc : toolchains.gxx).empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(BackendName(backend),
                                                    " backend unavailable: compiler ",
                                                    cuda ? options.nvcc : options.gxx, " not found"));
}

v1::CompileResponse ToCompileResponse(const CompileOutcome& outcome) {
  v1::CompileResponse response;
  response.set_verdict(outcome.verdict);
  response.set_artifact_id(outcome.artifact_id);
  response.set_cache_hit(outcome.cache_hit);
  response.set_compile_seconds(outcome.seconds);
  response.set_log(outcome.log);
  return response;
}

absl::StatusOr<runner::ExitInfo> RunCompileSandbox(const CompilerOptions& options,
                                                   const std::vector<std::string>& argv,
                                                   const std::string& workdir,
                                                   std::vector<std::string> readonly,
                                                   double timeout_seconds,
                                                   uint64_t max_log_bytes,
                                                   uint64_t file_size_bytes,
                                                   const RequestContext& context) {
  runner::SandboxPolicy policy;
  policy.wall_timeout_seconds = timeout_seconds;
  policy.cpu_seconds = static_cast<uint64_t>(timeout_seconds * 4) + 1;
  policy.address_space_bytes = options.memory_bytes;
  policy.file_size_bytes = file_size_bytes > 0 ? file_size_bytes : options.max_output_bytes;
  policy.tmpfs_bytes = 2ull << 30;
  policy.open_files = 1024;
  policy.seccomp = runner::SeccompProfile::kCompiler;
  policy.isolate_namespaces = options.isolate;
  policy.workdir = workdir;
  // The ABI header may live under /tmp (a checkout there), which the
  // sandbox's private /tmp would hide.
  readonly.push_back(options.include_dir);
  policy.readonly_paths = std::move(readonly);
  policy.cwd = workdir;
  policy.max_log_bytes = max_log_bytes;
  const std::string cuda_home = fs::path(options.nvcc).parent_path().parent_path().string();
  // The interpreter's directory first: a virtualenv keeps ninja (which
  // torch's extension builds need) next to its python.
  const std::string python_bin = fs::path(options.python).parent_path().string();
  policy.env = {absl::StrCat("PATH=", python_bin, ":", cuda_home,
                             "/bin:/usr/local/bin:/usr/bin:/bin"),
                "HOME=/tmp", "TMPDIR=/tmp", "LANG=C", "LC_ALL=C",
                absl::StrCat("CUDA_HOME=", cuda_home)};
  policy.masked_paths.insert(policy.masked_paths.end(), options.hidden_paths.begin(),
                             options.hidden_paths.end());
  std::string spawn_error;
  auto proc = runner::SpawnSandboxed(policy, argv, &spawn_error);
  if (!proc) {
    runner::ExitInfo failed;
    failed.kind = runner::ExitInfo::kSetupFailed;
    failed.setup_error = spawn_error;
    return failed;
  }
  // In slices, so a cancelled request stops its build within a quarter second.
  while (!proc->WaitFor(0.25)) {
    if (absl::Status live = context.Check(); !live.ok()) {
      proc->Kill();
      return live;
    }
  }
  return proc->Wait();
}

absl::StatusOr<std::string> MakeBuildDir(const CompilerOptions& options, const char* prefix) {
  std::string tmpl = (fs::path(options.cache_dir) / "tmp" / absl::StrCat(prefix, "-XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) {
    return absl::InternalError(absl::StrCat("mkdtemp in ", options.cache_dir, " failed"));
  }
  // As root, the sandbox drops to an unprivileged uid that must own its
  // build directory (and nothing else of ours).
  runner::SandboxPolicy defaults;
  if (geteuid() == 0 && chown(tmpl.c_str(), static_cast<uid_t>(defaults.run_as_uid),
                              static_cast<gid_t>(defaults.run_as_gid)) != 0) {
    std::error_code ec;
    fs::remove_all(tmpl, ec);
    return absl::InternalError(absl::StrCat("chown ", tmpl, " failed"));
  }
  return tmpl;
}

SandboxedCompiler::SandboxedCompiler(CompilerOptions options) : options_(std::move(options)) {}

SandboxedCompiler::~SandboxedCompiler() = default;

absl::StatusOr<std::unique_ptr<SandboxedCompiler>> SandboxedCompiler::Create(
    CompilerOptions options) {
  std::unique_ptr<SandboxedCompiler> c(new SandboxedCompiler(std::move(options)));
  const CompilerOptions& o = c->options_;
  if (o.include_dir.empty() || !fs::exists(fs::path(o.include_dir) / "crl" / "kernel.h")) {
    return absl::FailedPreconditionError(
        absl::StrCat("include_dir '", o.include_dir, "' does not contain crl/kernel.h"));
  }
  Toolchains toolchains;
  if (fs::exists(o.gxx)) toolchains.gxx = CommandLine(o.gxx + " --version", false);
  if (fs::exists(o.nvcc)) toolchains.nvcc = CommandLine(o.nvcc + " --version", true);
  toolchains.host_arch = CpuModel();
  c->gxx_version_ = toolchains.gxx;
  c->nvcc_version_ = toolchains.nvcc;
  c->native_ = MakeNativeRecipe(o, toolchains);
  c->kernelbench_ = MakeKernelBenchRecipe(o, toolchains);
  std::error_code ec;
  fs::create_directories(fs::path(o.cache_dir) / "objects", ec);
  fs::create_directories(fs::path(o.cache_dir) / "tmp", ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create build cache ", o.cache_dir, ": ", ec.message()));
  }
  // Builds a crash left half done: no build is in progress before we start.
  for (const auto& e : fs::directory_iterator(fs::path(o.cache_dir) / "tmp", ec)) {
    std::error_code e2;
    fs::remove_all(e.path(), e2);
  }
  if (o.budget) o.budget->Scan();
  return c;
}

BuildRecipe& SandboxedCompiler::RecipeFor(TaskFormat format) const {
  return format == TaskFormat::kKernelBench ? *kernelbench_ : *native_;
}

std::string SandboxedCompiler::Toolchain(BackendKind backend) const {
  return backend == BackendKind::kCuda ? nvcc_version_ : gxx_version_;
}

std::string SandboxedCompiler::ArtifactId(const CompileJob& job) const {
  return RecipeFor(job.format).ArtifactId(job);
}

absl::StatusOr<std::string> SandboxedCompiler::LibraryFor(const std::string& artifact_id) {
  if (artifact_id.size() != 64 ||
      artifact_id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("artifact_id: not a SHA-256 hex digest"));
  }
  const fs::path object = fs::path(options_.cache_dir) / "objects" / artifact_id;
  for (const BuildRecipe* recipe : {native_.get(), kernelbench_.get()}) {
    const fs::path product = object / recipe->ProductName();
    if (fs::exists(product)) {
      if (options_.budget) options_.budget->Touch(object.string());
      return product.string();
    }
  }
  return absl::NotFoundError(absl::StrCat("artifact ", artifact_id, " is not in the cache"));
}

absl::StatusOr<CompileOutcome> SandboxedCompiler::Compile(const CompileJob& job,
                                                          const RequestContext& context) {
  const double start = runner::MonotonicSeconds();
  auto elapsed = [&] { return runner::MonotonicSeconds() - start; };
  BuildRecipe& recipe = RecipeFor(job.format);
  if (absl::Status available = recipe.Available(job.backend); !available.ok()) return available;
  CRL_RETURN_IF_ERROR(context.Check());

  CompileOutcome outcome;
  outcome.artifact_id = recipe.ArtifactId(job);
  const fs::path object = fs::path(options_.cache_dir) / "objects" / outcome.artifact_id;
  const char* product = recipe.ProductName();

  // Cached result: a product, or a compile error (deterministic for a key).
  if (fs::exists(object / product) || fs::exists(object / "compile_error")) {
    outcome.cache_hit = true;
    if (options_.budget) options_.budget->Touch(object.string());
    outcome.log = ReadFileToString((object / "log.txt").string(), "build log").value_or("");
    if (fs::exists(object / product)) {
      outcome.verdict = v1::VERDICT_OK;
      outcome.library_path = (object / product).string();
    } else {
      outcome.verdict = v1::VERDICT_COMPILE_ERROR;
    }
    outcome.seconds = elapsed();
    return outcome;
  }

  CRL_ASSIGN_OR_RETURN(const std::string build_dir, MakeBuildDir(options_, "build"));
  const fs::path build = build_dir;
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(build, ec);
  };
  const std::string src = (build / recipe.SourceName(job.backend)).string();
  const std::string out = (build / product).string();
  if (absl::Status written = WriteStringToFile(src, job.source); !written.ok()) {
    cleanup();
    return absl::InternalError(written.message());
  }
  BuildRecipe::Command command = recipe.Prepare(job, build.string(), src, out);
  const double timeout =
      job.timeout_seconds > 0 ? job.timeout_seconds : command.default_timeout_seconds;
  auto ran = RunCompileSandbox(options_, command.argv, build.string(), command.readonly, timeout,
                               job.max_log_bytes > 0 ? job.max_log_bytes : options_.max_log_bytes,
                               0, context);
  if (!ran.ok()) {
    cleanup();
    return ran.status();
  }
  const runner::ExitInfo& exit = *ran;
  outcome.seconds = elapsed();
  // Paths inside the sandbox are ours, not the candidate's: keep logs short.
  outcome.log = exit.log;
  if (exit.log_truncated) absl::StrAppend(&outcome.log, "\n[log trimmed]");

  const bool succeeded = exit.kind == runner::ExitInfo::kExited && exit.exit_code == 0;
  if (!succeeded) {
    if (absl::Status toolchain = recipe.CheckToolchainRan(exit); !toolchain.ok()) {
      cleanup();
      return toolchain;
    }
  }
  if (exit.kind == runner::ExitInfo::kSetupFailed) {
    cleanup();
    return absl::UnavailableError(absl::StrCat("compiler sandbox setup failed: ", exit.setup_error));
  }
  bool cacheable = false;
  if (exit.kind == runner::ExitInfo::kTimedOut || exit.cpu_limit_hit) {
    outcome.verdict = v1::VERDICT_TIMEOUT;
  } else if (exit.seccomp_violation) {
    outcome.verdict = v1::VERDICT_SANDBOX_VIOLATION;
  } else if (exit.file_size_limit_hit || exit.memory_limit_hint) {
    outcome.verdict = v1::VERDICT_RESOURCE_LIMIT;
  } else if (succeeded && fs::exists(out)) {
    outcome.verdict = v1::VERDICT_OK;
    cacheable = true;
  } else if (exit.kind == runner::ExitInfo::kExited) {
    outcome.verdict = v1::VERDICT_COMPILE_ERROR;
    cacheable = true;
  } else {
    // The compiler itself crashed (ICE, OOM kill): report, do not cache.
    outcome.verdict = v1::VERDICT_COMPILE_ERROR;
  }
  if (!cacheable) {
    absl::StrAppend(&outcome.log, "\ncompiler ", exit.Describe());
    cleanup();
    return outcome;
  }
  (void)WriteStringToFile((build / "log.txt").string(), outcome.log);
  if (outcome.verdict != v1::VERDICT_OK) {
    (void)WriteStringToFile((build / "compile_error").string(), "");
  }
  if (!recipe.KeepSource()) fs::remove(src);
  std::error_code ec;
  fs::rename(build, object, ec);
  if (ec) {
    // Another compile of the same key won the race; its result is identical.
    cleanup();
  }
  if (options_.budget) options_.budget->Added(object.string());
  if (outcome.verdict == v1::VERDICT_OK) outcome.library_path = (object / product).string();
  return outcome;
}

}  // namespace crl
