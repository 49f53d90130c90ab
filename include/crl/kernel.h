// crl/kernel.h — the C ABI a native-format candidate (and reference) implements.
//
// A candidate is ONE source file (C++ for the host backend, CUDA for the cuda
// backend) that defines `crl_run`. The runner owns every buffer: it allocates
// inputs and outputs (device memory for cuda, host memory for host), fills the
// inputs, poisons the outputs, calls `crl_run` once, and synchronizes the whole
// device afterwards. The candidate must write every output element and must not
// modify inputs; both are checked by the worker, outside the candidate's process.
//
// Tensors are dense, row-major (C order), with the dtype and shape declared in
// the task manifest (docs/task-format.md). Scalars are the manifest's `scalars`
// in declaration order, as doubles. Sizes are the manifest's `sizes` in
// declaration order (they may differ between correctness trials: do not
// hard-code them, read them from `shape`).
//
// On the cuda backend, `stream` is the cudaStream_t to launch on. Work launched
// elsewhere is still timed (the timer waits for the whole device), and a large
// gap between stream-event time and device-wide time is flagged.
#ifndef CRL_KERNEL_H_
#define CRL_KERNEL_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types. Values are part of the ABI: never renumber. */
typedef enum crl_dtype {
  CRL_FLOAT32 = 1,
  CRL_FLOAT64 = 2,
  CRL_FLOAT16 = 3,  /* IEEE binary16, stored as uint16_t */
  CRL_BFLOAT16 = 4, /* bfloat16, stored as uint16_t */
  CRL_INT32 = 5,
  CRL_INT64 = 6,
  CRL_INT8 = 7,
  CRL_UINT8 = 8,
  CRL_BOOL = 9 /* one byte, 0 or 1 */
} crl_dtype;

#define CRL_MAX_DIMS 8

typedef struct crl_tensor {
  void* data;                    /* device pointer (cuda) or host pointer */
  int32_t dtype;                 /* a crl_dtype */
  int32_t ndim;                  /* 0..CRL_MAX_DIMS */
  int64_t shape[CRL_MAX_DIMS];   /* first ndim entries are valid */
} crl_tensor;

typedef struct crl_args {
  const crl_tensor* inputs;      /* manifest order; read-only */
  int32_t num_inputs;
  const crl_tensor* outputs;     /* manifest order; data must be fully written */
  int32_t num_outputs;
  const double* scalars;         /* manifest `scalars` order */
  int32_t num_scalars;
  void* stream;                  /* cudaStream_t on cuda, NULL on host */
} crl_args;

/* Returns 0 on success; any other value is reported as RUNTIME_ERROR. */
typedef int (*crl_run_fn)(const crl_args* args);

#if defined(_WIN32)
#define CRL_EXPORT __declspec(dllexport)
#else
#define CRL_EXPORT __attribute__((visibility("default")))
#endif

/* The entry point every candidate and reference defines:
 *   CRL_EXPORT int crl_run(const crl_args* args) { ... }                    */
#define CRL_ENTRY_SYMBOL "crl_run"

/* Number of elements of a tensor (product of its shape). */
static inline int64_t crl_numel(const crl_tensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* CRL_KERNEL_H_ */
