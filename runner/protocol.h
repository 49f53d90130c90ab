// runner/protocol.h — the messages exchanged between the worker and a
// `crl-runner` process, and their binary encoding.
//
// Transport (see runner/wire.h for framing): the worker writes requests to the
// runner's inherited fd 3 (kRequestFd) and reads responses from the runner's
// fd 4 (kResponseFd). The runner's stdout/stderr are only logs, never parsed.
//
// Conversation:
//   worker -> LoadRequest            runner -> LoadResult
//   worker -> CallRequest            runner -> CallResult        (any number,
//   worker -> TimedCallRequest       runner -> TimedCallResult    any order)
//   worker -> TimedCallRequest{staged} runner -> TimedCallResult{addresses},
//   worker -> TimedGo                runner -> TimedCallResult   (host: the
//                                                                worker's clock)
//   worker -> Shutdown               runner exits 0 (EOF on fd 3 does the same)
// A runner answers every request before reading the next one. After a result
// with status kCudaError the runner exits (code 3): a CUDA context with a
// sticky error is unusable; the worker starts a fresh runner.
//
// TRUST: the runner process is UNTRUSTED as soon as it has dlopen()ed the
// candidate library. The candidate's code runs in the same address space and
// can forge any frame, any byte of any result, any timing. The runner only
// executes; every judgement (input immutability, poisoned/unwritten outputs,
// NaN/Inf, tolerance, determinism, timing plausibility) is made by the worker
// from the returned bytes, and every decode here treats the bytes as hostile
// (bounded lengths, no trust in counts).
//
// Thread-safety: plain structs and pure functions; safe to use from any thread.
#ifndef CRL_RUNNER_PROTOCOL_H_
#define CRL_RUNNER_PROTOCOL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace crl::runner {

// Inherited descriptors inside the runner process.
inline constexpr int kRequestFd = 3;   // worker -> runner
inline constexpr int kResponseFd = 4;  // runner -> worker

// Exit code of a runner that reported kCudaError and terminated.
inline constexpr int kCudaErrorExitCode = 3;

// Frame type tags. Values are part of the wire format: never renumber.
enum class MessageType : uint32_t {
  kLoadRequest = 1,
  kLoadResult = 2,
  kCallRequest = 3,
  kCallResult = 4,
  kTimedCallRequest = 5,
  kTimedCallResult = 6,
  kShutdown = 7,
  kTimedGo = 8,
  // The KernelBench harness (runner/python/crl_kb_harness.py) speaks the same
  // framing with JSON-headed payloads; see services/worker/formats/kernelbench/kb_session.h.
  kKbLoad = 20,
  kKbLoaded = 21,
  kKbCall = 22,
  kKbCallResult = 23,
  kKbFetch = 24,
  kKbOutputs = 25,
  // A warm harness (serve --warm) brings up its device before any load.
  kKbWarm = 26,
  kKbWarmed = 27,
};

// Human-readable name of a message type ("LoadRequest", ...; "unknown").
const char* MessageTypeName(uint32_t type);

// Outcome of a call. Values are part of the wire format: never renumber.
enum RunStatus : int32_t {
  kOk = 0,
  kCandidateError = 1,  // crl_run returned non-zero (`error` holds the value)
  kCudaError = 2,       // launch or sticky CUDA error; the runner then exits 3
  kBadRequest = 3,      // malformed request (bad dtype/shape/sizes/distribution)
  kLoadFailed = 4,      // call before a successful load
};

// Name of a RunStatus ("OK", "CANDIDATE_ERROR", ...; "UNKNOWN").
const char* RunStatusName(int32_t status);

// ---------------------------------------------------------------------------
// Load

// First request of every runner. The runner initialises the backend (CUDA
// context, stream, events, L2 flush buffer), installs its seccomp filter, then
// dlopen()s `library_path` (RTLD_NOW | RTLD_LOCAL) and resolves `crl_run`.
struct LoadRequest {
  static constexpr MessageType kType = MessageType::kLoadRequest;
  std::string library_path;  // absolute path of the candidate/reference .so
  std::string backend;       // "host" or "cuda"
  int32_t device = 0;        // CUDA device ordinal (ignored by host)
  uint64_t l2_flush_bytes = 0;  // 0 = backend default (cuda 256 MiB, host 64 MiB)
  // Bring the backend up and load nothing (a warm runner, started before
  // its library exists); a later LoadRequest of the same backend loads.
  bool warm_only = false;
  // The library itself, when its path is not visible to the runner (a warm
  // runner's sandbox was set up before the library was built): loaded from
  // an anonymous in-memory file; library_path then only names it.
  std::string library_bytes;
};

