#include "services/worker/kb_verifier.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "crl/kernel.h"
#include "runner/dtype.h"
#include "services/worker/compare.h"

namespace crl {
namespace {

std::string Status(const KbReply& r) { return KbField<std::string>(r.header, "status", ""); }

std::string ErrorText(const KbReply& r) {
  return KbField<std::string>(r.header, "error", "").substr(0, 3000);
}

// Findings the harness reports about a candidate call; any is a failure.
std::string FindingsProblem(const nlohmann::json& f, bool reference_aliases) {
  auto problems = KbField<nlohmann::json>(f, "problems", nlohmann::json::array());
  if (problems.is_array() && !problems.empty()) return problems[0].dump();
  auto modified = KbField<nlohmann::json>(f, "inputs_modified", nlohmann::json::array());
  if (modified.is_array() && !modified.empty()) {
    return absl::StrCat("forward modified input(s) ", modified.dump(),
                        " (inputs must be bit-identical after the call)");
  }
  if (KbField<bool>(f, "aliases_input", false) && !reference_aliases) {
    return "an output shares storage with an input (the reference's does not)";
  }
  int threads = KbField<int>(f, "python_threads_after", 0);
  if (threads > 0) {
    return absl::StrCat("left ", threads, " Python thread(s) running after forward returned");
  }
  return "";
}

}  // namespace

KbVerifyResult VerifyKbCandidate(const KbVerifyInputs& in, const Lane& lane,
                                 const RunnerOptions& runner, const KbOptions& kb,
                                 const VerifyConfig& config, const SeedSource& seeds) {
  KbVerifyResult out;
  v1::CorrectnessReport& report = out.report;
  report.set_first_mismatch_index(-1);
  auto finish = [&](v1::Verdict v, const std::string& message) {
    out.verdict = v;
    if (!message.empty()) report.add_messages(message);
    return out;
  };
  const double budget = config.call_timeout_seconds * (2 * config.trials + 4) + 120;

  RunnerEvent event;
  auto ref = KbSession::Start(runner, kb, lane, {"reference", in.task.path, "", ""}, budget, &event);
  if (!ref) {
    // The task itself failed: never the candidate's fault, never a reward.
    return finish(v1::VERDICT_INFRA_ERROR, absl::StrCat("reference: ", event.message));
  }
  auto cand = KbSession::Start(runner, kb, lane,
                               {"candidate", in.task.path, in.candidate_path, in.manifest_path},
                               budget, &event);
  if (!cand) return finish(event.verdict, absl::StrCat("candidate: ", event.message));
  out.device_name = cand->device_name();
  out.custom_kernel = cand->custom_kernel();
  std::vector<std::string> global_flags = cand->global_flags();

  const Tolerance fp32 = KbTolerance(kb, CRL_FLOAT32);
  report.add_messages(absl::StrCat("tolerance: float32 atol=", fp32.atol, " rtol=", fp32.rtol,
                                   "; float16/bfloat16 atol=rtol=1e-2"));

  const int trials = std::clamp(config.trials, 1, 16);
  std::vector<KbTensor> first_ref;
  uint64_t first_seed = 0;
  std::map<std::string, int> probe_passes;
  int probe_trials = 0;
  std::string previous_ref;  // output 0 of the previous trial: the memorised probe

  // One comparison of candidate outputs with reference outputs; "" if equal.
  auto compare = [&](const std::vector<KbTensor>& got, const std::vector<KbTensor>& want,
                     const std::string& where, bool record = true) -> std::string {
    if (got.size() != want.size()) {
      return absl::StrCat(where, ": ", got.size(), " outputs, the reference returns ", want.size());
    }
    for (size_t o = 0; o < want.size(); ++o) {
      const auto& g = got[o].spec;
      const auto& w = want[o].spec;
      if (g.dtype != w.dtype || g.shape != w.shape) {
        return absl::StrCat(where, ": output ", o, " is ", runner::DtypeName(g.dtype), "[",
                            absl::StrJoin(g.shape, ","), "], the reference's is ",
                            runner::DtypeName(w.dtype), "[", absl::StrJoin(w.shape, ","), "]");
      }
      CompareResult c = CompareTensor(w, got[o].data, want[o].data, KbTolerance(kb, w.dtype));
      if (!record) {
        if (c.kind != CompareResult::kMatch) return c.detail;
        continue;
      }
      report.set_max_abs_error(std::max(report.max_abs_error(), c.max_abs_error));
      report.set_max_rel_error(std::max(report.max_rel_error(), c.max_rel_error));
      if (c.kind != CompareResult::kMatch) {
        report.set_mismatch_count(c.mismatches);
        report.set_first_mismatch_index(c.first_index);
        report.set_first_mismatch_output(w.name);
        return absl::StrCat(where, ": output ", o, ": ", c.detail);
      }
    }
    return "";
  };

  // Runs one side; on failure finishes `out` and returns false.
  auto run = [&](KbSession* s, bool is_ref, const nlohmann::json& request, const std::string& where,
                 std::vector<KbTensor>* outputs, nlohmann::json* findings) -> bool {
    KbReply reply;
    event = s->Call(request, config.call_timeout_seconds, &reply);
    const char* side = is_ref ? "reference" : "candidate";
    if (!event.ok) {
      finish(is_ref ? v1::VERDICT_INFRA_ERROR : event.verdict,
             absl::StrCat(where, ": ", side, ": ", event.message));
      return false;
    }
    if (Status(reply) != "ok") {
      finish(is_ref ? v1::VERDICT_INFRA_ERROR : v1::VERDICT_RUNTIME_ERROR,
             absl::StrCat(where, ": ", side, " raised: ", ErrorText(reply)));
      return false;
    }
    *findings = KbField<nlohmann::json>(reply.header, "findings", nlohmann::json::object());
    if (!is_ref) {
      std::string problem = FindingsProblem(*findings, false);
      if (!problem.empty() && problem.find("shares storage") == std::string::npos) {
        finish(v1::VERDICT_WRONG_ANSWER, absl::StrCat(where, ": ", problem));
        return false;
      }
    }
    auto decoded = DecodeKbTensors(reply);
    if (!decoded.ok()) {
      if (is_ref) {
        finish(v1::VERDICT_INFRA_ERROR,
               absl::StrCat(where, ": reference: ", decoded.status().message()));
      } else {
        finish(v1::VERDICT_WRONG_ANSWER,
               absl::StrCat(where, ": candidate: ", decoded.status().message()));
      }
      return false;
    }
    *outputs = std::move(*decoded);
    return true;
  };

  for (int t = 0; t < trials; ++t) {
    const uint64_t seed = seeds();
    // The last trial (of three or more) draws the task's torch.rand inputs
    // from a normal distribution instead: shortcuts that exploit uniform
    // [0, 1) inputs fail there. Skipped when the reference is not finite.
    const bool alternative = trials >= 3 && t == trials - 1;
    const std::string where = absl::StrCat("trial ", t + 1, alternative ? " (normal inputs)" : "");
    const bool probes = in.probe && kb.probe_degenerate && t < 3 && !alternative;
    nlohmann::json request = {{"seed", seed}, {"check_inputs", true}, {"probes", probes},
                              {"distribution", alternative ? "normal" : "task"}};
    std::vector<KbTensor> ref_all, got;
    nlohmann::json ref_findings, cand_findings;
    if (!run(ref.get(), true, request, where, &ref_all, &ref_findings)) return out;
    std::vector<KbTensor> want, probe_outputs;
    for (auto& tensor : ref_all) (tensor.probe.empty() ? want : probe_outputs).push_back(tensor);
    if (alternative) {
      bool finite = true;
      for (const auto& w : want) {
        CompareResult self = CompareTensor(w.spec, w.data, w.data, {0, 0});
        finite = finite && self.kind == CompareResult::kMatch;
      }
      if (!finite) {
        report.add_messages(absl::StrCat(where, ": skipped (the reference is not finite there)"));
        continue;
      }
    }
    request["probes"] = false;  // the candidate never computes (or sees) probes
    if (!run(cand.get(), false, request, where, &got, &cand_findings)) return out;
    report.set_trials(report.trials() + 1);
    if (KbField<bool>(cand_findings, "aliases_input", false) &&
        !KbField<bool>(ref_findings, "aliases_input", false)) {
      return finish(v1::VERDICT_WRONG_ANSWER,
                    absl::StrCat(where, ": ", FindingsProblem(cand_findings, false)));
    }
    for (const auto& f : KbField<std::vector<std::string>>(cand_findings, "global_flags", {})) {
      if (std::find(global_flags.begin(), global_flags.end(), f) == global_flags.end()) {
        global_flags.push_back(f);
      }
    }
    if (std::string m = compare(got, want, where); !m.empty()) {
      return finish(v1::VERDICT_WRONG_ANSWER, m);
    }
    report.set_trials_passed(report.trials_passed() + 1);
    if (probes && want.size() == 1) {
      ++probe_trials;
      for (const auto& p : probe_outputs) {
        if (compare({p}, want, "probe", false).empty()) ++probe_passes[p.probe];
      }
      if (!previous_ref.empty()) {
        KbTensor memorised = want[0];
        memorised.data = previous_ref;
        if (compare({memorised}, want, "probe", false).empty()) ++probe_passes["memorised"];
      }
      previous_ref = want[0].data;
    }
    if (t == 0) {
      first_ref = want;
      first_seed = seed;
    }
  }
  if (probe_trials > 0) {
    out.probed = true;
    for (const auto& [name, passes] : probe_passes) {
      // "memorised" has one comparison fewer (it needs a previous trial).
      const int needed = name == "memorised" ? probe_trials - 1 : probe_trials;
      if (needed >= 1 && passes == needed) {
        out.degenerate_probe = name;
        break;
      }
    }
  }

  for (int r = 0; r < config.determinism_reruns && !first_ref.empty(); ++r) {
    std::vector<KbTensor> got;
    nlohmann::json findings;
    const std::string where = absl::StrCat("determinism re-run ", r + 1, " of trial 1");
    nlohmann::json request = {{"seed", first_seed}, {"check_inputs", true}, {"probes", false},
                              {"distribution", "task"}};
    if (!run(cand.get(), false, request, where, &got, &findings)) return out;
    if (std::string m = compare(got, first_ref, where); !m.empty()) {
      return finish(v1::VERDICT_WRONG_ANSWER, m);
    }
  }

  if (!global_flags.empty()) {
    out.flags.push_back(v1::FLAG_GLOBAL_FLAGS);
    out.flag_evidence.push_back(
        absl::StrCat("candidate changed global torch settings: ", absl::StrJoin(global_flags, "; ")));
  }
  if (!out.custom_kernel) {
    out.flags.push_back(v1::FLAG_NO_CUSTOM_KERNEL);
    out.flag_evidence.push_back("pure PyTorch: the candidate compiled no kernel of its own");
  }
  cand->Close();
  ref->Close();
  return finish(v1::VERDICT_OK, "");
}

}  // namespace crl
