// Vocabulary shared by both task formats and every service that handles
// tasks: where a candidate runs (backend), which format a task is written in,
// and how closely an output must match the reference (tolerance).
#ifndef CRL_LIB_TASK_BACKEND_H_
#define CRL_LIB_TASK_BACKEND_H_

#include <cstdint>
#include <string>

namespace crl {

// "host" or "cuda"; the names used in manifests, flags and lane names.
enum class BackendKind { kHost, kCuda };
const char* BackendName(BackendKind backend);
// False (and *backend untouched) for any other name.
bool ParseBackend(const std::string& name, BackendKind* backend);

// How a task and its candidates are written (docs/task-format.md,
// docs/kernelbench.md).
enum class TaskFormat {
  // task.yaml + reference sources; candidates implement crl/kernel.h's C ABI.
  kNative,
  // A Python file with class Model; candidates define ModelNew.
  kKernelBench,
};
// "native" or "kernelbench".
const char* TaskFormatName(TaskFormat format);

// |got - want| <= atol + rtol * |want| passes.
struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

// Default tolerance of a crl_dtype (docs/task-format.md): float64 1e-8,
// float32 1e-4, float16/bfloat16 1e-2, integers and bool exact.
Tolerance DefaultTolerance(int32_t dtype);

}  // namespace crl

#endif  // CRL_LIB_TASK_BACKEND_H_
