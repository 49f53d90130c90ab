// The engine over fakes (fake_task_format.h), shared by the unit tests of
// EvalEngine's decisions: one lane, secret seeds 1, 2, 3, ...
#ifndef CRL_TESTS_SUPPORT_ENGINE_RIG_H_
#define CRL_TESTS_SUPPORT_ENGINE_RIG_H_

#include <prometheus/registry.h>

#include <memory>
#include <string>
#include <vector>

#include "services/worker/eval_engine.h"
#include "services/worker/formats/fake_task_format.h"
#include "tests/support/wait.h"

namespace crl {

// Runs an engine over fakes: one host lane by default, seeds 1, 2, 3, ...
struct Rig {
  explicit Rig(FakeTaskSpec spec = {}, std::vector<Lane> lane_list = {{BackendKind::kHost, 0, "host:0"}},
               LanePoolOptions lane_options = {}, EngineOptions options = {})
      : lanes(std::move(lane_list), lane_options), format(&clock) {
    format.set_spec(spec);
    options.compile_slots = 2;
    engine = std::make_unique<EvalEngine>(options, &compiler, &lanes,
                                          TaskFormats{&format, &format}, &metrics, &clock,
                                          [n = uint64_t{0}]() mutable { return ++n; });
  }

  absl::StatusOr<v1::EvaluateResponse> Evaluate(const std::string& source,
                                                const RequestContext& context =
                                                    RequestContext::Background()) {
    return engine->Evaluate(Request(source), context);
  }
  static v1::EvaluateRequest Request(const std::string& source) {
    v1::EvaluateRequest r;
    r.mutable_task()->set_path("task");
    r.mutable_candidate()->set_source(source);
    return r;
  }
  double Evaluations(const std::string& verdict) {
    return metrics.evaluations.Add({{"verdict", verdict}}).Value();
  }

  FakeClock clock;
  FakeCompiler compiler;
  LanePool lanes;
  FakeTaskFormat format;
  prometheus::Registry registry;
  WorkerMetrics metrics{&registry};
  std::unique_ptr<EvalEngine> engine;
};

// A rig of one GPU lane ("cuda:0") with two verification slots, over a
// task that runs on CUDA; its requests ask for that backend.
struct CudaRig : Rig {
  explicit CudaRig(EngineOptions options = {})
      : Rig(CudaSpec(), {{BackendKind::kCuda, 0, "cuda:0"}}, TwoSlots(), options) {}
  static FakeTaskSpec CudaSpec() {
    FakeTaskSpec spec;
    spec.cuda = true;
    return spec;
  }
  static LanePoolOptions TwoSlots() {
    LanePoolOptions o;
    o.verify_slots_per_gpu = 2;
    return o;
  }
  static v1::EvaluateRequest Request(const std::string& source, double keep_for_timing_seconds = 0) {
    v1::EvaluateRequest r = Rig::Request(source);
    r.mutable_candidate()->set_backend(v1::BACKEND_CUDA);
    r.set_keep_for_timing_seconds(keep_for_timing_seconds);
    return r;
  }
};

using testing::Eventually;

// Five timed pairs of the task's candidate `artifact` on the GPU.
inline v1::MeasurePairRequest FivePairs(const std::string& artifact) {
  v1::MeasurePairRequest m;
  m.mutable_task()->set_path("task");
  m.set_backend(v1::BACKEND_CUDA);
  m.set_candidate_artifact_id(artifact);
  m.set_min_pairs(5);
  m.set_max_pairs(5);
  return m;
}

}  // namespace crl

#endif  // CRL_TESTS_SUPPORT_ENGINE_RIG_H_
