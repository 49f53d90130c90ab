#include "services/worker/compiler.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/logging.h"
#include "runner/sandbox.h"

namespace crl {
namespace {

// What crl_kb_harness.py's build mode prints once python and torch are up and
// before it imports the candidate (TOOLCHAIN_READY there).
constexpr char kKbToolchainReady[] = "crl-harness: toolchain ready";

namespace fs = std::filesystem;

// First (or last) line of a trusted command's output, run at start-up only.
std::string CommandLine(const std::string& command, bool last) {
  std::string out;
  if (FILE* p = popen((command + " 2>/dev/null").c_str(), "r")) {
    std::array<char, 512> buf;
    while (fgets(buf.data(), buf.size(), p)) {
      std::string line(absl::StripTrailingAsciiWhitespace(buf.data()));
      if (line.empty()) continue;
      if (!last && !out.empty()) continue;
      out = line;
    }
    pclose(p);
  }
  return out;
}

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WriteAll(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary);
  out << data;
  return static_cast<bool>(out);
}

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

std::string Sha256Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

absl::StatusOr<std::unique_ptr<SandboxedCompiler>> SandboxedCompiler::Create(
    CompilerOptions options) {
  std::unique_ptr<SandboxedCompiler> c(new SandboxedCompiler(std::move(options)));
  const CompilerOptions& o = c->options_;
  if (o.include_dir.empty() || !fs::exists(fs::path(o.include_dir) / "crl" / "kernel.h")) {
    return absl::FailedPreconditionError(
        absl::StrCat("include_dir '", o.include_dir, "' does not contain crl/kernel.h"));
  }
  if (fs::exists(o.gxx)) c->gxx_version_ = CommandLine(o.gxx + " --version", false);
  if (fs::exists(o.nvcc)) c->nvcc_version_ = CommandLine(o.nvcc + " --version", true);
  c->host_arch_ = CpuModel();
  std::error_code ec;
  fs::create_directories(fs::path(o.cache_dir) / "objects", ec);
  fs::create_directories(fs::path(o.cache_dir) / "tmp", ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create build cache ", o.cache_dir, ": ", ec.message()));
  }
  return c;
}

std::string SandboxedCompiler::Toolchain(BackendKind backend) const {
  return backend == BackendKind::kCuda ? nvcc_version_ : gxx_version_;
}

std::string SandboxedCompiler::ArtifactId(const CompileJob& job) const {
  const bool cuda = job.backend == BackendKind::kCuda;
  if (job.kernelbench) {
    // kb_toolchain_ is written once, before the first KernelBench compile.
    std::string toolchain;
    {
      absl::MutexLock lock(const_cast<absl::Mutex*>(&kb_mu_));
      toolchain = kb_toolchain_;
    }
    return Sha256Hex(absl::StrCat(
        "crl-kb-artifact-v1\n", BackendName(job.backend), "\n", toolchain, "\n", gxx_version_,
        "\n", cuda ? nvcc_version_ + "\n" + options_.cuda_arch : host_arch_, "\n",
        Sha256Hex(ReadAll(options_.kb_harness)), "\n", absl::StrJoin(options_.hidden_paths, ","),
        "\n", job.source));
  }
  // Everything that changes the bytes of lib.so is in the key; the include
  // directory's ABI header is versioned by its content.
  std::string key = absl::StrCat(
      "crl-artifact-v1\n", BackendName(job.backend), "\n", Toolchain(job.backend), "\n",
      cuda ? options_.cuda_arch : host_arch_, "\n",
      absl::StrJoin(cuda ? options_.cuda_flags : options_.host_flags, " "), "\n",
      cuda ? gxx_version_ : "", "\n",
      Sha256Hex(ReadAll(fs::path(options_.include_dir) / "crl" / "kernel.h")), "\n",
      // What the compiler can see changes what it prints.
      absl::StrJoin(options_.hidden_paths, ","), "\n", job.source);
  return Sha256Hex(key);
}

std::vector<std::string> SandboxedCompiler::CommandFor(const CompileJob& job,
                                                       const std::string& src,
                                                       const std::string& out) const {
  std::vector<std::string> argv;
  if (job.backend == BackendKind::kCuda) {
    argv = {options_.nvcc, absl::StrCat("-arch=", options_.cuda_arch)};
    argv.insert(argv.end(), options_.cuda_flags.begin(), options_.cuda_flags.end());
  } else {
    argv = {options_.gxx};
    argv.insert(argv.end(), options_.host_flags.begin(), options_.host_flags.end());
  }
  argv.insert(argv.end(), {absl::StrCat("-I", options_.include_dir), src, "-o", out});
  return argv;
}

absl::StatusOr<std::string> SandboxedCompiler::LibraryFor(const std::string& artifact_id) {
  if (artifact_id.size() != 64 ||
      artifact_id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("artifact_id: not a SHA-256 hex digest"));
  }
  fs::path lib = fs::path(options_.cache_dir) / "objects" / artifact_id / "lib.so";
  if (!fs::exists(lib)) lib = lib.parent_path() / "manifest.json";
  if (!fs::exists(lib)) {
    return absl::NotFoundError(absl::StrCat("artifact ", artifact_id, " is not in the cache"));
  }
  return lib.string();
}