struct LoadResult {
  static constexpr MessageType kType = MessageType::kLoadResult;
  bool ok = false;
  std::string error;        // why loading failed (empty when ok)
  std::string device_name;  // e.g. "NVIDIA H100 80GB HBM3" or "host"
};

// ---------------------------------------------------------------------------
// Calls

// Declared dtype and shape of one tensor (dense, row-major).
struct TensorSpec {
  std::string name;
  int32_t dtype = 0;           // a crl_dtype (include/crl/kernel.h)
  std::vector<int64_t> shape;  // 0..CRL_MAX_DIMS dims, each >= 0
};

// One correctness call. For every call the runner allocates FRESH buffers,
// copies `input_data` in, poisons every output buffer (see kPoison* below),
// calls crl_run once, synchronizes the whole device, checks for CUDA errors,
// copies the outputs (and, with return_inputs, the inputs) back and frees all
// buffers.
struct CallRequest {
  static constexpr MessageType kType = MessageType::kCallRequest;
  uint64_t call_id = 0;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<double> scalars;
  std::vector<std::string> input_data;  // raw bytes, one per input, exact size
  bool return_inputs = false;           // also return inputs as seen after the call
  // Refill the previous call's buffers (same addresses, same sizes) instead
  // of allocating fresh ones, when the byte sizes match; otherwise fresh.
  // The worker uses it to expose results cached by address: new data at an
  // old address must still give the right answer.
  bool reuse_buffers = false;
};

struct CallResult {
  static constexpr MessageType kType = MessageType::kCallResult;
  uint64_t call_id = 0;
  int32_t status = kOk;                       // a RunStatus
  std::string error;                          // detail when status != kOk
  std::vector<std::string> output_data;       // one per output (status kOk)
  std::vector<std::string> input_data_after;  // one per input, if return_inputs
  double host_seconds = 0;   // CLOCK_MONOTONIC around crl_run + device sync
  int32_t threads_before = 0;  // advisory: threads in the runner before the call
  int32_t threads_after = 0;   // advisory: threads after the call + sync
};

// One timed call. Inputs are generated by the runner from (seed, distribution)
// with runner/inputs.h — input i uses Generate(dist[i], dtype, numel,
// DeriveSeed(seed, i)) — into fresh buffers BEFORE the timed region; outputs
// are poisoned; with flush_l2 the backend's flush buffer is written (and the
// device synchronized) just before the timed region.
//
// Timing definitions (all three are reported; the worker decides which one a
// reward uses):
//   stream_event_seconds: cudaEventElapsedTime(start, end_stream) where
//       `start` is recorded on the passed stream right before crl_run and
//       `end_stream` on the same stream right after crl_run returns (measures
//       only work on that stream). Host backend: equals host_seconds.
//   device_sync_seconds: from `start` to an event recorded after
//       cudaDeviceSynchronize() returned (all streams, all work). Host
//       backend: equals host_seconds.
//   host_seconds: CLOCK_MONOTONIC from just before the start event is
//       recorded to just after cudaDeviceSynchronize() returns.
struct TimedCallRequest {
  static constexpr MessageType kType = MessageType::kTimedCallRequest;
  uint64_t call_id = 0;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<double> scalars;
  uint64_t seed = 0;
  std::vector<std::string> distributions;  // one per input, e.g. "normal(0, 1)"
  bool flush_l2 = true;
  bool return_outputs = false;  // return outputs so the worker can check them
  // Staged (host backend only): allocate the buffers (outputs poisoned),
  // flush, and answer with their addresses without calling crl_run or
  // writing the inputs; the worker writes the inputs into the runner's
  // memory while it is stopped, starts its own clock and sends TimedGo.
  // Nothing the runner reports then times the call or carries its outputs:
  // the worker's clock does, and it reads the outputs from the stopped
  // runner (runner/process_group.h). `seed` and `distributions` are unused.
  bool staged = false;
};

