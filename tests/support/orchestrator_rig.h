// The orchestrator over fakes, shared by its unit tests: a spec of one
// native task, scripted parse / evaluate / time answers, two workers (w1,
// w2) of one slot each, the in-memory store and a clock that stands still.
#ifndef CRL_TESTS_SUPPORT_ORCHESTRATOR_RIG_H_
#define CRL_TESTS_SUPPORT_ORCHESTRATOR_RIG_H_

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "services/orchestrator/fake_store.h"
#include "services/orchestrator/scorer.h"
#include "services/orchestrator/worker_pool.h"
#include "services/prompt/fake_prompt_client.h"
#include "services/sampler/fake_sampler_client.h"
#include "services/timing/fake_timing_client.h"
#include "services/trainer/fake_trainer_client.h"
#include "services/worker/fake_worker_client.h"

namespace crl::orchestrator {

inline v1::RunSpec Spec(const std::string& stage, int rounds, int group) {
  v1::RunSpec s;
  auto* t = s.add_tasks();
  t->set_path("/tasks/row_sum");
  t->set_name("row_sum");
  t->set_format(v1::TASK_FORMAT_NATIVE);
  s.set_backend(v1::BACKEND_HOST);
  auto* st = s.add_stages();
  st->set_kind(stage);
  st->set_rounds(rounds);
  s.set_group_size(group);
  s.set_max_infra_attempts(2);
  return s;
}

inline v1::ParseCompletionResponse Parsed(const std::string& code) {
  v1::ParseCompletionResponse p;
  p.mutable_candidate()->set_source(code);
  p.mutable_candidate()->set_filename("candidate.cc");
  p.set_analysis("because");
  return p;
}

inline v1::ParseCompletionResponse Rejected() {
  v1::ParseCompletionResponse p;
  p.set_error(v1::PARSE_ERROR_NO_CODE_BLOCK);
  p.set_error_detail("no code block");
  return p;
}

inline v1::EvaluateResponse Verdict(v1::Verdict v) {
  v1::EvaluateResponse r;
  r.set_verdict(v);
  r.set_artifact_id("a1");
  return r;
}

inline v1::TimeResponse Timed(double speedup, std::vector<v1::Flag> flags = {}) {
  v1::TimeResponse t;
  t.set_verdict(v1::VERDICT_OK);
  t.set_speedup(speedup);
  for (auto f : flags) t.add_flags(f);
  return t;
}

struct Rig {
  std::unique_ptr<FakeStore> store = std::make_unique<FakeStore>();
  FakePromptClient prompt;
  FakeSamplerClient sampler;
  FakeWorkerClient w1, w2;
  FakeTimingClient timing;
  FakeTrainerClient trainer;
  FakeClock clock;
  std::unique_ptr<WorkerPool> pool;

  Rig() {
    pool = std::make_unique<WorkerPool>(std::vector<PooledWorker>{{"w1", &w1}, {"w2", &w2}}, 1, &clock);
  }
  Services services() { return {&prompt, &sampler, pool.get(), &timing, &trainer}; }
  v1::Run NewRun(const v1::RunSpec& spec) {
    v1::Run r;
    r.set_run_id("run-1");
    *r.mutable_spec() = spec;
    r.set_state(v1::RUN_STATE_QUEUED);
    r.set_created_at(absl::ToUnixSeconds(clock.Now()));
    bool created = false;
    REQUIRE(store->CreateRun(r, &created).ok());
    return r;
  }
};

}  // namespace crl::orchestrator

#endif  // CRL_TESTS_SUPPORT_ORCHESTRATOR_RIG_H_
