// Whether training helped, measured: a trained run against its untrained
// twin (the same spec with `training: none`, the same starting policy and
// seed), per round and over seeds. Pure functions over stored variants
// (tests/unit/learning_test.cc); `crl quickstart --seeds N` and the run
// report use them. docs/benchmarks.md, "Learning", says how to read them.
//
//   F          share of a round's samples that verified with a trusted
//              speedup > 1 (no trust flag; infrastructure failures are not
//              samples: they are the cluster's, not the model's)
//   Fast@p     the same with speedup > p, each task weighted equally
//              (Dr. Kernel's Fast@1, Fast@1.2)
//   p(fast)    the policy's probability of the fast answer where a task has
//              a known slow and fast answer (an sft run's examples, fast and
//              slow by their measured speedups): at the first token where the
//              two answers part, read from each sample's stored
//              log-probability of the token it took
//   Δ          F_trained − F_twin over the evaluation rounds, per seed, then
//              the mean over seeds; its 95% CI resamples seeds, then tasks
//              within each seed (a percentile bootstrap); a paired sign test
//              over coupled samples (the same seed and key on both sides).
#ifndef CRL_LIB_REPORT_LEARNING_H_
#define CRL_LIB_REPORT_LEARNING_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "crl/v1/orchestrator.pb.h"

namespace crl::report {

// One side's samples of one round.
struct SideRound {
  int samples = 0;   // scored, not infrastructure failures
  int parsed = 0;    // the completion held a candidate (parsed)
  int verified = 0;  // verified, trusted or not
  int fast = 0;      // verified, trusted, speedup > 1
  int withheld = 0;  // verified, a trust flag withheld the reward
  int own_kernel = 0;  // verified, not flagged NO_CUSTOM_KERNEL (a kernel of its own)
  int rewarded = 0;
  double reward_sum = 0;
  double fast_at_1 = 0, fast_at_1_2 = 0;  // task-weighted
  // Trust flags among the round's samples, by short name ("NOISY": 3).
  std::map<std::string, int> flags;
  // Mean p(fast) over samples on a known branch; negative when none is.
  double p_fast = -1;
  int p_fast_samples = 0;

  double F() const { return samples > 0 ? static_cast<double>(fast) / samples : 0; }
  double parsed_share() const { return samples > 0 ? static_cast<double>(parsed) / samples : 0; }
  double verified_share() const { return samples > 0 ? static_cast<double>(verified) / samples : 0; }
  double mean_reward() const { return rewarded > 0 ? reward_sum / rewarded : 0; }
  // 95% Wilson interval of F.
  double F_low() const;
  double F_high() const;
};

struct RoundPair {
  std::string label;  // "contrastive-rl 2"
  int stage_index = 0;
  int round = 0;  // 0-based within its stage
  SideRound trained, twin;
  // Samples present on both sides under the same key, and how many of them
  // are the same completion (all of them in an A/A round: round 1 of the
  // first sampled stage, before any training).
  int coupled = 0;
  int identical = 0;
  bool evaluation = false;  // counts toward Δ
};

// A trained run and its twin (variants of both, any order).
struct SeedRuns {
  uint64_t seed = 0;
  std::vector<v1::Variant> trained;
  std::vector<v1::Variant> twin;
};

// Per task, the code of its known slow and fast answers (for p(fast)).
struct KnownAnswers {
  std::string slow, fast;
};

struct LearningOptions {
  // The last this many sampled rounds are the evaluation rounds (0: the
  // later half of the sampled rounds, at least one).
  int evaluation_rounds = 0;
  int bootstrap_resamples = 10000;
  uint64_t bootstrap_seed = 1;
};

struct SeedComparison {
  uint64_t seed = 0;
  std::vector<RoundPair> rounds;  // the sampled rounds (sft epochs are not samples)
  double delta = 0;               // task-weighted F difference over evaluation rounds
  double verified_gap = 0;        // trained minus twin verified share there
};

struct LearningSummary {
  std::vector<SeedComparison> seeds;
  double delta = 0;  // mean over seeds
  double ci_low = 0, ci_high = 0;
  // Coupled evaluation samples fast on the trained side only / the twin only.
  int sign_plus = 0, sign_minus = 0;
  double sign_p = 1;  // two-sided exact binomial
  double verified_gap = 0;  // mean over seeds, in shares (0.1 = ten points)
};

// Per task, the fast and slow answer: the sft run's verified round-0
// examples with the highest and lowest trusted speedup (tasks with fewer
// than two are left out).
std::map<std::string, KnownAnswers> KnownAnswersFrom(const std::vector<v1::Variant>& sft_variants);

// The rounds of one pair of runs, side by side.
SeedComparison CompareSeed(const SeedRuns& runs, const std::map<std::string, KnownAnswers>& answers,
                           const LearningOptions& options);
// Over seeds: Δ with its bootstrap CI, the sign test, the verified gap.
LearningSummary CompareSeeds(const std::vector<SeedRuns>& seeds, const std::map<std::string, KnownAnswers>& answers,
                             const LearningOptions& options);

// Every sampled variant of some runs as one side, rounds pooled: held-out
// tasks, which a trained policy and its twin sample once without training.
SideRound PooledSamples(const std::vector<v1::Variant>& variants);
// One line per side (parsed, verified, F, Fast@1, own kernels among the
// verified); and the same as JSON.
std::string HeldOutText(const SideRound& trained, const SideRound& twin);
nlohmann::json HeldOutJson(const SideRound& trained, const SideRound& twin);

nlohmann::json LearningJson(const LearningSummary& summary);
// A table per round (F, parsed, verified, mean reward, p(fast), flags, both
// sides)
// and the verdict lines.
std::string LearningText(const LearningSummary& summary, const std::string& title);

}  // namespace crl::report

#endif  // CRL_LIB_REPORT_LEARNING_H_
