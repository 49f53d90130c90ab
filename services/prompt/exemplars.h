// Exemplar selection for contrastive prompts: which earlier variants of a task
// the model sees, with their measured speedups. Pure and deterministic for a
// seed; no I/O.
//
// Rules, whatever the strategy:
//  * only verified variants (VERDICT_OK with code) are eligible;
//  * variants with the same normalised code (comments and whitespace
//    removed) count once: the best-scoring copy stays;
//  * a variant's score is its speedup when that speedup is trusted (measured,
//    positive, no trust flag); a flagged variant scores at most 1 (never
//    fast) and an untimed one scores 1;
//  * unless disabled, when the pool holds a trusted variant faster than the
//    reference, at least one such variant is shown;
//  * exemplars are shown slowest first, so the fast ones come last.
#ifndef CRL_SERVICES_PROMPT_EXEMPLARS_H_
#define CRL_SERVICES_PROMPT_EXEMPLARS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "crl/v1/prompt.pb.h"

namespace crl::prompt {

// Most exemplars one prompt shows.
inline constexpr int kMaxExemplars = 8;
// Largest pool a request may carry.
inline constexpr int kMaxPool = 64;

// The selection parameters with defaults filled in (see ExemplarSelection in
// prompt.proto): buckets 4, temperature 1, K 2.
struct SelectionParams {
  v1::ExemplarStrategy strategy = v1::EXEMPLAR_STRATEGY_BUCKETS;
  int num_exemplars = 2;
  int num_buckets = 4;
  double temperature = 1.0;
  bool fast_guarantee = true;
  bool trusted_only = false;
};
SelectionParams ParamsFrom(const v1::ExemplarSelection& selection, int legacy_num_exemplars);

// The trusted speedup of a variant, or 0 when it has none (untimed, not
// positive, or a trust flag raised).
double TrustedSpeedup(const v1::Exemplar& exemplar);
// The score a variant is bucketed and ranked by (see above).
double Score(const v1::Exemplar& exemplar);
// Code with comments (// /* */, and # lines that are not preprocessor
// directives) and all whitespace removed: equal for copies that differ only
// in comments and layout.
std::string NormalizedCode(const std::string& source);

struct Selection {
  // Indices into the pool, in the order to show them.
  std::vector<int> chosen;
  // The buckets (bucket strategy): member indices and probability each.
  std::vector<std::vector<int>> buckets;
  std::vector<double> bucket_probabilities;
  // One line per decision worth knowing.
  std::vector<std::string> notes;
};

// Chooses exemplars from `pool` (callers bound it at kMaxPool).
Selection SelectExemplars(const std::vector<v1::Exemplar>& pool, const SelectionParams& params,
                          uint64_t seed);

}  // namespace crl::prompt

#endif  // CRL_SERVICES_PROMPT_EXEMPLARS_H_
