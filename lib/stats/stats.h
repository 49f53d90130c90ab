// Robust statistics over timing samples and speedups: pure functions, no I/O,
// no clocks. The worker's measuring loop, the timing oracle and the reports
// all use these (docs/timing.md defines how they combine into a speedup).
#ifndef CRL_LIB_STATS_STATS_H_
#define CRL_LIB_STATS_STATS_H_

#include <cstdint>
#include <vector>

namespace crl::stats {

// Median (mean of the two middle values for an even count); 0 when empty.
double Median(std::vector<double> v);

// True for a finite value above 0 (a measured time or ratio).
bool IsPositiveFinite(double v);

// The finite, positive values of `v`, in order (times and ratios, where 0
// or a negative number means "not measured").
std::vector<double> PositiveFinite(const std::vector<double>& v);

// Arithmetic mean; 0 when empty.
double Mean(const std::vector<double>& v);

// Geometric mean of the positive, finite values (through logs, so long lists of
// large ratios cannot overflow); 0 when there are none.
double GeometricMean(const std::vector<double>& v);

// Mean after dropping the lowest and highest `trim` fraction (0 <= trim < 0.5).
double TrimmedMean(std::vector<double> v, double trim);

// Median absolute deviation from the median.
double Mad(const std::vector<double>& v);

// Relative spread: MAD / median (0 when the median is 0).
double RelativeSpread(const std::vector<double>& v);

// CUDA-L1's bucketed estimate: split the samples (in measurement order) into
// `buckets` contiguous buckets, take each bucket's mean, and return the
// median of those means. `disagreement` receives max(bucket mean) /
// min(bucket mean) - 1, which callers compare with a threshold to reject the
// measurement and take it again.
double BucketedEstimate(const std::vector<double>& v, int buckets, double* disagreement);

// Rounds a speedup toward 1 at `step` (e.g. 0.01): 1.237 -> 1.23, 0.876 -> 0.88.
// Never lets noise below the step count as a gain or a loss.
double RoundTowardOne(double speedup, double step);

struct SpeedupInterval {
  double estimate = 0;  // median(ref) / median(candidate) over all pairs
  double low = 0;       // 2.5th percentile of the bootstrap distribution
  double high = 0;      // 97.5th percentile
  // (high - low) / 2 / estimate.
  double relative_half_width = 0;
};

// Speedup ref/candidate with a 95% percentile-bootstrap CI over PAIRED
// samples (ref[i], candidate[i] were measured back to back, so drift hits
// both; resampling pairs keeps that pairing). `resamples` >= 100;
// deterministic for a given `seed`. Sizes must match and be non-empty.
SpeedupInterval BootstrapSpeedup(const std::vector<double>& ref,
                                 const std::vector<double>& candidate, int resamples,
                                 uint64_t seed);

// The stopping rule of an adaptive, paired measurement: stop once at least
// `min_pairs` pairs were taken and the speedup's bootstrap CI half-width is
// below `target_rel_ci` of the estimate. One definition, applied by the
// worker while it measures.
struct StoppingRule {
  double target_rel_ci = 0.01;
  int min_pairs = 20;
  int resamples = 200;
};
bool ShouldStop(const StoppingRule& rule, const std::vector<double>& ref,
                const std::vector<double>& candidate, uint64_t seed);

struct Interval {
  double low = 0;
  double high = 0;
};

// The 95% Wilson score interval of a share successes / n ({0, 0} when n is 0).
Interval WilsonInterval(int successes, int n);

// Two-sided exact sign test: the probability, under "either side as likely",
// of a split at least as uneven as plus : minus (ties left out). 1 when
// there is nothing to test.
double SignTestP(int plus, int minus);

// A 95% percentile-bootstrap interval for the mean of group means, resampling
// the groups, then the values within each picked group (a two-level design:
// seeds, then tasks). Empty groups are left out; deterministic for `seed`.
Interval HierarchicalBootstrap(const std::vector<std::vector<double>>& groups, int resamples, uint64_t seed);

}  // namespace crl::stats

#endif  // CRL_LIB_STATS_STATS_H_
