// The KernelBench harness protocol: the worker's options for KernelBench
// tasks, and one side of an evaluation (runner/python/crl_kb_harness.py in
// the runner's sandbox) spoken to over CRL1 frames with JSON headers.
// docs/kernelbench.md describes the protocol and the checks.
#ifndef CRL_SERVICES_WORKER_KB_SESSION_H_
#define CRL_SERVICES_WORKER_KB_SESSION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "runner/protocol.h"
#include "services/worker/runner_client.h"

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
// dtype) and is treated as tampering by callers.
absl::StatusOr<std::vector<KbTensor>> DecodeKbTensors(const KbReply& reply);

struct KbLoad {
  std::string role;  // "reference" or "candidate"
  std::string task_path;
  std::string candidate_path;  // candidate only
  std::string manifest_path;   // candidate only: the build's manifest.json
};

// Not thread-safe; one thread drives a session.
class KbSession {
 public:
  // Cancelling `context` (which must outlive the session) ends a call in
  // flight, as for RunnerSession.
  static std::unique_ptr<KbSession> Start(const RunnerOptions& runner, const KbOptions& kb,
                                          const Lane& lane, const KbLoad& load,
                                          double budget_seconds, const RequestContext& context,
                                          RunnerEvent* event);

  // A correctness or timed call ({"seed":..., "timed":..., ...}).
  RunnerEvent Call(const nlohmann::json& request, double timeout_seconds, KbReply* reply);
  // The outputs of the last timed call.
  RunnerEvent Fetch(double timeout_seconds, KbReply* reply);
  void Close() { session_->Close(); }
  bool dead() const { return session_->dead(); }

  const std::string& device_name() const { return device_name_; }
  // The candidate called load_inline (its compiled code is in play).
  bool custom_kernel() const { return custom_kernel_; }
  // Global torch settings the module changed while loading ("name: a -> b").
  const std::vector<std::string>& global_flags() const { return global_flags_; }

 private:
  RunnerEvent Exchange(uint32_t type, uint32_t expect, const nlohmann::json& request,
                       double timeout_seconds, KbReply* reply);

  std::unique_ptr<RunnerSession> session_;
  std::string device_name_;
  bool custom_kernel_ = false;
  std::vector<std::string> global_flags_;
};

// A KB payload: JSON header then binary blobs (crl_kb_harness.py).
std::string EncodeKbPayload(const nlohmann::json& header, const std::vector<std::string>& blobs);
bool DecodeKbPayload(const std::string& payload, KbReply* reply, std::string* error);

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_KB_SESSION_H_
