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

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/logging.h"
#include "runner/sandbox.h"

namespace crl {
namespace {

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
  if (!fs::exists(lib)) {
    return absl::NotFoundError(absl::StrCat("artifact ", artifact_id, " is not in the cache"));
  }
  return lib.string();
}

absl::StatusOr<CompileOutcome> SandboxedCompiler::Compile(const CompileJob& job) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const bool cuda = job.backend == BackendKind::kCuda;
  if (Toolchain(job.backend).empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        BackendName(job.backend), " backend unavailable: compiler ",
        cuda ? options_.nvcc : options_.gxx, " not found"));
  }
  CompileOutcome outcome;
  outcome.artifact_id = ArtifactId(job);
  const fs::path object = fs::path(options_.cache_dir) / "objects" / outcome.artifact_id;

  // Cached result: a library, or a compile error (deterministic for a key).
  if (fs::exists(object / "lib.so") || fs::exists(object / "compile_error")) {
    outcome.cache_hit = true;
    outcome.log = ReadAll(object / "log.txt");
    if (fs::exists(object / "lib.so")) {
      outcome.verdict = v1::VERDICT_OK;
      outcome.library_path = (object / "lib.so").string();
    } else {
      outcome.verdict = v1::VERDICT_COMPILE_ERROR;
    }
    outcome.seconds = elapsed();
    return outcome;
  }

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
  const std::string src = (build / (cuda ? "candidate.cu" : "candidate.cc")).string();
  const std::string out = (build / "lib.so").string();
  if (!WriteAll(src, job.source)) {
    cleanup();
    return absl::InternalError(absl::StrCat("cannot write ", src));
  }

  runner::SandboxPolicy policy;
  policy.wall_timeout_seconds = job.timeout_seconds > 0 ? job.timeout_seconds : options_.timeout_seconds;
  policy.cpu_seconds = static_cast<uint64_t>(policy.wall_timeout_seconds * 2) + 1;
  policy.address_space_bytes = options_.memory_bytes;
  policy.file_size_bytes = options_.max_output_bytes;
  policy.tmpfs_bytes = 2ull << 30;
  policy.open_files = 1024;
  policy.seccomp = runner::SeccompProfile::kCompiler;
  policy.isolate_namespaces = options_.isolate;
  policy.workdir = build.string();
  // The ABI header may live under /tmp (a checkout there), which the
  // sandbox's private /tmp would hide.
  policy.readonly_paths = {options_.include_dir};
  policy.cwd = build.string();
  policy.max_log_bytes = job.max_log_bytes > 0 ? job.max_log_bytes : options_.max_log_bytes;
  policy.env = {"PATH=/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin", "HOME=/tmp",
                "TMPDIR=/tmp", "LANG=C", "LC_ALL=C"};
  policy.masked_paths.insert(policy.masked_paths.end(), options_.hidden_paths.begin(),
                             options_.hidden_paths.end());

  std::string error;
  auto proc = runner::SpawnSandboxed(policy, CommandFor(job, src, out), &error);
  if (!proc) {
    cleanup();
    return absl::UnavailableError(absl::StrCat("cannot start compiler sandbox: ", error));
  }
  runner::ExitInfo exit = proc->Wait();
  outcome.seconds = elapsed();
  // Paths inside the sandbox are ours, not the candidate's: keep logs short.
  outcome.log = exit.log;
  if (exit.log_truncated) absl::StrAppend(&outcome.log, "\n[log trimmed]");

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
  fs::remove(src);
  std::error_code ec;
  fs::rename(build, object, ec);
  if (ec) {
    // Another compile of the same key won the race; its result is identical.
    cleanup();
  }
  if (outcome.verdict == v1::VERDICT_OK) outcome.library_path = (object / "lib.so").string();
  return outcome;
}

}  // namespace crl
