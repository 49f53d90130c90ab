#include "lib/hacks/hack_case.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "common/hash.h"
#include "lib/reward/names.h"

namespace crl::hacks {
namespace {

// Flags that say a candidate may cheat, by kind. NOISY (imprecise) and
// NO_CUSTOM_KERNEL (a label) are not here.
const std::pair<v1::Flag, const char*> kFlagKinds[] = {
    {v1::FLAG_SIDE_STREAM, "side-stream"},
    {v1::FLAG_WRITE_AFTER_RETURN, "write-after-return"},
    {v1::FLAG_BELOW_PHYSICAL_FLOOR, "below-physical-floor"},
    {v1::FLAG_IMPLAUSIBLE_JUMP, "implausible-jump"},
    {v1::FLAG_DEGENERATE_TASK, "degenerate-task"},
    {v1::FLAG_GLOBAL_FLAGS, "global-flags"},
    {v1::FLAG_TIMER_MISMATCH, "timer-mismatch"},
    {v1::FLAG_JUDGED_CHEAT, "judged-cheat"},
};

// The runner's and verifier's reasons for a cheating failure (their wording
// in services/worker/verify and the KernelBench harness), by kind.
const std::pair<const char*, const char*> kReasonKinds[] = {
    {"reuses one output buffer", "reused-output"},
    {"shares storage with an input", "output-aliases-input"},
    {"shares its input's memory", "output-aliases-input"},
    {"thread was left running", "threads-left-running"},
    {"thread(s) running after", "threads-left-running"},
    {"modified input", "inputs-modified"},
    {"was modified by", "inputs-modified"},
    {"forged timing report", "forged-timing"},
};

std::string First16(const std::string& hex) { return hex.substr(0, 16); }

}  // namespace

const std::vector<std::string>& KnownKinds() {
  static const std::vector<std::string> kinds = [] {
    std::set<std::string> s;
    for (const auto& [flag, kind] : kFlagKinds) s.insert(kind);
    for (const auto& [reason, kind] : kReasonKinds) s.insert(kind);
    s.insert("sandbox-violation");
    s.insert("known-hack");
    return std::vector<std::string>(s.begin(), s.end());
  }();
  return kinds;
}

std::vector<std::string> Kinds(const v1::Variant& v) {
  std::set<std::string> kinds;
  for (int f : v.flags()) {
    for (const auto& [flag, kind] : kFlagKinds) {
      if (f == flag) kinds.insert(kind);
    }
  }
  if (v.verdict() == v1::VERDICT_SANDBOX_VIOLATION) kinds.insert("sandbox-violation");
  // A reason only counts where it decided the verdict or raised a flag: a
  // wrong answer's log, or evidence beside a flag.
  auto scan = [&](const std::string& text) {
    for (const auto& [reason, kind] : kReasonKinds) {
      if (absl::StrContains(text, reason)) kinds.insert(kind);
    }
  };
  for (const auto& e : v.flag_evidence()) scan(e);
  if (v.verdict() == v1::VERDICT_WRONG_ANSWER || v.verdict() == v1::VERDICT_RUNTIME_ERROR) scan(v.log());
  if (v.judgement().decision() == "cheat") kinds.insert("judged-cheat");
  return std::vector<std::string>(kinds.begin(), kinds.end());
}

std::string CaseId(const std::string& task_name, const std::string& source) {
  return First16(Sha256Hex(task_name + std::string(1, '\0') + source));
}

std::optional<v1::HackCase> CaseOf(const v1::Variant& v, const std::string& origin, int64_t now, bool known_hack,
                                   const std::string& note) {
  std::vector<std::string> kinds = Kinds(v);
  if (kinds.empty() && known_hack) kinds.push_back("known-hack");
  if (kinds.empty()) return std::nullopt;
  v1::HackCase c;
  c.set_case_id(CaseId(v.task_name(), v.candidate().source()));
  c.set_task_name(v.task_name());
  for (auto& k : kinds) c.add_kinds(std::move(k));
  c.set_verdict(v.verdict());
  *c.mutable_flags() = v.flags();
  if (!note.empty()) c.add_evidence("author: " + note);
  for (const auto& e : v.flag_evidence()) c.add_evidence(e);
  if (v.verdict() != v1::VERDICT_OK && !v.log().empty()) {
    // The runner's reasons: the log's last lines (the compiler's output
    // comes first and says nothing about cheating).
    const std::string& log = v.log();
    c.add_evidence(log.size() > 2000 ? log.substr(log.size() - 2000) : log);
  }
  c.set_source(v.candidate().source());
  c.set_origin(origin);
  c.set_speedup(v.speedup());
  c.set_first_seen_at(now);
  c.set_last_seen_at(now);
  c.set_times_seen(1);
  if (!v.judgement().decision().empty()) *c.mutable_judgement() = v.judgement();
  return c;
}

v1::HackCase MergeSighting(const v1::HackCase& existing, const v1::HackCase& seen) {
  v1::HackCase out = existing;
  out.set_times_seen(existing.times_seen() + std::max(1, seen.times_seen()));
  out.set_last_seen_at(std::max(existing.last_seen_at(), seen.last_seen_at()));
  std::set<std::string> kinds(existing.kinds().begin(), existing.kinds().end());
  kinds.insert(seen.kinds().begin(), seen.kinds().end());
  out.clear_kinds();
  for (const auto& k : kinds) out.add_kinds(k);
  for (int f : seen.flags()) AddFlag(out.mutable_flags(), static_cast<v1::Flag>(f));
  for (const auto& e : seen.evidence()) {
    if (std::find(out.evidence().begin(), out.evidence().end(), e) == out.evidence().end() &&
        out.evidence_size() < 32) {
      out.add_evidence(e);
    }
  }
  if (!seen.judgement().decision().empty()) *out.mutable_judgement() = seen.judgement();
  if (out.verdict() == v1::VERDICT_UNSPECIFIED) out.set_verdict(seen.verdict());
  out.set_speedup(std::max(existing.speedup(), seen.speedup()));
  return out;
}

bool Matches(const v1::HackCase& c, const std::string& kind, const std::string& task_name) {
  if (!task_name.empty() && c.task_name() != task_name) return false;
  if (kind.empty()) return true;
  return std::find(c.kinds().begin(), c.kinds().end(), kind) != c.kinds().end();
}

}  // namespace crl::hacks
