// A scripted WorkerClientInterface for tests of the worker's clients (the
// timing oracle, the orchestrator): answers come from queues the test fills,
// requests are recorded. No processes, no ports. Thread-safe.
//
//   FakeWorkerClient worker;
//   worker.Push(pair_response);                  // the next MeasurePair answer
//   TimingOracle oracle(options, &worker, &clock);
//   ... oracle.Time(...) ...
//   CHECK(worker.pair_requests().size() == 1);
#ifndef CRL_SERVICES_WORKER_FAKE_WORKER_CLIENT_H_
#define CRL_SERVICES_WORKER_FAKE_WORKER_CLIENT_H_

#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "services/worker/worker_client.h"

namespace crl {

class FakeWorkerClient final : public WorkerClientInterface {
 public:
  // Queues the next answer of a method (a response or an error status). An
  // empty queue answers UNAVAILABLE, like a worker that went away.
  void Push(absl::StatusOr<v1::CompileResponse> r) { Add(&compiles_, std::move(r)); }
  void Push(absl::StatusOr<v1::EvaluateResponse> r) { Add(&evaluations_, std::move(r)); }
  void Push(absl::StatusOr<v1::MeasureResponse> r) { Add(&measures_, std::move(r)); }
  void Push(absl::StatusOr<v1::MeasurePairResponse> r) { Add(&pairs_, std::move(r)); }
  // What GetWorkerInfo answers (an error too: an older worker, one down).
  void SetInfo(absl::StatusOr<v1::WorkerInfo> info) {
    absl::MutexLock lock(&mu_);
    info_ = std::move(info);
  }
  // GetWorkerInfo calls so far.
  int info_calls() const {
    absl::MutexLock lock(&mu_);
    return info_calls_;
  }

  absl::StatusOr<v1::CompileResponse> Compile(const v1::CompileRequest& request,
                                              const RequestContext&) override {
    return Next(&compiles_, &compile_requests_, request);
  }
  absl::StatusOr<v1::EvaluateResponse> Evaluate(const v1::EvaluateRequest& request,
                                                const RequestContext&) override {
    return Next(&evaluations_, &evaluate_requests_, request);
  }
  absl::StatusOr<v1::MeasureResponse> Measure(const v1::MeasureRequest& request,
                                              const RequestContext&) override {
    return Next(&measures_, &measure_requests_, request);
  }
  absl::StatusOr<v1::MeasurePairResponse> MeasurePair(const v1::MeasurePairRequest& request,
                                                      const RequestContext&) override {
    return Next(&pairs_, &pair_requests_, request);
  }
  absl::StatusOr<v1::WorkerInfo> GetWorkerInfo(const RequestContext&) override {
    absl::MutexLock lock(&mu_);
    ++info_calls_;
    return info_;
  }

  // The requests received so far, in order.
  std::vector<v1::EvaluateRequest> evaluate_requests() const { return Copy(evaluate_requests_); }
  std::vector<v1::MeasureRequest> measure_requests() const { return Copy(measure_requests_); }
  std::vector<v1::MeasurePairRequest> pair_requests() const { return Copy(pair_requests_); }

 private:
  template <typename T>
  void Add(std::deque<absl::StatusOr<T>>* queue, absl::StatusOr<T> r) {
    absl::MutexLock lock(&mu_);
    queue->push_back(std::move(r));
  }
  template <typename T, typename Req>
  absl::StatusOr<T> Next(std::deque<absl::StatusOr<T>>* queue, std::vector<Req>* seen,
                         const Req& request) {
    absl::MutexLock lock(&mu_);
    seen->push_back(request);
    if (queue->empty()) return absl::UnavailableError("fake worker: no scripted answer left");
    absl::StatusOr<T> r = std::move(queue->front());
    queue->pop_front();
    return r;
  }
  template <typename Req>
  std::vector<Req> Copy(const std::vector<Req>& v) const {
    absl::MutexLock lock(&mu_);
    return v;
  }

  mutable absl::Mutex mu_;
  std::deque<absl::StatusOr<v1::CompileResponse>> compiles_ ABSL_GUARDED_BY(mu_);
  std::deque<absl::StatusOr<v1::EvaluateResponse>> evaluations_ ABSL_GUARDED_BY(mu_);
  std::deque<absl::StatusOr<v1::MeasureResponse>> measures_ ABSL_GUARDED_BY(mu_);
  std::deque<absl::StatusOr<v1::MeasurePairResponse>> pairs_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::CompileRequest> compile_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::EvaluateRequest> evaluate_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::MeasureRequest> measure_requests_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::MeasurePairRequest> pair_requests_ ABSL_GUARDED_BY(mu_);
  absl::StatusOr<v1::WorkerInfo> info_ ABSL_GUARDED_BY(mu_) = v1::WorkerInfo();
  int info_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace crl

#endif  // CRL_SERVICES_WORKER_FAKE_WORKER_CLIENT_H_
