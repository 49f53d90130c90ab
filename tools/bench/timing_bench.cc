// crl-bench-timing: the timing oracle's own cost per measurement (statistics,
// bootstrap, trust checks), on synthetic samples from an in-memory worker,
// so no process or GPU time is included. docs/benchmarks.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "common/clock.h"
#include "services/timing/oracle.h"

namespace {

class SyntheticWorker final : public crl::WorkerClientInterface {
 public:
  explicit SyntheticWorker(int pairs) : pairs_(pairs) {}
  absl::StatusOr<crl::v1::CompileResponse> Compile(const crl::v1::CompileRequest&,
                                                   const crl::RequestContext&) override {
    return absl::UnimplementedError("unused");
  }
  absl::StatusOr<crl::v1::EvaluateResponse> Evaluate(const crl::v1::EvaluateRequest&,
                                                     const crl::RequestContext&) override {
    return absl::UnimplementedError("unused");
  }
  absl::StatusOr<crl::v1::MeasureResponse> Measure(const crl::v1::MeasureRequest&,
                                                   const crl::RequestContext&) override {
    return absl::UnimplementedError("unused");
  }
  absl::StatusOr<crl::v1::WorkerInfo> GetWorkerInfo(const crl::RequestContext&) override {
    return absl::UnimplementedError("unused");
  }
  absl::StatusOr<crl::v1::MeasurePairResponse> MeasurePair(
      const crl::v1::MeasurePairRequest&, const crl::RequestContext&) override {
    std::lognormal_distribution<double> noise(0, 0.02);
    crl::v1::MeasurePairResponse m;
    m.set_verdict(crl::v1::VERDICT_OK);
    m.set_lane("cuda:0");
    m.set_backend(crl::v1::BACKEND_CUDA);
    m.set_device_name("synthetic");
    m.set_converged(true);
    for (int i = 0; i < pairs_; ++i) {
      for (auto [t, samples, outs] :
           {std::tuple{1e-3, m.mutable_reference_samples(), m.mutable_reference_outside_seconds()},
            std::tuple{0.5e-3, m.mutable_candidate_samples(),
                       m.mutable_candidate_outside_seconds()}}) {
        double v = t * noise(rng_);
        auto* s = samples->Add();
        s->set_device_sync_seconds(v);
        s->set_stream_event_seconds(v);
        s->set_host_seconds(v);
        outs->Add(v + 1e-4);
      }
    }
    return m;
  }

 private:
  int pairs_;
  std::mt19937_64 rng_{1};
};

}  // namespace

int main() {
  std::printf("timing oracle cost per Time() on synthetic samples (no processes, no GPU)\n");
  for (int pairs : {20, 100, 400}) {
    SyntheticWorker worker(pairs);
    crl::timing::TimingOracle oracle({}, &worker, crl::RealClock::Get());
    crl::v1::TimeRequest req;
    req.mutable_task()->set_path("synthetic");
    req.set_artifact_id(std::string(64, 'a'));
    std::vector<double> ms;
    for (int i = 0; i < 30; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = oracle.Time(req, crl::RequestContext::Background());
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                       .count());
      if (!r.ok()) return 1;
    }
    std::sort(ms.begin(), ms.end());
    std::printf("  %4d pairs: p50 %.2f ms  p95 %.2f ms\n", pairs, ms[ms.size() / 2],
                ms[ms.size() * 95 / 100]);
  }
  return 0;
}
