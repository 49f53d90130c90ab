#include "services/orchestrator/program_share.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace crl::orchestrator {

ProgramShare::Lead& ProgramShare::Lead::operator=(Lead&& other) noexcept {
  if (this != &other) {
    Abandon();
    share_ = std::exchange(other.share_, nullptr);
    key_ = std::move(other.key_);
  }
  return *this;
}

void ProgramShare::Lead::Publish(const v1::Variant& scored) {
  if (share_ == nullptr) return;
  const bool has_verdict = scored.scored() && !scored.infra_failure() && scored.verdict() != v1::VERDICT_UNSPECIFIED;
  std::exchange(share_, nullptr)->Finish(key_, has_verdict ? &scored : nullptr);
}

void ProgramShare::Lead::Abandon() {
  if (share_ != nullptr) std::exchange(share_, nullptr)->Finish(key_, nullptr);
}

std::string ProgramShare::KeyOf(const std::string& task, const v1::Candidate& candidate) {
  // Lengths first, so no field can run into the next.
  return absl::StrCat(candidate.backend(), ":", task.size(), ":", task, candidate.filename().size(), ":",
                      candidate.filename(), candidate.source());
}

absl::StatusOr<ProgramShare::Joined> ProgramShare::Join(const std::string& key, const RequestContext& context) {
  absl::MutexLock lock(&mu_);
  Entry* e = &entries_[key];
  auto settled = [](Entry* x) { return x->scored.has_value() || !x->leading; };
  for (;;) {
    if (e->scored) {
      ++shared_;
      return Joined{e->scored, Lead()};
    }
    if (!e->leading) {
      e->leading = true;
      return Joined{std::nullopt, Lead(this, key)};
    }
    // The context's end is not signalled here: look at it every 100 ms.
    if (absl::Status s = context.Check(); !s.ok()) return s;
    mu_.AwaitWithTimeout(absl::Condition(+settled, e), std::min(absl::Milliseconds(100), context.Remaining()));
  }
}

void ProgramShare::Finish(const std::string& key, const v1::Variant* scored) {
  absl::MutexLock lock(&mu_);
  Entry& e = entries_[key];
  e.leading = false;
  if (scored != nullptr) e.scored = *scored;
}

int ProgramShare::shared() const {
  absl::MutexLock lock(&mu_);
  return shared_;
}

void TakeScoring(const v1::Variant& measured, v1::Variant* copy) {
  copy->set_verdict(measured.verdict());
  copy->set_speedup(measured.speedup());
  copy->set_speedup_ci_low(measured.speedup_ci_low());
  copy->set_speedup_ci_high(measured.speedup_ci_high());
  *copy->mutable_flags() = measured.flags();
  *copy->mutable_flag_evidence() = measured.flag_evidence();
  copy->set_log(absl::StrCat("the same program as ", measured.key(),
                             ": a group's copies of one program are evaluated and timed once\n", measured.log()));
}

}  // namespace crl::orchestrator
