// What a run did, round by round: the numbers behind a run's report
// (report.h) — verdict mix, rewards, shares verified and faster, speedups,
// best speedup per task, fast_p — computed from the run's stored variants.
// Pure functions over protos (tests/unit/report_test.cc).
#ifndef CRL_LIB_REPORT_SUMMARY_H_
#define CRL_LIB_REPORT_SUMMARY_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "crl/v1/orchestrator.pb.h"

namespace crl::report {

// What became of one candidate, for the verdict mix. Exactly one per
// scored variant; unscored variants are not counted.
enum class Outcome {
  kRejected,       // the parser found no usable answer (never evaluated)
  kCompileError,
  kWrongAnswer,
  kFailed,         // runtime error, timeout, resource limit, sandbox violation
  kFlagged,        // verified, but a trust flag withheld its reward
  kVerified,       // verified, trusted, not faster than the reference
  kFaster,         // verified, trusted, speedup > 1
  kInfra,          // our infrastructure failed: not the model's outcome
};
constexpr int kOutcomes = 8;
const char* OutcomeName(Outcome o);  // "rejected", "compile error", ...
// The same as a metric label: "rejected", "compile_error", ...
const char* OutcomeLabel(Outcome o);
Outcome OutcomeOf(const v1::Variant& v);
// Verified, rewarded and timed with no trust flag: the only speedups counted
// as speedups (faster, best, F, Fast@p). A NOISY result is rewarded at the end
// of its interval nearest 1 but its speedup is not counted.
bool Trusted(const v1::Variant& v);

// The stage index and round of an executor key ("s1/r0/row_sum/3" -> 1, 0);
// false for a key of another shape.
bool KeyStageRound(const std::string& key, int* stage_index, int* round);

struct RoundStats {
  std::string label;  // "keep-successes 1", "contrastive-rl 2"
  std::string stage;
  int stage_index = 0;
  int round = 0;  // 0-based within the stage
  int candidates = 0;
  std::vector<int> outcomes = std::vector<int>(kOutcomes, 0);
  int rewarded = 0;
  double mean_reward = 0;  // over rewarded candidates (0 when none)
  // Over candidates minus infrastructure failures (0 when none).
  double verified_share = 0;  // verified, flagged or not
  double faster_share = 0;    // verified, trusted, faster
  double best_speedup = 0;    // trusted
  std::vector<std::string> policy_versions;  // that sampled this round
};

struct TaskStats {
  std::string task;
  int candidates = 0;
  int verified = 0;
  double best_speedup = 0;  // trusted; 0 when none verified
};

struct RunSummary {
  std::string run_id;
  std::string name;
  std::string state;
  bool training = true;  // false: the spec's training is "none"
  std::vector<RoundStats> rounds;  // in execution order
  std::vector<TaskStats> tasks;    // in the spec's order
  std::vector<double> speedups;    // every trusted verified speedup
  std::map<std::string, double> fast_p;  // "fast_1" -> share of the spec's tasks
  int candidates = 0;
  std::vector<int> outcomes = std::vector<int>(kOutcomes, 0);
  double mean_reward = 0;
};

// The summary of `run` from its variants (any order).
RunSummary Summarize(const v1::Run& run, const std::vector<v1::Variant>& variants);

// summary.json: {"trained": ..., "untrained": ... or null, "rounds": [per
// label: both sides' mean reward, verified and faster shares]}.
nlohmann::json SummaryJson(const RunSummary& trained, const RunSummary* untrained);

// The text summary printed at the end of a run (a few lines per side).
std::string SummaryText(const RunSummary& trained, const RunSummary* untrained);

}  // namespace crl::report

#endif  // CRL_LIB_REPORT_SUMMARY_H_
