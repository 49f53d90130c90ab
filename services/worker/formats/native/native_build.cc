// Native candidates and references: one C++ (host) or CUDA source built into
// a shared library against crl/kernel.h.
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file.h"
#include "common/hash.h"
#include "services/worker/compile/build_recipe.h"

namespace crl {
namespace {

namespace fs = std::filesystem;

class NativeRecipe final : public BuildRecipe {
 public:
  NativeRecipe(const CompilerOptions& options, const Toolchains& toolchains)
      : options_(options), toolchains_(toolchains) {}

  absl::Status Available(BackendKind backend) override {
    return CompilerFound(options_, toolchains_, backend);
  }

  std::string ArtifactId(const CompileJob& job) const override {
    const bool cuda = job.backend == BackendKind::kCuda;
    // Everything that changes the bytes of lib.so is in the key; the include
    // directory's ABI header is versioned by its content.
    const std::string abi =
        ReadFileToString((fs::path(options_.include_dir) / "crl" / "kernel.h").string(), "ABI")
            .value_or("");
    return Sha256Hex(absl::StrCat(
        "crl-artifact-v1\n", BackendName(job.backend), "\n",
        cuda ? toolchains_.nvcc : toolchains_.gxx, "\n",
        cuda ? options_.cuda_arch : toolchains_.host_arch, "\n",
        absl::StrJoin(cuda ? options_.cuda_flags : options_.host_flags, " "), "\n",
        cuda ? toolchains_.gxx : "", "\n", Sha256Hex(abi), "\n",
        // What the compiler can see changes what it prints.
        absl::StrJoin(options_.hidden_paths, ","), "\n", job.source));
  }

  std::string SourceName(BackendKind backend) const override {
    return backend == BackendKind::kCuda ? "candidate.cu" : "candidate.cc";
  }
  const char* ProductName() const override { return "lib.so"; }

  Command Prepare(const CompileJob& job, const std::string&, const std::string& source,
                  const std::string& product) override {
    Command command;
    if (job.backend == BackendKind::kCuda) {
      command.argv = {options_.nvcc, absl::StrCat("-arch=", options_.cuda_arch)};
      command.argv.insert(command.argv.end(), options_.cuda_flags.begin(),
                          options_.cuda_flags.end());
    } else {
      command.argv = {options_.gxx};
      command.argv.insert(command.argv.end(), options_.host_flags.begin(),
                          options_.host_flags.end());
    }
    command.argv.insert(command.argv.end(),
                        {absl::StrCat("-I", options_.include_dir), source, "-o", product});
    command.default_timeout_seconds = options_.timeout_seconds;
    return command;
  }

  bool KeepSource() const override { return false; }

 private:
  const CompilerOptions& options_;
  const Toolchains toolchains_;
};

}  // namespace

std::unique_ptr<BuildRecipe> MakeNativeRecipe(const CompilerOptions& options,
                                              const Toolchains& toolchains) {
  return std::make_unique<NativeRecipe>(options, toolchains);
}

}  // namespace crl