std::string SandboxedCompiler::KbToolchain() {
  absl::MutexLock lock(&kb_mu_);
  if (!kb_probed_) {
    kb_probed_ = true;
    if (fs::exists(options_.python) && fs::exists(options_.kb_harness)) {
      // Locates torch without importing it (an import costs ~5 s per
      // process); its version.py (version, CUDA, git hash) identifies it.
      std::string probe = CommandLine(
          options_.python +
              " -c 'import sys, importlib.util as u; s = u.find_spec(\"torch\"); "
              "print(\"python\", sys.version.split()[0], s.origin if s else \"\")'",
          true);
      std::vector<std::string> parts = absl::StrSplit(absl::StripAsciiWhitespace(probe), ' ');
      const fs::path version_py =
          parts.size() == 3 ? fs::path(parts[2]).parent_path() / "version.py" : fs::path();
      std::string version = version_py.empty() ? "" : ReadAll(version_py.string());
      if (parts[0] == "python" && !version.empty()) {
        std::string torch_version = "?";
        for (absl::string_view line : absl::StrSplit(version, '\n')) {
          if (absl::StartsWith(line, "__version__")) {
            torch_version = std::string(absl::StripAsciiWhitespace(line.substr(line.find('=') + 1)));
          }
        }
        kb_toolchain_ = absl::StrCat("python ", parts[1], " torch ", torch_version, " ",
                                     Sha256Hex(version).substr(0, 16));
      }
    }
  }
  return kb_toolchain_;
}

runner::ExitInfo SandboxedCompiler::RunSandboxed(const std::vector<std::string>& argv,
                                                 const std::string& workdir,
                                                 std::vector<std::string> readonly,
                                                 double timeout_seconds, uint64_t max_log_bytes,
                                                 std::string* spawn_error,
                                                 uint64_t file_size_bytes) const {
  runner::SandboxPolicy policy;
  policy.wall_timeout_seconds = timeout_seconds;
  policy.cpu_seconds = static_cast<uint64_t>(timeout_seconds * 4) + 1;
  policy.address_space_bytes = options_.memory_bytes;
  policy.file_size_bytes = file_size_bytes > 0 ? file_size_bytes : options_.max_output_bytes;
  policy.tmpfs_bytes = 2ull << 30;
  policy.open_files = 1024;
  policy.seccomp = runner::SeccompProfile::kCompiler;
  policy.isolate_namespaces = options_.isolate;
  policy.workdir = workdir;
  // The ABI header may live under /tmp (a checkout there), which the
  // sandbox's private /tmp would hide.
  readonly.push_back(options_.include_dir);
  policy.readonly_paths = std::move(readonly);
  policy.cwd = workdir;
  policy.max_log_bytes = max_log_bytes;
  const std::string cuda_home = fs::path(options_.nvcc).parent_path().parent_path().string();
  // The interpreter's directory first: a virtualenv keeps ninja (which
  // torch's extension builds need) next to its python.
  const std::string python_bin = fs::path(options_.python).parent_path().string();
  policy.env = {absl::StrCat("PATH=", python_bin, ":", cuda_home, "/bin:/usr/local/bin:/usr/bin:/bin"),
                "HOME=/tmp", "TMPDIR=/tmp", "LANG=C", "LC_ALL=C",
                absl::StrCat("CUDA_HOME=", cuda_home)};
  policy.masked_paths.insert(policy.masked_paths.end(), options_.hidden_paths.begin(),
                             options_.hidden_paths.end());
  auto proc = runner::SpawnSandboxed(policy, argv, spawn_error);
  if (!proc) {
    runner::ExitInfo failed;
    failed.kind = runner::ExitInfo::kSetupFailed;
    failed.setup_error = *spawn_error;
    return failed;
  }
  return proc->Wait();
}

