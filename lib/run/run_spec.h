// RunSpec: what a researcher submits. The CLI reads it from a YAML or JSON
// file (examples/quick-native.yaml); gRPC clients send the proto. Both go
// through ValidateRunSpec, whose errors name the field ("stages[1].rounds:
// 1 to 100000"). Stage kinds are checked by the orchestrator's stage
// registry when the run is submitted.
//
//   name: quick-native
//   tasks: [tasks/native/row_sum, tasks/kernelbench/level1]   # dirs, .py files, KB folders
//   backend: host
//   policy: embedded               # the sampler's model name
//   stages: [{kind: grpo, rounds: 1}, {kind: contrastive-rl, rounds: 2}]
//   group_size: 4
//   exemplars: {strategy: buckets, count: 2, buckets: 4, temperature: 1.0}
//   sampling: {temperature: 1.0, max_tokens: 512}
//   reward: cuda-l1                 # or speedup-bonus, tiered
//   budget: {seconds: 3600, candidates: 1000}
//   timing_budget_seconds: 2
//   seed: 1
#ifndef CRL_LIB_RUN_RUN_SPEC_H_
#define CRL_LIB_RUN_RUN_SPEC_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "crl/v1/orchestrator.pb.h"

namespace crl::run {

// Parses a YAML (or JSON) run spec. Relative task paths are resolved against
// `base_dir` (LoadRunSpecFile: the spec file's own directory); a directory holding
// task.yaml is a native task, a .py file a KernelBench task, a directory of
// .py files a KernelBench level (each file a task). INVALID_ARGUMENT names
// the file, line and field.
absl::StatusOr<v1::RunSpec> ParseRunSpec(const std::string& text, const std::string& base_dir,
                                         const std::string& file_name = "run spec");
absl::StatusOr<v1::RunSpec> LoadRunSpecFile(const std::string& path);

// Checks a spec however it arrived; INVALID_ARGUMENT names the field.
absl::Status ValidateRunSpec(const v1::RunSpec& spec);

// An sft example as the answer a model is asked for (prompts/*.tmpl: three
// sections, the code in one fenced block of the task's language): what an
// sft stage trains on, and what a sampling token cap must leave room for.
std::string SftAnswer(const v1::SftExample& example, const v1::Task& task, v1::Backend backend);

// The stages a run goes through: spec.stages, or the single stage of v1's
// first form (rounds + training).
std::vector<v1::Stage> EffectiveStages(const v1::RunSpec& spec);

// A state a run never leaves: succeeded, failed or cancelled.
bool RunEnded(v1::RunState state);

}  // namespace crl::run

#endif  // CRL_LIB_RUN_RUN_SPEC_H_
