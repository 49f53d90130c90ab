// Robust statistics for the timing oracle: pure functions over samples, no
// I/O, no clocks. docs/timing.md defines how they combine into a speedup.
#ifndef CRL_SERVICES_TIMING_STATS_H_
#define CRL_SERVICES_TIMING_STATS_H_

#include <cstdint>
#include <vector>

namespace crl::timing {

// Median (mean of the two middle values for an even count); 0 when empty.
double Median(std::vector<double> v);

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

}  // namespace crl::timing

#endif  // CRL_SERVICES_TIMING_STATS_H_