std::string SandboxedCompiler::EnsureKbPch() {
  if (!options_.kb_pch) return "";
  absl::MutexLock lock(&kb_mu_);
  if (pch_tried_) return pch_dir_;
  pch_tried_ = true;
  // Trusted inputs only (torch's headers, the compiler): one PCH per cache
  // and toolchain, shared read-only by every later build.
  const fs::path dir = fs::path(options_.cache_dir) / "kb-pch" /
                       Sha256Hex(absl::StrCat(kb_toolchain_, "\n", gxx_version_, "\n",
                                              Sha256Hex(ReadAll(options_.kb_harness))))
                           .substr(0, 16);
  if (fs::exists(dir / "done")) {
    pch_dir_ = dir.string();
    return pch_dir_;
  }
  std::string tmpl = (fs::path(options_.cache_dir) / "tmp" / "pch-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return "";
  runner::SandboxPolicy defaults;
  if (geteuid() == 0) {
    (void)chown(tmpl.c_str(), static_cast<uid_t>(defaults.run_as_uid),
                static_cast<gid_t>(defaults.run_as_gid));
  }
  auto start = std::chrono::steady_clock::now();
  std::string error;
  runner::ExitInfo exit = RunSandboxed(
      {options_.python, "-B", options_.kb_harness, "pch", tmpl}, tmpl,
      {fs::path(options_.kb_harness).parent_path().string()}, 900, 16 << 10, &error,
      // torch/extension.h precompiles to about 650 MB per flag set.
      uint64_t{4} << 30);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::error_code ec;
  if (exit.kind == runner::ExitInfo::kExited && exit.exit_code == 0) {
    WriteAll(fs::path(tmpl) / "done", "");
    fs::create_directories(dir.parent_path(), ec);
    fs::rename(tmpl, dir, ec);
    if (ec) fs::remove_all(tmpl, ec);  // another worker finished first
    CRL_LOG(INFO) << "precompiled torch/extension.h in " << seconds << " s: " << dir.string();
    pch_dir_ = dir.string();
  } else {
    CRL_LOG(WARNING) << "no precompiled header for KernelBench builds (" << exit.Describe()
                     << "): " << exit.log.substr(0, 1000);
    fs::remove_all(tmpl, ec);
  }
  return pch_dir_;
}

absl::StatusOr<CompileOutcome> SandboxedCompiler::Compile(const CompileJob& job) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const bool cuda = job.backend == BackendKind::kCuda;
  if (job.kernelbench && KbToolchain().empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "KernelBench tasks unavailable: ", options_.python,
        " cannot import torch (or the harness ", options_.kb_harness, " is missing)"));
  }
  if (Toolchain(job.backend).empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        BackendName(job.backend), " backend unavailable: compiler ",
        cuda ? options_.nvcc : options_.gxx, " not found"));
  }
  CompileOutcome outcome;
  outcome.artifact_id = ArtifactId(job);
  const fs::path object = fs::path(options_.cache_dir) / "objects" / outcome.artifact_id;
  const char* product = job.kernelbench ? "manifest.json" : "lib.so";

  // Cached result: a library, or a compile error (deterministic for a key).
  if (fs::exists(object / product) || fs::exists(object / "compile_error")) {
    outcome.cache_hit = true;
    outcome.log = ReadAll(object / "log.txt");
    if (fs::exists(object / product)) {
      outcome.verdict = v1::VERDICT_OK;
      outcome.library_path = (object / product).string();
    } else {
      outcome.verdict = v1::VERDICT_COMPILE_ERROR;
    }
    outcome.seconds = elapsed();
    return outcome;
  }
  const std::string pch = job.kernelbench ? EnsureKbPch() : "";

  std::string tmpl = (fs::path(options_.cache_dir) / "tmp" / "build-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) {
    return absl::InternalError(absl::StrCat("mkdtemp in ", options_.cache_dir, " failed"));
  }
  const fs::path build = tmpl;
  // As root, the sandbox drops to an unprivileged uid that must own its
  // build directory (and nothing else of ours).
  runner::SandboxPolicy defaults;
  if (geteuid() == 0 &&
      chown(tmpl.c_str(), static_cast<uid_t>(defaults.run_as_uid),
            static_cast<gid_t>(defaults.run_as_gid)) != 0) {
    return absl::InternalError(absl::StrCat("chown ", tmpl, " failed"));
  }
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(build, ec);
  };
  const std::string src =
      (build / (job.kernelbench ? "candidate.py" : cuda ? "candidate.cu" : "candidate.cc")).string();
  const std::string out = (build / product).string();
  if (!WriteAll(src, job.source)) {
    cleanup();
    return absl::InternalError(absl::StrCat("cannot write ", src));
  }

  std::vector<std::string> argv, readonly;
  double timeout = job.timeout_seconds > 0 ? job.timeout_seconds : options_.timeout_seconds;
  if (job.kernelbench) {
    // TORCH_CUDA_ARCH_LIST: "sm_90" -> "9.0" (one architecture, not all).
    std::string arch = absl::StrReplaceAll(absl::StripPrefix(options_.cuda_arch, "sm_"), {{"a", ""}});
    if (arch.size() >= 2) {
      arch = absl::StrCat(arch.substr(0, arch.size() - 1), ".", arch.substr(arch.size() - 1));
    }
    argv = {options_.python, "-B", options_.kb_harness, "build", src, build.string(), pch,
            cuda ? arch : ""};
    readonly = {fs::path(options_.kb_harness).parent_path().string()};
    if (!pch.empty()) readonly.push_back(pch);
    if (job.timeout_seconds <= 0) timeout = options_.kb_timeout_seconds;
  } else {
    argv = CommandFor(job, src, out);
  }
  std::string error;
  runner::ExitInfo exit =
      RunSandboxed(argv, build.string(), readonly, timeout,
                   job.max_log_bytes > 0 ? job.max_log_bytes : options_.max_log_bytes, &error);
  outcome.seconds = elapsed();
  // Paths inside the sandbox are ours, not the candidate's: keep logs short.
  outcome.log = exit.log;
  if (exit.log_truncated) absl::StrAppend(&outcome.log, "\n[log trimmed]");

  if (job.kernelbench && !(exit.kind == runner::ExitInfo::kExited && exit.exit_code == 0) &&
      exit.log.find(kKbToolchainReady) == std::string::npos) {
    // Without the harness's line, python or torch failed before any
    // candidate code ran.
    cleanup();
    return absl::UnavailableError(absl::StrCat("KernelBench build toolchain failed before the "
                                               "candidate was imported (", exit.Describe(),
                                               "): ", exit.log.substr(0, 2000)));
  }
  if (exit.kind == runner::ExitInfo::kSetupFailed) {
    cleanup();
    return absl::UnavailableError(absl::StrCat("compiler sandbox setup failed: ", exit.setup_error));
  }
  bool cacheable = false;
  if (exit.kind == runner::ExitInfo::kTimedOut || exit.cpu_limit_hit) {
    outcome.verdict = v1::VERDICT_TIMEOUT;
    absl::StrAppend(&outcome.log, "\ncompiler ", exit.Describe());
  } else if (exit.seccomp_violation) {
    outcome.verdict = v1::VERDICT_SANDBOX_VIOLATION;
    absl::StrAppend(&outcome.log, "\ncompiler ", exit.Describe());
  } else if (exit.file_size_limit_hit || exit.memory_limit_hint) {
    outcome.verdict = v1::VERDICT_RESOURCE_LIMIT;
    absl::StrAppend(&outcome.log, "\ncompiler ", exit.Describe());
  } else if (exit.kind == runner::ExitInfo::kExited && exit.exit_code == 0 && fs::exists(out)) {
    outcome.verdict = v1::VERDICT_OK;
    cacheable = true;
  } else if (exit.kind == runner::ExitInfo::kExited) {
    outcome.verdict = v1::VERDICT_COMPILE_ERROR;
    cacheable = true;
  } else {
    // The compiler itself crashed (ICE, OOM kill): report, do not cache.
    outcome.verdict = v1::VERDICT_COMPILE_ERROR;
    absl::StrAppend(&outcome.log, "\ncompiler ", exit.Describe());
  }

  if (!cacheable) {
    cleanup();
    return outcome;
  }
  WriteAll(build / "log.txt", outcome.log);
  if (outcome.verdict != v1::VERDICT_OK) WriteAll(build / "compile_error", "");
  // A KernelBench candidate is imported again from the artifact at run time.
  if (!job.kernelbench) fs::remove(src);
  std::error_code ec;
  fs::rename(build, object, ec);
  if (ec) {
    // Another compile of the same key won the race; its result is identical.
    cleanup();
  }
  if (outcome.verdict == v1::VERDICT_OK) outcome.library_path = (object / product).string();
  return outcome;
}

}  // namespace crl
