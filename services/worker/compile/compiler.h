// The CPU compile tier: builds a candidate or reference source inside the
// sandbox into a content-addressed build cache. How a source builds depends
// on its task format (build_recipe.h): a shared library with g++/nvcc for
// native tasks, a load_inline import for KernelBench candidates.
#ifndef CRL_SERVICES_WORKER_COMPILE_COMPILER_H_
#define CRL_SERVICES_WORKER_COMPILE_COMPILER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "crl/v1/eval.pb.h"
#include "lib/task/backend.h"

namespace crl {

struct CompileJob {
  // How the source builds: a native library, or a KernelBench candidate
  // (runner/python/crl_kb_harness.py build: load_inline compiles into the
  // artifact).
  TaskFormat format = TaskFormat::kNative;
  BackendKind backend = BackendKind::kHost;
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
  // SHA-256 (hex) of format, backend, toolchain, flags, target and source.
  std::string artifact_id;
  // The built library (VERDICT_OK only); for KernelBench candidates the
  // build's manifest.json, next to candidate.py and the extensions.
  std::string library_path;
  bool cache_hit = false;
  double seconds = 0;
  // Compiler output, trimmed.
  std::string log;
};

// The CompileResponse of an outcome (one mapping for every caller).
v1::CompileResponse ToCompileResponse(const CompileOutcome& outcome);

// Implementations must be thread-safe: the compile pool calls concurrently.
class CompilerInterface {
 public:
  virtual ~CompilerInterface() = default;
  // Builds `job` (or finds it in the cache). A cancelled or expired
  // `context` stops the build and returns CANCELLED / DEADLINE_EXCEEDED.
  virtual absl::StatusOr<CompileOutcome> Compile(const CompileJob& job,
                                                 const RequestContext& context) = 0;
  // Library (or KernelBench manifest) path of an artifact already in the
  // cache; NOT_FOUND otherwise.
  virtual absl::StatusOr<std::string> LibraryFor(const std::string& artifact_id) = 0;
  // "g++ (Debian 12.2.0-14) 12.2.0"; empty when the backend has no compiler.
  virtual std::string Toolchain(BackendKind backend) const = 0;
};

class DiskBudget;

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
  // Build a load_inline CUDA source split in two where it can be (its host
  // part with g++ and the precompiled header, its device part with nvcc
  // without torch's headers: runner/python/crl_cu_split.py); false builds
  // every source whole, as load_inline does.
  bool kb_split_cuda = true;
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
  // Keeps cache_dir/objects under a byte budget (disk_budget.h); not owned,
  // may be null.
  DiskBudget* budget = nullptr;
};

class BuildRecipe;

// Compiles in the sandbox of runner/sandbox.h. Thread-safe.
class SandboxedCompiler final : public CompilerInterface {
 public:
  // Probes the toolchains (version strings enter the cache key) and creates
  // the cache directories.
  static absl::StatusOr<std::unique_ptr<SandboxedCompiler>> Create(CompilerOptions options);
  ~SandboxedCompiler() override;

  absl::StatusOr<CompileOutcome> Compile(const CompileJob& job,
                                         const RequestContext& context) override;
  absl::StatusOr<std::string> LibraryFor(const std::string& artifact_id) override;
  std::string Toolchain(BackendKind backend) const override;
  // The cache key of a job (exposed for tests).
  std::string ArtifactId(const CompileJob& job) const;

 private:
  explicit SandboxedCompiler(CompilerOptions options);
  BuildRecipe& RecipeFor(TaskFormat format) const;

  const CompilerOptions options_;
  std::string gxx_version_;
  std::string nvcc_version_;
  std::unique_ptr<BuildRecipe> native_;
  std::unique_ptr<BuildRecipe> kernelbench_;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_COMPILE_COMPILER_H_
