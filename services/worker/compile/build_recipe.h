// How one task format turns a source into an artifact of the build cache.
// SandboxedCompiler (compiler.cc) runs the steps every build shares: cache
// lookup, a build directory for the sandbox's uid, the sandboxed command,
// the verdict, the cache insert. A recipe supplies the rest. Internal to the
// compile tier.
#ifndef CRL_SERVICES_WORKER_COMPILE_BUILD_RECIPE_H_
#define CRL_SERVICES_WORKER_COMPILE_BUILD_RECIPE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/context.h"
#include "runner/sandbox.h"
#include "services/worker/compile/compiler.h"

namespace crl {

// Versions and target facts that enter cache keys.
struct Toolchains {
  std::string gxx;        // "g++ (Debian 12.2.0-14) 12.2.0"; empty: none
  std::string nvcc;       // nvcc's last version line; empty: none
  std::string host_arch;  // CPU model (host builds use -march=native)
};

// OK when `backend`'s compiler (g++ for host, nvcc for cuda) was found;
// FAILED_PRECONDITION naming the missing path otherwise.
absl::Status CompilerFound(const CompilerOptions& options, const Toolchains& toolchains,
                           BackendKind backend);

// Thread-safe implementations required.
class BuildRecipe {
 public:
  virtual ~BuildRecipe() = default;
  // OK when this format can build for `backend` here; FAILED_PRECONDITION
  // naming what is missing.
  virtual absl::Status Available(BackendKind backend) = 0;
  // Everything that changes the artifact's bytes, hashed.
  virtual std::string ArtifactId(const CompileJob& job) const = 0;
  // File names inside a build directory.
  virtual std::string SourceName(BackendKind backend) const = 0;
  virtual const char* ProductName() const = 0;

  struct Command {
    std::vector<std::string> argv;
    // Host paths the build reads that the sandbox would otherwise hide.
    std::vector<std::string> readonly;
    double default_timeout_seconds = 0;
  };
  // The build's command. May do one-off, trusted set-up first (a
  // precompiled header).
  virtual Command Prepare(const CompileJob& job, const std::string& build_dir,
                          const std::string& source, const std::string& product) = 0;
  // After a failed build: non-OK when the toolchain itself failed before it
  // looked at the source (an infrastructure error, never cached).
  virtual absl::Status CheckToolchainRan(const runner::ExitInfo&) const {
    return absl::OkStatus();
  }
  // Keep the source beside the product (a KernelBench candidate is imported
  // again at run time).
  virtual bool KeepSource() const = 0;
};

std::unique_ptr<BuildRecipe> MakeNativeRecipe(const CompilerOptions& options,
                                              const Toolchains& toolchains);
std::unique_ptr<BuildRecipe> MakeKernelBenchRecipe(const CompilerOptions& options,
                                                   const Toolchains& toolchains);

// Runs `argv` in the compile sandbox (exec allowed, no network, private
// /tmp, limits from `options`) with `workdir` writable. A cancelled or
// expired `context` kills it and returns CANCELLED / DEADLINE_EXCEEDED.
absl::StatusOr<runner::ExitInfo> RunCompileSandbox(const CompilerOptions& options,
                                                   const std::vector<std::string>& argv,
                                                   const std::string& workdir,
                                                   std::vector<std::string> readonly,
                                                   double timeout_seconds,
                                                   uint64_t max_log_bytes,
                                                   uint64_t file_size_bytes,
                                                   const RequestContext& context);

// A fresh directory under <cache>/tmp that the sandbox's unprivileged uid
// owns (when we run as root).
absl::StatusOr<std::string> MakeBuildDir(const CompilerOptions& options, const char* prefix);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_COMPILE_BUILD_RECIPE_H_
