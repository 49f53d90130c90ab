// The KernelBench harness protocol: the worker's options for KernelBench
// tasks, and one side of an evaluation (runner/python/crl_kb_harness.py in
// the runner's sandbox) spoken to over CRL1 frames with JSON headers.
// docs/kernelbench.md describes the protocol and the checks.
#ifndef CRL_SERVICES_WORKER_FORMATS_KERNELBENCH_KB_SESSION_H_
#define CRL_SERVICES_WORKER_FORMATS_KERNELBENCH_KB_SESSION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "runner/protocol.h"
#include "services/worker/lanes/runner_client.h"
#include "services/worker/formats/task_format.h"

namespace crl {

struct KbOptions {
  // Interpreter with torch (Debian: /usr/bin/python3 with python3-torch).
  std::string python = "/usr/bin/python3";
  // runner/python/crl_kb_harness.py of this installation.
  std::string harness;
  // fp32 tolerance; KernelBench's current default (older results: 1e-2).
  double atol = 1e-4;
  double rtol = 1e-4;
  // torch.manual_seed before get_init_inputs() and model construction, so
  // reference and candidate build identical weights.
  int init_seed = 42;
  // Probe tasks with trivial solutions (zeros, memorised, identity, mean).
  bool probe_degenerate = true;
};

// One output tensor (or probe) returned by the harness.
struct KbTensor {
  runner::TensorSpec spec;  // dtype and shape as declared by the harness
  std::string data;
  std::string probe;  // non-empty for a degenerate-task probe ("zeros", ...)
  std::vector<int64_t> sampled_from;  // OutputTensor::sampled_from
  bool constant = false;              // OutputTensor::constant
};

struct KbReply {
  nlohmann::json header;  // untrusted: read it only through KbField
  std::vector<std::string> blobs;
};

// A field of an untrusted JSON object, or `fallback` when it is absent or of
// another type (json::value() would throw on a forged type).
template <typename T>
T KbField(const nlohmann::json& j, const char* key, T fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

// Decodes a reply's "outputs" metadata and blobs; an error means the bytes
// cannot have come from the harness (sizes disagree with shapes, unknown
// dtype) and is treated as tampering by callers. With `allow_fill` (the
// reference's replies only: a candidate's are never trusted to describe
// bytes it did not send), a probe may come as one value standing for every
// element (KbTensor::constant; never expanded), declared at most as large
// as the largest output the same reply carries in full. The blobs move
// into the tensors (outputs can be hundreds of MB: no copy).
absl::StatusOr<std::vector<KbTensor>> DecodeKbTensors(KbReply&& reply, bool allow_fill = false);

struct KbLoad {
  std::string role;  // "reference" or "candidate"
  std::string task_path;
  std::string candidate_path;  // candidate only
  std::string manifest_path;   // candidate only: the build's manifest.json
};

// The files a load sends into the harness's private /tmp (it sees no host
// directory but its own script's): the task as task.py, and for a candidate
// candidate.py, manifest.json and each built extension under the relative
// name the manifest gives it.
struct KbLoadFiles {
  std::vector<std::string> names;
  std::vector<std::string> contents;
};

// Reads what `load` needs, at most `max_bytes` in all. The manifest was
// written where candidate code ran, so an extension it names outside the
// build directory (or not a regular file) is SANDBOX_VIOLATION; too many
// bytes RESOURCE_LIMIT; an unreadable task or build INFRA_ERROR. The event
// says which and why.
bool CollectKbFiles(const KbLoad& load, uint64_t max_bytes, KbLoadFiles* files, RunnerEvent* event);

// Starts a harness process (`serve`) on `lane` in the runner's sandbox,
// bound to `context` for `budget_seconds`; nothing is loaded yet.
std::unique_ptr<RunnerSession> SpawnKbHarness(const RunnerOptions& runner, const KbOptions& kb,
                                              const Lane& lane, double budget_seconds,
                                              const RequestContext& context, RunnerEvent* event);

// A warm pool brings a spawned harness up in steps (warm_pool.h); none runs
// candidate code, so a failure is the machine's problem. Each returns false
// with *error set (and the harness closed when it answered wrongly).
// ReadyKbHarness waits until the harness has imported torch, touching no
// device: CPU work, done off the lane. BeginWarmKbHarness asks it to bring
// `lane`'s device up (CUDA context, flush buffer) without waiting, and
// AwaitWarmKbHarness reads that answer, so that several harnesses' contexts
// come up side by side.
bool ReadyKbHarness(RunnerSession* session, const RunnerOptions& runner, std::string* error);
bool BeginWarmKbHarness(RunnerSession* session, const RunnerOptions& runner, const Lane& lane,
                        std::string* error);
bool AwaitWarmKbHarness(RunnerSession* session, const RunnerOptions& runner, std::string* error);

// Not thread-safe; one thread drives a session.
class KbSession {
 public:
  // Cancelling `context` (which must outlive the session) ends a call in
  // flight, as for RunnerSession. `warm`, when given, is a harness already
  // started (and warmed) on `lane` that has served nothing: it is adopted
  // instead of starting one. Either way the process serves this one load.
  static std::unique_ptr<KbSession> Start(const RunnerOptions& runner, const KbOptions& kb,
                                          const Lane& lane, const KbLoad& load,
                                          double budget_seconds, const RequestContext& context,
                                          RunnerEvent* event,
                                          std::unique_ptr<RunnerSession> warm = nullptr);

  // A correctness or timed call ({"seed":..., "timed":..., ...}).
  RunnerEvent Call(const nlohmann::json& request, double timeout_seconds, KbReply* reply);
  // Call `call`'s outputs of the last timed sample, whole or at the
  // positions `sample` draws (the harness draws them on the device).
  RunnerEvent Fetch(int call, const OutputSample& sample, double timeout_seconds, KbReply* reply);
  void Close() { session_->Close(); }
  bool dead() const { return session_->dead(); }
  bool PinToCpu(int cpu) { return session_->PinToCpu(cpu); }
  bool Freeze(bool frozen) { return session_->Freeze(frozen); }
  // The harness's process from outside (RunnerSession's, for a frozen side).
  RunnerSession* process() { return session_.get(); }
  // SessionInterface::Adopt.
  void Adopt(const RequestContext& context, double budget_seconds) { session_->Adopt(context, budget_seconds); }

  const std::string& device_name() const { return device_name_; }
  // The candidate called load_inline (its compiled code is in play).
  bool custom_kernel() const { return custom_kernel_; }
  // Global torch settings the module changed while loading ("name: a -> b").
  const std::vector<std::string>& global_flags() const { return global_flags_; }

 private:
  RunnerEvent Exchange(uint32_t type, uint32_t expect, const nlohmann::json& request,
                       const std::vector<std::string>& blobs, double timeout_seconds, KbReply* reply);

  std::unique_ptr<RunnerSession> session_;
  std::string device_name_;
  bool custom_kernel_ = false;
  std::vector<std::string> global_flags_;
};

// A KB payload: JSON header then binary blobs (crl_kb_harness.py).
std::string EncodeKbPayload(const nlohmann::json& header, const std::vector<std::string>& blobs);
// Consumes `payload`: its last blob keeps the payload's buffer.
bool DecodeKbPayload(std::string&& payload, KbReply* reply, std::string* error);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_FORMATS_KERNELBENCH_KB_SESSION_H_
