#include "services/worker/kb_session.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "runner/dtype.h"
#include "runner/wire.h"

namespace crl {
namespace fs = std::filesystem;

absl::StatusOr<std::vector<KbTensor>> DecodeKbTensors(const KbReply& reply) {
  std::vector<KbTensor> out;
  auto it = reply.header.find("outputs");
  if (it == reply.header.end() || !it->is_array()) {
    return absl::DataLossError("reply has no outputs list");
  }
  if (it->size() != reply.blobs.size()) {
    return absl::DataLossError(absl::StrCat("reply lists ", it->size(), " outputs but carries ",
                                            reply.blobs.size(), " buffers"));
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& m = (*it)[i];
    KbTensor t;
    std::string dtype = KbField<std::string>(m, "dtype", "");
    if (!runner::DtypeFromName(dtype, &t.spec.dtype)) {
      return absl::DataLossError(
          absl::StrCat("output ", i, ": dtype '", dtype.substr(0, 40), "' is not supported"));
    }
    t.spec.name = absl::StrCat("output", i);
    t.spec.shape = KbField<std::vector<int64_t>>(m, "shape", {-1});
    t.probe = KbField<std::string>(m, "probe", "");
    uint64_t bytes = 0;
    if (!runner::SpecBytes(t.spec, &bytes) || bytes != reply.blobs[i].size()) {
      return absl::DataLossError(absl::StrCat("output ", i, ": ", reply.blobs[i].size(),
                                              " bytes do not match its dtype and shape"));
    }
    t.data = reply.blobs[i];
    out.push_back(std::move(t));
  }
  return out;
}

std::string EncodeKbPayload(const nlohmann::json& header, const std::vector<std::string>& blobs) {
  runner::WireWriter w;
  w.PutString(header.dump());
  w.PutStringVector(blobs);
  return w.Take();
}

bool DecodeKbPayload(const std::string& payload, KbReply* reply, std::string* error) {
  runner::WireReader r(payload);
  std::string text;
  if (!r.GetString(&text) || !r.GetStringVector(&reply->blobs) || !r.Finish(error)) {
    if (error && error->empty()) *error = r.error();
    return false;
  }
  reply->header = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!reply->header.is_object()) {
    *error = "reply header is not a JSON object";
    return false;
  }
  return true;
}

std::unique_ptr<KbSession> KbSession::Start(const RunnerOptions& runner, const KbOptions& kb,
                                            const Lane& lane, const KbLoad& load,
                                            double budget_seconds,
                                            const RequestContext& context, RunnerEvent* event) {
  // The sandbox's private /tmp hides host paths under /tmp: everything the
  // harness reads is bound read-only by directory.
  std::vector<std::string> readonly = {fs::path(kb.harness).parent_path().string(),
                                       fs::path(load.task_path).parent_path().string()};
  if (!load.candidate_path.empty()) {
    readonly.push_back(fs::path(load.candidate_path).parent_path().string());
  }
  // The interpreter may fork helpers (e.g. torch's compile workers), so the
  // exec-allowing profile; network, ptrace, mounts and the rest stay fatal.
  auto session = RunnerSession::Spawn(runner, lane, {kb.python, "-B", kb.harness, "serve"},
                                      readonly, runner::SeccompProfile::kCompiler, budget_seconds,
                                      context, event);
  if (!session) return nullptr;
  std::unique_ptr<KbSession> kbs(new KbSession());
  kbs->session_ = std::move(session);
  nlohmann::json request = {{"role", load.role},
                            {"task_path", load.task_path},
                            {"candidate_path", load.candidate_path},
                            {"manifest", load.manifest_path},
                            {"device", lane.backend == BackendKind::kCuda ? "cuda" : "cpu"},
                            {"init_seed", kb.init_seed},
                            {"l2_flush_bytes", runner.l2_flush_bytes}};
  KbReply reply;
  *event = kbs->Exchange(static_cast<uint32_t>(runner::MessageType::kKbLoad),
                         static_cast<uint32_t>(runner::MessageType::kKbLoaded), request,
                         runner.startup_timeout_seconds, &reply);
  if (!event->ok) return nullptr;
  if (!KbField<bool>(reply.header, "ok", false)) {
    *event = {false, v1::VERDICT_RUNTIME_ERROR,
              absl::StrCat(load.role, " failed to load: ",
                           KbField<std::string>(reply.header, "error", "(no detail)"))};
    kbs->Close();
    return nullptr;
  }
  kbs->device_name_ = KbField<std::string>(reply.header, "device_name", "");
  kbs->custom_kernel_ = KbField<bool>(reply.header, "custom_kernel", false);
  kbs->global_flags_ = KbField<std::vector<std::string>>(reply.header, "global_flags", {});
  return kbs;
}

RunnerEvent KbSession::Exchange(uint32_t type, uint32_t expect, const nlohmann::json& request,
                                double timeout_seconds, KbReply* reply) {
  std::string payload;
  RunnerEvent e = session_->Exchange(type, EncodeKbPayload(request, {}), expect, timeout_seconds,
                                     &payload);
  if (!e.ok) return e;
  std::string error;
  if (!DecodeKbPayload(payload, reply, &error)) {
    session_->Close();
    return {false, v1::VERDICT_SANDBOX_VIOLATION,
            absl::StrCat("malformed result on the harness channel: ", error)};
  }
  const std::string status = KbField<std::string>(reply->header, "status", "ok");
  if (status == "cuda_error") session_->Close();  // the harness exits by itself
  return e;
}

RunnerEvent KbSession::Call(const nlohmann::json& request, double timeout_seconds,
                            KbReply* reply) {
  return Exchange(static_cast<uint32_t>(runner::MessageType::kKbCall),
                  static_cast<uint32_t>(runner::MessageType::kKbCallResult), request,
                  timeout_seconds, reply);
}

RunnerEvent KbSession::Fetch(double timeout_seconds, KbReply* reply) {
  return Exchange(static_cast<uint32_t>(runner::MessageType::kKbFetch),
                  static_cast<uint32_t>(runner::MessageType::kKbOutputs), nlohmann::json::object(),
                  timeout_seconds, reply);
}

}  // namespace crl