// Runs the staged call (crl_run on the staged buffers, then a device sync);
// the answer is a TimedCallResult whose times are advisory. The buffers stay
// allocated until the next call.
struct TimedGo {
  static constexpr MessageType kType = MessageType::kTimedGo;
  uint64_t call_id = 0;
};

struct TimedCallResult {
  static constexpr MessageType kType = MessageType::kTimedCallResult;
  uint64_t call_id = 0;
  int32_t status = kOk;  // a RunStatus
  std::string error;
  double stream_event_seconds = 0;
  double device_sync_seconds = 0;
  double host_seconds = 0;
  std::vector<std::string> output_data;  // one per output, if return_outputs
  int32_t threads_before = 0;  // advisory, as in CallResult
  int32_t threads_after = 0;
  // A staged request's answer: where each input and output buffer is in the
  // runner's memory (one per tensor, in order).
  std::vector<int64_t> input_addresses;
  std::vector<int64_t> output_addresses;
};

// Asks the runner to exit 0. Empty payload.
struct Shutdown {
  static constexpr MessageType kType = MessageType::kShutdown;
};

// ---------------------------------------------------------------------------
// Output poisoning (documented so the worker can detect unwritten elements).
// Before every call each output buffer is filled with:
//   float32:  0x7FC0DEAD (a quiet NaN with a distinctive payload), per element
//   float64:  0x7FF8DEADDEADDEAD (quiet NaN), per element
//   float16:  0x7E5A (NaN),  bfloat16: 0x7FDA (NaN), per element
//   int8/uint8/bool/int32/int64: every byte 0xA5
// The worker must still check "every element written" by running twice with
// different poison or by comparing against the reference; a NaN check alone
// catches unwritten float elements.
inline constexpr uint32_t kPoisonFloat32 = 0x7FC0DEADu;
inline constexpr uint64_t kPoisonFloat64 = 0x7FF8DEADDEADDEADull;
inline constexpr uint16_t kPoisonFloat16 = 0x7E5Au;
inline constexpr uint16_t kPoisonBfloat16 = 0x7FDAu;
inline constexpr uint8_t kPoisonByte = 0xA5u;

// Fills `bytes` bytes at `data` with the poison pattern of `dtype` (bytes
// beyond the last whole element, if any, get kPoisonByte). Host memory only.
void PoisonHost(void* data, int32_t dtype, uint64_t bytes);

// ---------------------------------------------------------------------------
// Tensor spec helpers.

// Number of elements of `spec` (1 for a 0-dim tensor). False on a negative
// dimension, more than CRL_MAX_DIMS dims, or overflow past 2^62.
bool SpecNumel(const TensorSpec& spec, int64_t* numel);

// Byte size of `spec`. False on an unknown dtype or as SpecNumel.
bool SpecBytes(const TensorSpec& spec, uint64_t* bytes);

// ---------------------------------------------------------------------------
// Encoding. Encode never fails. Decode returns false and sets *error on any
// malformed payload (truncated, trailing bytes, absurd counts); `out` is then
// unspecified.
std::string Encode(const LoadRequest& m);
std::string Encode(const LoadResult& m);
std::string Encode(const CallRequest& m);
std::string Encode(const CallResult& m);
std::string Encode(const TimedCallRequest& m);
std::string Encode(const TimedCallResult& m);
std::string Encode(const Shutdown& m);
std::string Encode(const TimedGo& m);

bool Decode(std::string_view payload, LoadRequest* out, std::string* error);
bool Decode(std::string_view payload, LoadResult* out, std::string* error);
bool Decode(std::string_view payload, CallRequest* out, std::string* error);
bool Decode(std::string_view payload, CallResult* out, std::string* error);
bool Decode(std::string_view payload, TimedCallRequest* out, std::string* error);
bool Decode(std::string_view payload, TimedCallResult* out, std::string* error);
bool Decode(std::string_view payload, Shutdown* out, std::string* error);
bool Decode(std::string_view payload, TimedGo* out, std::string* error);

}  // namespace crl::runner

#endif  // CRL_RUNNER_PROTOCOL_H_
