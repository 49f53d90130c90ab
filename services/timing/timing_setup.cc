#include "services/timing/timing_setup.h"

namespace crl::timing {

void BindTimingOptions(OptionSet* set, TimingOptions* o) {
  set->Add("workers", &o->workers,
           "crl-workers whose lanes are measured: HOST:PORT list, or dns:///NAME:PORT for every address of a "
           "headless Service (each request stays on one worker: the one that built its artifact)");
  set->Add("worker", &o->worker, "one crl-worker HOST:PORT (when --workers is empty)");
  BindClientOptions(set, &o->worker_client, "worker", "the worker");
  set->Add("target_rel_ci", &o->oracle.target_rel_ci,
           "stop when the speedup's 95% CI half-width is below this fraction");
  set->Add("budget_seconds", &o->oracle.budget_seconds, "measuring budget per Time call");
  set->Add("min_pairs", &o->oracle.min_pairs, "pairs before the stopping rule applies");
  set->Add("max_pairs", &o->oracle.max_pairs, "most pairs per measurement");
  set->Add("min_sample_seconds", &o->oracle.min_sample_seconds,
           "time short calls in batches of back-to-back calls lasting at least this long (0: the worker's "
           "default, 0.01 on a GPU, 0.001 on the host; negative: one call per sample)");
  set->Add("max_calls_per_sample", &o->oracle.max_calls_per_sample,
           "most calls in one batched sample (0: the worker's default, 256)");
  set->Add("checked_elements", &o->oracle.checked_elements,
           "elements of each output an output check compares; larger outputs are compared at this many random "
           "positions, the same on both sides (0: the worker's default, 1048576)");
  set->Add("eager_timing", &o->oracle.eager_timing,
           "time GPU calls as launched instead of replaying CUDA graphs of them (KernelBench's convention)");
  set->Add("noise_threshold", &o->oracle.noise_threshold,
           "relative spread (MAD/median) above which a measurement is re-taken, longer");
  set->Add("noise_remeasure_scale", &o->oracle.noise_remeasure_scale,
           "how many times longer (budget and pairs) a noisy measurement is re-taken");
  set->Add("noise_ci_threshold", &o->oracle.noise_ci_threshold,
           "a re-taken measurement still noisy is FLAG_NOISY when the speedup's interval is wider than this "
           "(relative half-width) or its buckets disagree");
  set->Add("jump_speedup", &o->oracle.jump_speedup, "speedups above this are re-measured");
  set->Add("calibrate_host", &o->calibrate_host,
           "measure this machine's memory bandwidth (all cores reading, and a copy; doubled) as the host backend's ceiling");
}

}  // namespace crl::timing
