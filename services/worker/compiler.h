// The CPU compile tier: compiles a candidate or reference source into a
// shared library inside the sandbox, into a content-addressed build cache.
#ifndef CRL_SERVICES_WORKER_COMPILER_H_
#define CRL_SERVICES_WORKER_COMPILER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "crl/v1/common.pb.h"
#include "runner/sandbox.h"
#include "services/worker/task.h"

namespace crl {

struct CompileJob {
  BackendKind backend = BackendKind::kHost;
  // A KernelBench candidate (.py): the build imports it with load_inline
  // compiling into the artifact (runner/python/crl_kb_harness.py build).
  bool kernelbench = false;
  std::string source;
  // For logs only ("candidate.cu"); the cache key ignores it.
  std::string filename;
  // Overrides of the compiler's limits (<= 0: defaults).
  double timeout_seconds = 0;
  int64_t max_log_bytes = 0;
};

struct CompileOutcome {
  // VERDICT_OK, VERDICT_COMPILE_ERROR, VERDICT_TIMEOUT, VERDICT_RESOURCE_LIMIT
  // or VERDICT_SANDBOX_VIOLATION. Infrastructure failures are a non-OK status
  // from Compile() instead.
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  // SHA-256 (hex) of backend, toolchain, flags, target and source.
  std::string artifact_id;
  // The built library (VERDICT_OK only); for KernelBench candidates the
  // build's manifest.json, next to candidate.py and the extensions.
  std::string library_path;
  bool cache_hit = false;
  double seconds = 0;
  // Compiler output, trimmed.
  std::string log;
};

// Thread-safe implementations required: the compile pool calls concurrently.
class CompilerInterface {
 public:
  virtual ~CompilerInterface() = default;
  virtual absl::StatusOr<CompileOutcome> Compile(const CompileJob& job) = 0;
  // Library (or KernelBench manifest) path of an artifact already in the
  // cache; NOT_FOUND otherwise.
  virtual absl::StatusOr<std::string> LibraryFor(const std::string& artifact_id) = 0;
  // "g++ (Debian 12.2.0-14) 12.2.0"; empty when the backend has no compiler.
  virtual std::string Toolchain(BackendKind backend) const = 0;
};

struct CompilerOptions {
  // Build cache root: objects/<id>/{lib.so,log.txt}, tmp/ for builds in progress.
  std::string cache_dir = "/tmp/crl-cache";
  // Directory holding crl/kernel.h.
  std::string include_dir;
  std::string gxx = "/usr/bin/g++";
  std::string nvcc = "/usr/local/cuda/bin/nvcc";
  // CUDA target, e.g. sm_90.
  std::string cuda_arch = "sm_90";
  std::vector<std::string> host_flags = {"-std=c++17", "-O3", "-march=native", "-fPIC",
                                         "-shared", "-fvisibility=hidden"};
  std::vector<std::string> cuda_flags = {"-std=c++17", "-O3", "-Xcompiler", "-fPIC", "-shared",
                                         "-Xcompiler", "-fvisibility=hidden", "-lcublas"};
  // KernelBench builds: interpreter with torch, the harness, a precompiled
  // torch/extension.h (built once per cache, without candidate code).
  std::string python = "/usr/bin/python3";
  std::string kb_harness;
  bool kb_pch = true;
  double kb_timeout_seconds = 300;
  // Per-compile limits.
  double timeout_seconds = 120;
  uint64_t memory_bytes = 8ull << 30;
  uint64_t max_log_bytes = 16 << 10;
  uint64_t max_output_bytes = 256ull << 20;
  // Run the compiler in namespaces (read-only system, no network, private /tmp).
  bool isolate = true;
  // Paths hidden from the compiler (tokens, keys): `#include "/etc/token"`
  // would otherwise echo a secret into the log returned to the client.
  std::vector<std::string> hidden_paths;
};

// Compiles with g++ / nvcc in the sandbox of runner/sandbox.h.
class SandboxedCompiler final : public CompilerInterface {
 public:
  // Probes the toolchains (version strings enter the cache key) and creates
  // the cache directories.
  static absl::StatusOr<std::unique_ptr<SandboxedCompiler>> Create(CompilerOptions options);

  absl::StatusOr<CompileOutcome> Compile(const CompileJob& job) override;
  absl::StatusOr<std::string> LibraryFor(const std::string& artifact_id) override;
  std::string Toolchain(BackendKind backend) const override;
  // The cache key of a job (exposed for tests).
  std::string ArtifactId(const CompileJob& job) const;

 private:
  explicit SandboxedCompiler(CompilerOptions options) : options_(std::move(options)) {}
  std::vector<std::string> CommandFor(const CompileJob& job, const std::string& src,
                                      const std::string& out) const;
  // Runs argv in the compile sandbox with `workdir` writable.
  runner::ExitInfo RunSandboxed(const std::vector<std::string>& argv, const std::string& workdir,
                                std::vector<std::string> readonly, double timeout_seconds,
                                uint64_t max_log_bytes, std::string* spawn_error,
                                uint64_t file_size_bytes = 0) const;
  // "python 3.11.2 torch 1.13.0" once probed; empty when there is no torch.
  std::string KbToolchain();
  // The precompiled-header directory ("" when disabled or it failed).
  std::string EnsureKbPch();

  const CompilerOptions options_;
  absl::Mutex kb_mu_;
  bool kb_probed_ ABSL_GUARDED_BY(kb_mu_) = false;
  std::string kb_toolchain_ ABSL_GUARDED_BY(kb_mu_);
  bool pch_tried_ ABSL_GUARDED_BY(kb_mu_) = false;
  std::string pch_dir_ ABSL_GUARDED_BY(kb_mu_);
  std::string gxx_version_;
  std::string nvcc_version_;
  std::string host_arch_;
};

// Hex SHA-256 of `data`.
std::string Sha256Hex(const std::string& data);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_COMPILER_H_
