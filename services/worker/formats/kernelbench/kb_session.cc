#include "services/worker/formats/kernelbench/kb_session.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "runner/dtype.h"
#include "runner/wire.h"

namespace crl {
namespace fs = std::filesystem;

absl::StatusOr<std::vector<KbTensor>> DecodeKbTensors(KbReply&& reply, bool allow_fill) {
  std::vector<KbTensor> out;
  auto it = reply.header.find("outputs");
  if (it == reply.header.end() || !it->is_array()) {
    return absl::DataLossError("reply has no outputs list");
  }
  if (it->size() != reply.blobs.size()) {
    return absl::DataLossError(absl::StrCat("reply lists ", it->size(), " outputs but carries ",
                                            reply.blobs.size(), " buffers"));
  }
  // The largest output sent in full bounds what a fill may expand to.
  size_t largest = 0;
  for (size_t i = 0; i < it->size(); ++i) {
    if (!KbField<bool>((*it)[i], "fill", false)) largest = std::max(largest, reply.blobs[i].size());
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
    t.sampled_from = KbField<std::vector<int64_t>>(m, "sampled_from", {});
    uint64_t bytes = 0;
    if (!runner::SpecBytes(t.spec, &bytes)) {
      return absl::DataLossError(absl::StrCat("output ", i, ": bad shape"));
    }
    // A probe that is one value in the output's shape comes as that value.
    std::string& blob = reply.blobs[i];
    const size_t element = runner::DtypeSize(t.spec.dtype);
    if (allow_fill && !t.probe.empty() && KbField<bool>(m, "fill", false) && blob.size() == element &&
        element > 0 && bytes <= largest) {
      // Compared as it is (TensorWithin): a probe of a 571 MB output was
      // expanded to 571 MB before each comparison.
      t.constant = bytes > 0;
      if (t.constant) t.data = std::move(blob);
      out.push_back(std::move(t));
      continue;
    }
    if (bytes != blob.size()) {
      return absl::DataLossError(absl::StrCat("output ", i, ": ", blob.size(),
                                              " bytes do not match its dtype and shape"));
    }
    t.data = std::move(blob);
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

bool DecodeKbPayload(std::string&& payload, KbReply* reply, std::string* error) {
  const std::string_view view(payload);
  runner::WireReader r(view);
  std::string text;
  uint64_t count = 0;
  if (!r.GetString(&text) || !r.GetCount(&count, 8)) {
    *error = r.error();
    return false;
  }
  // Where each blob lies (offset, length), all checked before any is taken.
  std::vector<std::pair<size_t, size_t>> spans;
  size_t at = view.size() - r.remaining();
  for (uint64_t i = 0; i < count; ++i) {
    runner::WireReader blob(view.substr(at));
    uint64_t n = 0;
    if (!blob.GetU64(&n) || n > blob.remaining()) {
      *error = "blob length exceeds payload";
      return false;
    }
    spans.emplace_back(at + 8, static_cast<size_t>(n));
    at += 8 + n;
  }
  if (at != view.size()) {
    *error = "bytes left after the blobs";
    return false;
  }
  reply->header = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!reply->header.is_object()) {
    *error = "reply header is not a JSON object";
    return false;
  }
  reply->blobs.clear();
  reply->blobs.reserve(spans.size());
  for (size_t i = 0; i + 1 < spans.size(); ++i) reply->blobs.emplace_back(view.substr(spans[i].first, spans[i].second));
  if (!spans.empty()) {
    // The last blob (a trial's output, in practice: up to GBs) takes the
    // payload's own buffer, moved to its front in place: no new pages.
    const auto [offset, length] = spans.back();
    payload.erase(0, offset);
    payload.resize(length);
    reply->blobs.push_back(std::move(payload));
  }
  return true;
}

namespace {

// `name` (from the manifest) as a regular file inside `dir`, or why not.
absl::StatusOr<std::string> InsideBuild(const fs::path& dir, const std::string& name) {
  const fs::path rel(name);
  if (name.empty() || rel.is_absolute()) {
    return absl::PermissionDeniedError(absl::StrCat("'", name.substr(0, 200), "' is not a relative path"));
  }
  for (const auto& part : rel) {
    if (part == ".." || part == ".") {
      return absl::PermissionDeniedError(absl::StrCat("'", name.substr(0, 200), "' leaves its directory"));
    }
  }
  std::error_code real_error, base_error, type_error;
  const fs::path real = fs::canonical(dir / rel, real_error);
  const fs::path base = fs::canonical(dir, base_error);
  if (real_error || base_error) {
    return absl::NotFoundError(absl::StrCat("'", name.substr(0, 200), "' does not exist"));
  }
  // Symbolic links are followed first: the file itself must be in the directory.
  auto [b, r] = std::mismatch(base.begin(), base.end(), real.begin(), real.end());
  if (b != base.end() || !fs::is_regular_file(real, type_error)) {
    return absl::PermissionDeniedError(
        absl::StrCat("'", name.substr(0, 200), "' is not a regular file inside the build directory"));
  }
  return real.string();
}

}  // namespace

bool CollectKbFiles(const KbLoad& load, uint64_t max_bytes, KbLoadFiles* files, RunnerEvent* event) {
  uint64_t bytes = 0;
  auto add = [&](const std::string& name, const std::string& path, v1::Verdict unreadable) {
    auto content = ReadFileToString(path, name);
    if (!content.ok()) {
      *event = {false, unreadable, std::string(content.status().message())};
      return false;
    }
    bytes += content->size();
    if (bytes > max_bytes) {
      *event = {false, v1::VERDICT_RESOURCE_LIMIT,
                absl::StrCat("the ", load.role, "'s files (task, source, built extensions) exceed ", max_bytes >> 20,
                             " MiB, the most a harness's private /tmp holds")};
      return false;
    }
    files->names.push_back(name);
    files->contents.push_back(std::move(*content));
    return true;
  };
  if (!add("task.py", load.task_path, v1::VERDICT_INFRA_ERROR)) return false;
  if (load.candidate_path.empty()) return true;
  if (!add("candidate.py", load.candidate_path, v1::VERDICT_INFRA_ERROR)) return false;
  if (load.manifest_path.empty()) return true;
  if (!add("manifest.json", load.manifest_path, v1::VERDICT_INFRA_ERROR)) return false;
  const auto manifest = nlohmann::json::parse(files->contents.back(), nullptr, false);
  const auto extensions = KbField<nlohmann::json>(manifest, "extensions", nlohmann::json());
  if (!extensions.is_array()) {
    *event = {false, v1::VERDICT_SANDBOX_VIOLATION,
              "the build's manifest.json was rewritten (no list of extensions): candidate code runs during the "
              "build"};
    return false;
  }
  const fs::path dir = fs::path(load.manifest_path).parent_path();
  for (const auto& ext : extensions) {
    const std::string so = KbField<std::string>(ext, "so", "");
    auto path = InsideBuild(dir, so);
    if (!path.ok()) {
      *event = {false,
                path.status().code() == absl::StatusCode::kNotFound ? v1::VERDICT_INFRA_ERROR
                                                                    : v1::VERDICT_SANDBOX_VIOLATION,
                absl::StrCat("the build's manifest names extension ", path.status().message())};
      return false;
    }
    if (!add(fs::path(so).lexically_normal().string(), *path, v1::VERDICT_INFRA_ERROR)) return false;
  }
  return true;
}

std::unique_ptr<RunnerSession> SpawnKbHarness(const RunnerOptions& runner, const KbOptions& kb,
                                              const Lane& lane, double budget_seconds,
                                              const RequestContext& context, RunnerEvent* event) {
  // The harness's own directory is the only host path it is shown; what it
  // loads arrives over the channel (CollectKbFiles). The interpreter may
  // fork helpers (e.g. torch's compile workers), so a profile that allows
  // exec; what it starts cannot leave its process group or its CPUs (the
  // worker stops the group while the other side is timed); network,
  // ptrace, mounts and the rest stay fatal.
  auto session = RunnerSession::Spawn(runner, lane, {kb.python, "-B", kb.harness, "serve"},
                                      {fs::path(kb.harness).parent_path().string()},
                                      runner::SeccompProfile::kHarness, budget_seconds, context, event);
  // A harness serves one side and is thrown away: nothing in it needs a
  // clean exit, and an interpreter's shutdown with torch and a CUDA context
  // would hold the lane (ending sides holds it: EvalEngine::Retire).
  if (session) session->KillOnClose();
  return session;
}

namespace {

// The harness's KB_WARM request: `device` "cuda" or "cpu" brings that device
// up; "none" only answers, once the interpreter has imported torch.
std::string KbWarmRequest(const RunnerOptions& runner, const std::string& device) {
  return EncodeKbPayload({{"device", device}, {"l2_flush_bytes", runner.l2_flush_bytes}}, {});
}

bool KbWarmed(RunnerSession* session, const RunnerEvent& e, std::string payload, std::string* error) {
  KbReply reply;
  if (!e.ok) {
    *error = e.message;
  } else if (!DecodeKbPayload(std::move(payload), &reply, error)) {
    session->Close();
  } else if (!KbField<bool>(reply.header, "ok", false)) {
    *error = KbField<std::string>(reply.header, "error", "(no detail)").substr(0, 2000);
    session->Close();
  } else {
    return true;
  }
  return false;
}

constexpr uint32_t kKbWarm = static_cast<uint32_t>(runner::MessageType::kKbWarm);
constexpr uint32_t kKbWarmed = static_cast<uint32_t>(runner::MessageType::kKbWarmed);

}  // namespace

bool ReadyKbHarness(RunnerSession* session, const RunnerOptions& runner, std::string* error) {
  std::string payload;
  RunnerEvent e = session->Exchange(kKbWarm, KbWarmRequest(runner, "none"), kKbWarmed,
                                    runner.startup_timeout_seconds, &payload);
  return KbWarmed(session, e, std::move(payload), error);
}

bool BeginWarmKbHarness(RunnerSession* session, const RunnerOptions& runner, const Lane& lane,
                        std::string* error) {
  RunnerEvent e = session->Request(kKbWarm, KbWarmRequest(runner, lane.backend == BackendKind::kCuda ? "cuda" : "cpu"),
                                   runner.startup_timeout_seconds);
  if (!e.ok) *error = e.message;
  return e.ok;
}

bool AwaitWarmKbHarness(RunnerSession* session, const RunnerOptions& runner, std::string* error) {
  std::string payload;
  RunnerEvent e = session->Reply(kKbWarm, kKbWarmed, runner.startup_timeout_seconds, &payload);
  return KbWarmed(session, e, std::move(payload), error);
}

std::unique_ptr<KbSession> KbSession::Start(const RunnerOptions& runner, const KbOptions& kb,
                                            const Lane& lane, const KbLoad& load,
                                            double budget_seconds,
                                            const RequestContext& context, RunnerEvent* event,
                                            std::unique_ptr<RunnerSession> warm) {
  KbLoadFiles files;
  // Leave room in the private /tmp for what the side writes itself.
  const uint64_t max_bytes = runner.tmpfs_bytes > (16u << 20) ? runner.tmpfs_bytes - (16u << 20) : runner.tmpfs_bytes / 2;
  if (!CollectKbFiles(load, max_bytes, &files, event)) return nullptr;
  std::unique_ptr<KbSession> kbs(new KbSession());
  if (warm) {
    warm->Adopt(context, budget_seconds);
    kbs->session_ = std::move(warm);
  } else {
    kbs->session_ = SpawnKbHarness(runner, kb, lane, budget_seconds, context, event);
    if (!kbs->session_) return nullptr;
  }
  const nlohmann::json request = {{"role", load.role},
                                  {"files", files.names},
                                  {"task", "task.py"},
                                  {"candidate", load.candidate_path.empty() ? "" : "candidate.py"},
                                  {"manifest", load.manifest_path.empty() ? "" : "manifest.json"},
                                  {"device", lane.backend == BackendKind::kCuda ? "cuda" : "cpu"},
                                  {"init_seed", kb.init_seed},
                                  {"l2_flush_bytes", runner.l2_flush_bytes}};
  KbReply reply;
  *event = kbs->Exchange(static_cast<uint32_t>(runner::MessageType::kKbLoad),
                         static_cast<uint32_t>(runner::MessageType::kKbLoaded), request, files.contents,
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
                                const std::vector<std::string>& blobs, double timeout_seconds,
                                KbReply* reply) {
  std::string payload;
  RunnerEvent e = session_->Exchange(type, EncodeKbPayload(request, blobs), expect, timeout_seconds,
                                     &payload);
  if (!e.ok) return e;
  std::string error;
  if (!DecodeKbPayload(std::move(payload), reply, &error)) {
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
                  static_cast<uint32_t>(runner::MessageType::kKbCallResult), request, {},
                  timeout_seconds, reply);
}

RunnerEvent KbSession::Fetch(int call, const OutputSample& sample, double timeout_seconds, KbReply* reply) {
  // The seed stays below 2^63: the harness hands it to torch.Generator.
  nlohmann::json request = {{"call", call}};
  if (sample.max_elements > 0) {
    request["sample_elements"] = sample.max_elements;
    request["sample_seed"] = sample.seed & ((uint64_t{1} << 63) - 1);
  }
  return Exchange(static_cast<uint32_t>(runner::MessageType::kKbFetch),
                  static_cast<uint32_t>(runner::MessageType::kKbOutputs), request, {},
                  timeout_seconds, reply);
}

}  // namespace crl
