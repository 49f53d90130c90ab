#include "services/worker/formats/kernelbench/kb_staged.h"

#include "absl/strings/str_cat.h"
#include "runner/dtype.h"
#include "runner/inputs.h"

namespace crl {
namespace {

std::string Status(const KbReply& r) { return KbField<std::string>(r.header, "status", ""); }

// At most this many bytes of outputs or inputs per call are read (a host
// task's tensors are far smaller; more is a forged answer).
constexpr uint64_t kMaxBytesPerCall = uint64_t{8} << 30;

}  // namespace

bool KbStagedSide::Describe(const nlohmann::json& calls, std::vector<std::vector<Tensor>>* out, std::string* error) {
  out->clear();
  if (!calls.is_array()) {
    *error = "not a list of calls";
    return false;
  }
  for (const auto& call : calls) {
    if (!call.is_array()) {
      *error = "a call is not a list";
      return false;
    }
    uint64_t total = 0;
    std::vector<Tensor> tensors;
    for (const auto& t : call) {
      if (t.is_object() && t.contains("value")) {
        Tensor v;
        v.is_value = true;
        v.value = t["value"].dump();
        tensors.push_back(std::move(v));
        continue;
      }
      Tensor x;
      const std::string dtype = KbField<std::string>(t, "dtype", "");
      x.spec.shape = KbField<std::vector<int64_t>>(t, "shape", {});
      x.address = KbField<uint64_t>(t, "address", 0);
      x.bytes = KbField<uint64_t>(t, "bytes", 0);
      uint64_t want = 0;
      if (!runner::DtypeFromName(dtype, &x.spec.dtype) || !runner::SpecBytes(x.spec, &want) || want != x.bytes ||
          (x.bytes > 0 && x.address == 0)) {
        *error = absl::StrCat("tensor ", dtype.substr(0, 20), " of ", x.bytes, " bytes does not match its shape");
        return false;
      }
      total += x.bytes;
      if (total > kMaxBytesPerCall) {
        *error = "more bytes than a call can hold";
        return false;
      }
      tensors.push_back(std::move(x));
    }
    out->push_back(std::move(tensors));
  }
  return true;
}

RunnerEvent KbStagedSide::Stage(const TimedRequest& request, double timeout,
                                const std::shared_ptr<StagedSample>& sample) {
  nlohmann::json ask = {{"stage", true}, {"seed", request.seed}, {"calls", request.calls},
                        {"flush_l2", request.flush_l2}};
  if (side_ == Side::kCandidate) {
    nlohmann::json given = nlohmann::json::array();
    for (const auto& call : sample->calls) {
      nlohmann::json c = nlohmann::json::array();
      for (const StagedInput& in : call) {
        if (!in.value.empty()) {
          c.push_back({{"value", nlohmann::json::parse(in.value)}});
        } else {
          c.push_back({{"dtype", runner::DtypeName(in.spec.dtype)}, {"shape", in.spec.shape}});
        }
      }
      given.push_back(std::move(c));
    }
    ask["inputs"] = std::move(given);
  }
  KbReply reply;
  RunnerEvent event = session_->Call(ask, timeout, &reply);
  if (!event.ok) return event;
  if (Status(reply) != "ok") {
    return {false, v1::VERDICT_RUNTIME_ERROR,
            absl::StrCat("staging a sample: ", KbField<std::string>(reply.header, "error", "failed").substr(0, 2000))};
  }
  sample_ = sample;
  const std::string unstaged = KbField<std::string>(reply.header, "unstaged", "");
  if (!unstaged.empty()) {
    // Only the reference's word counts: a candidate that says so would
    // choose to be timed by its own clock.
    if (side_ == Side::kReference) {
      sample->unstaged = unstaged.substr(0, 200);
      return event;
    }
    return {false, v1::VERDICT_SANDBOX_VIOLATION, "the candidate refused the reference's inputs"};
  }
  std::string error;
  if (!Describe(KbField<nlohmann::json>(reply.header, "inputs", nullptr), &inputs_, &error)) {
    return {false, side_ == Side::kReference ? v1::VERDICT_INFRA_ERROR : v1::VERDICT_SANDBOX_VIOLATION,
            absl::StrCat("staged inputs: ", error)};
  }
  if (side_ == Side::kReference) {
    // The reference's inputs, as it made them: the sample every side runs.
    sample->seed = request.seed;
    sample->calls.assign(inputs_.size(), {});
    for (size_t c = 0; c < inputs_.size(); ++c) {
      for (size_t i = 0; i < inputs_[c].size(); ++i) {
        StagedInput in;
        const Tensor& t = inputs_[c][i];
        if (t.is_value) {
          in.value = t.value;
        } else {
          in.spec = t.spec;
          if (!session_->process()->ReadMemory({{t.address, t.bytes}}, &in.bytes, &error)) {
            return {false, v1::VERDICT_INFRA_ERROR, absl::StrCat("reading the reference's inputs: ", error)};
          }
        }
        sample->calls[c].push_back(std::move(in));
      }
    }
    return event;
  }
  // The candidate's buffers must be the reference's inputs' shapes.
  bool fits = inputs_.size() == sample->calls.size();
  for (size_t c = 0; fits && c < inputs_.size(); ++c) {
    fits = inputs_[c].size() == sample->calls[c].size();
    for (size_t i = 0; fits && i < inputs_[c].size(); ++i) {
      const Tensor& t = inputs_[c][i];
      const StagedInput& want = sample->calls[c][i];
      fits = t.is_value ? !want.value.empty()
                        : want.value.empty() && t.spec.dtype == want.spec.dtype && t.spec.shape == want.spec.shape &&
                              t.bytes == want.bytes.size();
    }
  }
  if (!fits) return {false, v1::VERDICT_SANDBOX_VIOLATION, "staged input buffers do not fit the sample's inputs"};
  return event;
}

RunnerEvent KbStagedSide::Timed(const TimedRequest& /*request: staged by Stage*/, double timeout, TimedResult* result) {
  std::vector<RunnerSession::InputWrite> writes;
  for (size_t c = 0; c < inputs_.size(); ++c) {
    for (size_t i = 0; i < inputs_[c].size(); ++i) {
      const Tensor& t = inputs_[c][i];
      if (t.is_value || t.bytes == 0) continue;
      writes.push_back({t.address, &sample_->calls[c][i].bytes, "an input"});
    }
  }
  KbReply reply;
  double seconds = 0;
  outputs_.clear();
  RunnerEvent event =
      session_->process()->RunStaged(writes, [&] { return session_->Call({{"go", true}}, timeout, &reply); }, &seconds);
  if (!event.ok) return event;
  std::string error;
  if (Status(reply) != "ok") {
    return {false, v1::VERDICT_RUNTIME_ERROR, KbField<std::string>(reply.header, "error", "failed").substr(0, 3000)};
  }
  const auto problems = KbField<nlohmann::json>(
      KbField<nlohmann::json>(reply.header, "findings", nlohmann::json::object()), "problems", nlohmann::json::array());
  if (problems.is_array() && !problems.empty()) return {false, v1::VERDICT_WRONG_ANSWER, problems[0].dump()};
  if (KbField<int>(reply.header, "python_threads_after", 0) > 0) {
    return {false, v1::VERDICT_WRONG_ANSWER, "a Python thread was left running after a timed forward returned"};
  }
  if (!Describe(KbField<nlohmann::json>(reply.header, "outputs", nullptr), &outputs_, &error) ||
      outputs_.size() != inputs_.size()) {
    return {false, v1::VERDICT_SANDBOX_VIOLATION, absl::StrCat("staged outputs: ", error.empty() ? "one list per call" : error)};
  }
  result->stream_event_seconds = result->device_sync_seconds = result->host_seconds = seconds;
  result->call_bytes = std::max<int64_t>(0, KbField<int64_t>(reply.header, "call_bytes", 0));
  result->staged = true;
  return event;
}

RunnerEvent KbStagedSide::LastOutputs(int call, const OutputSample& sample, std::vector<OutputTensor>* outputs) {
  if (call < 0 || call >= static_cast<int>(outputs_.size())) return {false, v1::VERDICT_WRONG_ANSWER, "no such call"};
  RunnerSession* process = session_->process();
  std::string error;
  outputs->clear();
  bool aliases = false;
  for (size_t o = 0; o < outputs_[call].size(); ++o) {
    const Tensor& t = outputs_[call][o];
    for (const Tensor& in : inputs_[call]) {
      aliases = aliases || (in.bytes > 0 && t.address < in.address + in.bytes && in.address < t.address + t.bytes);
    }
    OutputTensor out;
    out.spec = t.spec;
    int64_t numel = 0;
    runner::SpecNumel(t.spec, &numel);
    const size_t width = runner::DtypeSize(t.spec.dtype);
    std::vector<runner::MemoryRange> ranges;
    if (sample.max_elements > 0 && numel > sample.max_elements) {
      // The same positions on both sides (the same draw, here).
      uint64_t state = sample.seed ^ (0x9E3779B97F4A7C15ull * (o + 1));
      for (int64_t k = 0; k < sample.max_elements; ++k) {
        ranges.push_back({t.address + (runner::SplitMix64(&state) % static_cast<uint64_t>(numel)) * width, width});
      }
      out.sampled_from = t.spec.shape;
      out.spec.shape = {sample.max_elements};
    } else {
      ranges.push_back({t.address, t.bytes});
    }
    if (!process->ReadMemory(ranges, &out.data, &error)) {
      return {false, v1::VERDICT_WRONG_ANSWER, absl::StrCat("output ", o, " could not be read after the call (", error, ")")};
    }
    outputs->push_back(std::move(out));
  }
  if (side_ == Side::kReference) {
    if (sample_->reference_aliases.size() < outputs_.size()) sample_->reference_aliases.resize(outputs_.size());
    sample_->reference_aliases[call] = aliases;
    return {true, v1::VERDICT_OK, ""};
  }
  const bool reference_aliases = call < static_cast<int>(sample_->reference_aliases.size()) &&
                                 sample_->reference_aliases[call];
  if (aliases && !reference_aliases) {
    return {false, v1::VERDICT_WRONG_ANSWER, "a timed call returned an output that shares its input's memory"};
  }
  for (size_t i = 0; i < inputs_[call].size(); ++i) {
    const Tensor& in = inputs_[call][i];
    if (in.bytes == 0) continue;
    std::string after;
    if (!process->ReadMemory({{in.address, in.bytes}}, &after, &error) || after != sample_->calls[call][i].bytes) {
      return {false, v1::VERDICT_WRONG_ANSWER, absl::StrCat("input ", i, " was modified by a timed call")};
    }
  }
  return {true, v1::VERDICT_OK, ""};
}

}  // namespace crl
