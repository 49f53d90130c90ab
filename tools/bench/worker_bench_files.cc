#include "tools/bench/worker_bench_files.h"

#include <stdlib.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/file.h"

namespace crl::bench_worker {

namespace fs = std::filesystem;
using nlohmann::json;

// ---- statistics ------------------------------------------------------------

// Linear interpolation between closest ranks; `v` sorted.
double Quantile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

Stats Summarize(std::vector<double> v, double scale) {
  Stats s;
  if (v.empty()) return s;
  for (double& x : v) x *= scale;
  std::sort(v.begin(), v.end());
  s.n = v.size();
  s.p50 = Quantile(v, 0.5);
  s.p95 = Quantile(v, 0.95);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  s.min = v.front();
  s.max = v.back();
  return s;
}

json ToJson(const Stats& s) {
  return {{"n", s.n}, {"p50", s.p50}, {"p95", s.p95}, {"mean", s.mean}, {"min", s.min},
          {"max", s.max}};
}

void PrintStats(const std::string& label, const Stats& s) {
  std::printf("  %-26s n=%-4zu p50 %9.3f  p95 %9.3f  mean %9.3f  min %9.3f  max %9.3f\n",
              label.c_str(), s.n, s.p50, s.p95, s.mean, s.min, s.max);
}

// ---- files and tasks -------------------------------------------------------

std::string ReadFile(const fs::path& path) {
  return ReadFileToString(path.string(), "file").value_or("");
}

bool WriteFile(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

std::string Short(v1::Verdict v) {
  std::string n = v1::Verdict_Name(v);
  return n.rfind("VERDICT_", 0) == 0 ? n.substr(8) : n;
}

std::string MakeTempDir(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + "XXXXXX")).string();
  if (!mkdtemp(pattern.data())) return "";
  return pattern;
}

std::vector<fs::path> ListTasks(const std::string& dir) {
  std::vector<fs::path> tasks;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (fs::exists(e.path() / "task.yaml")) tasks.push_back(e.path());
  }
  std::sort(tasks.begin(), tasks.end());
  return tasks;
}


// The shipped candidates of a task with extension `ext` (".cc" or ".cu").
std::vector<Candidate> ShippedCandidates(const fs::path& task, const std::string& ext) {
  std::vector<Candidate> out;
  YAML::Node expect;
  try {
    expect = YAML::LoadFile((task / "candidates" / "expect.yaml").string());
  } catch (const YAML::Exception&) {
    return out;
  }
  for (const auto& kv : expect) {
    const std::string file = kv.first.Scalar();
    if (fs::path(file).extension() != ext) continue;
    std::string expected =
        kv.second.IsMap() ? kv.second["verdict"].as<std::string>("") : kv.second.Scalar();
    out.push_back({task, file, ReadFile(task / "candidates" / file), expected});
  }
  return out;
}

// A copy of `task` whose timed size is `sizes` and which has no verify sizes:
// Measure then times the calls a correctness trial at that size set makes.
absl::StatusOr<fs::path> SizeVariant(const NativeTask& task, const SizeSet& sizes,
                                     const fs::path& out) {
  try {
    YAML::Node root = YAML::LoadFile((fs::path(task.dir) / "task.yaml").string());
    YAML::Node s(YAML::NodeType::Map);
    for (const auto& [name, value] : sizes) s[name] = value;
    root["sizes"] = s;
    root.remove("verify_sizes");
    for (const auto& kv : root["reference"]) {
      const std::string rel = kv.second.Scalar();
      if (!WriteFile(out / rel, ReadFile(fs::path(task.dir) / rel))) {
        return absl::InternalError(absl::StrCat("cannot write ", (out / rel).string()));
      }
    }
    YAML::Emitter emitter;
    emitter << root;
    if (!WriteFile(out / "task.yaml", std::string(emitter.c_str()) + "\n")) {
      return absl::InternalError(absl::StrCat("cannot write ", (out / "task.yaml").string()));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(task.dir, "/task.yaml: ", e.what()));
  }
  return out;
}

namespace {

// The tiny task: y = x + 1 over 1024 floats, one size set, one distribution,
// so an evaluation is the minimum 5 trials (+1 determinism re-run).
const char* const kTinyManifest = R"(name: bench_add_one
description: y = x + 1 over a float32 vector (benchmark of the worker's overhead).
backends: [host, cuda]
reference:
  host: reference.cc
  cuda: reference.cu
sizes:
  N: 1024
inputs:
  - name: x
    dtype: float32
    shape: [N]
    distributions:
      - uniform(-1, 1)
outputs:
  - name: y
    dtype: float32
    shape: [N]
)";

const char* const kTinyHost = R"(#include <crl/kernel.h>
#include <cstdint>
extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t n = crl_numel(&args->inputs[0]);
  const float* x = static_cast<const float*>(args->inputs[0].data);
  float* y = static_cast<float*>(args->outputs[0].data);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] + 1.0f;
  return 0;
}
)";

const char* const kTinyCuda = R"(#include <crl/kernel.h>
#include <cstdint>
#include <cuda_runtime.h>
__global__ void add_one(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  const int64_t n = crl_numel(&args->inputs[0]);
  add_one<<<static_cast<unsigned>((n + 255) / 256), 256, 0,
            static_cast<cudaStream_t>(args->stream)>>>(
      static_cast<const float*>(args->inputs[0].data), static_cast<float*>(args->outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
)";

}  // namespace

bool WriteTinyTask(const fs::path& dir) {
  return WriteFile(dir / "task.yaml", kTinyManifest) && WriteFile(dir / "reference.cc", kTinyHost) &&
         WriteFile(dir / "reference.cu", kTinyCuda);
}

const char* TinySource(bool cuda) { return cuda ? kTinyCuda : kTinyHost; }

}  // namespace crl::bench_worker
