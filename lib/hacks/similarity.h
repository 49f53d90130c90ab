// Which known hack cases look most like a candidate: the examples a judge is
// shown (docs/hacks.md). Code is compared as sets of 3-token shingles
// (identifiers, numbers and operators; whitespace and comments ignored), so a
// renamed variable moves the score a little and a different algorithm a lot.
#ifndef CRL_LIB_HACKS_SIMILARITY_H_
#define CRL_LIB_HACKS_SIMILARITY_H_

#include <string>
#include <vector>

#include "crl/v1/orchestrator.pb.h"

namespace crl::hacks {

// Jaccard similarity of the two sources' shingles, in [0, 1] (1: the same
// token sequence; two empty sources: 0).
double CodeSimilarity(const std::string& a, const std::string& b);

// Up to `n` of `cases`, most similar to `source` first: code similarity,
// plus 0.25 for the same task. Ties go by case_id, so the choice is
// reproducible.
std::vector<v1::HackCase> MostSimilar(const std::vector<v1::HackCase>& cases, const std::string& source,
                                      const std::string& task_name, int n);

}  // namespace crl::hacks

#endif  // CRL_LIB_HACKS_SIMILARITY_H_
