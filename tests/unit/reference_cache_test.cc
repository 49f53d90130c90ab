// The reference cache (services/worker/verify/reference_cache.h) on its own, and in
// the engine over fakes: a later verification of a task replays the recorded
// seeds against the recorded reference answers and starts only the
// candidate, without judging it any less strictly.
#include <catch2/catch.hpp>

#include "services/worker/verify/reference_cache.h"
#include "tests/support/engine_rig.h"

namespace crl {
namespace {

std::shared_ptr<ReferenceRecord> RecordOf(int64_t bytes, bool probes = false) {
  auto r = std::make_shared<ReferenceRecord>();
  r->seeds = {7};
  ReferenceRecord::Trial t;
  t.seed = 7;
  t.result.outputs.push_back({{"y", CRL_FLOAT32, {bytes / 4}}, std::string(bytes, 'x')});
  r->trials[0] = t;
  r->bytes = bytes;
  r->probes = probes;
  return r;
}

// A fake task's reference side on a host lane.
std::unique_ptr<SessionInterface> StartReference(FakeTaskFormat& format, const FakeEvalTask& task,
                                                 const RequestContext& context) {
  RunnerEvent started;
  return format.Start(task, {Side::kReference, "", 10}, {BackendKind::kHost, 0, "host:0"}, context, &started);
}

TEST_CASE("the reference cache keeps records by key, least recently used first out", "[reference_cache]") {
  FakeClock clock;
  ReferenceCacheOptions options;
  options.max_bytes = 100;
  ReferenceCache cache(options, &clock);
  CHECK(cache.enabled());
  CHECK(cache.Lookup("a", false) == nullptr);

  CHECK(cache.Insert("a", RecordOf(40)));
  CHECK(cache.Insert("b", RecordOf(40)));
  REQUIRE(cache.Lookup("a", false) != nullptr);  // a is now the most recent
  CHECK(cache.Insert("c", RecordOf(40)));        // room is made by dropping b
  CHECK(cache.Lookup("b", false) == nullptr);
  CHECK(cache.Lookup("a", false) != nullptr);
  CHECK(cache.Lookup("c", false) != nullptr);

  // More than half the budget is never kept (it would empty the cache).
  CHECK_FALSE(cache.Insert("big", RecordOf(51)));
  // A record without probes does not serve a verification that needs them.
  CHECK(cache.Lookup("c", true) == nullptr);
  CHECK(cache.Insert("c", RecordOf(40, true)));
  CHECK(cache.Lookup("c", true) != nullptr);

  const ReferenceCache::Stats s = cache.stats();
  CHECK(s.entries == 2);
  CHECK(s.bytes == 80);
  CHECK(s.evicted == 1);
  CHECK(s.too_large == 1);
  CHECK(s.hits == 4);
  CHECK(s.misses == 3);

  ReferenceCacheOptions off;
  off.max_bytes = 0;
  ReferenceCache disabled(off, &clock);
  CHECK_FALSE(disabled.enabled());
  CHECK_FALSE(disabled.Insert("a", RecordOf(4)));
  CHECK(disabled.Lookup("a", false) == nullptr);
}

TEST_CASE("a record serves max_uses verifications and lives max_age, then seeds are drawn afresh",
          "[reference_cache]") {
  FakeClock clock;
  ReferenceCacheOptions options;
  options.max_uses = 2;
  options.max_age = absl::Minutes(10);
  ReferenceCache cache(options, &clock);
  REQUIRE(cache.Insert("k", RecordOf(8)));
  // Holds() looks without using: the two uses are still there after it.
  CHECK(cache.Holds("k", false));
  CHECK_FALSE(cache.Holds("k", true));  // recorded without probes
  CHECK_FALSE(cache.Holds("other", false));
  CHECK(cache.Lookup("k", false) != nullptr);
  CHECK(cache.Lookup("k", false) != nullptr);
  CHECK_FALSE(cache.Holds("k", false));
  CHECK(cache.Lookup("k", false) == nullptr);  // used up
  CHECK(cache.stats().retired == 1);
  CHECK(cache.stats().entries == 0);

  REQUIRE(cache.Insert("k", RecordOf(8)));
  clock.Advance(absl::Minutes(10));
  CHECK_FALSE(cache.Holds("k", false));
  CHECK(cache.Lookup("k", false) == nullptr);  // too old
  CHECK(cache.stats().retired == 2);
}

TEST_CASE("keys separate task content, lane, reference artifact and trial count", "[reference_cache]") {
  const std::string k = ReferenceCache::Key("task", "cuda:0", "ref.so", 5);
  CHECK(k != ReferenceCache::Key("task", "cuda:1", "ref.so", 5));
  CHECK(k != ReferenceCache::Key("task", "cuda:0", "ref2.so", 5));
  CHECK(k != ReferenceCache::Key("task", "cuda:0", "ref.so", 6));
  CHECK(k != ReferenceCache::Key("other", "cuda:0", "ref.so", 5));
  // No separator trick joins two fields into another pair.
  CHECK(ReferenceCache::Key("a|1:b", "c", "", 1) != ReferenceCache::Key("a", "b|1:c", "", 1));
}

TEST_CASE("a recording is complete only when the reference answered every trial; a replay answers the "
          "recorded trials and nothing else", "[reference_cache]") {
  FakeClock clock;
  FakeTaskFormat format(&clock);
  FakeEvalTask task("t", {});
  RequestContext context;
  auto reference = StartReference(format, task, context);
  REQUIRE(reference);

  RecordingReferenceSession recording(reference.get(), int64_t{1} << 20);
  uint64_t n = 100;
  SeedSource seeds = recording.RecordSeeds([&] { return ++n; });
  const std::vector<TrialRequest> plan = task.PlanTrials(3, seeds);
  REQUIRE(plan.size() == 3);
  for (size_t i = 0; i < 2; ++i) {
    TrialResult r;
    REQUIRE(recording.Trial(plan[i], 1, &r).ok);
  }
  CHECK(recording.Complete(plan.size(), false) == nullptr);  // one trial short
  TrialResult last;
  REQUIRE(recording.Trial(plan[2], 1, &last).ok);
  std::shared_ptr<const ReferenceRecord> record = recording.Complete(plan.size(), false);
  REQUIRE(record);
  CHECK(record->seeds == std::vector<uint64_t>{101, 102, 103});
  CHECK(record->bytes == 3 * 16);

  CachedReferenceSession cached(record);
  const std::vector<TrialRequest> replayed = task.PlanTrials(3, cached.ReplaySeeds([] { return uint64_t{999}; }));
  REQUIRE(replayed.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(replayed[i].seed == plan[i].seed);
    TrialResult r;
    REQUIRE(cached.Trial(replayed[i], 1, &r).ok);
    CHECK(r.outputs[0].data == FakeSession::Expected(task, plan[i].seed)[0].data);
  }
  TrialRequest other = replayed[1];
  other.seed = 5;
  TrialResult r;
  RunnerEvent e = cached.Trial(other, 1, &r);
  CHECK_FALSE(e.ok);
  CHECK(e.verdict == v1::VERDICT_INFRA_ERROR);
  CHECK_THAT(e.message, Catch::Contains("no recorded answer for trial 2"));
  TimedResult timed;
  CHECK(cached.Timed({}, 1, &timed).verdict == v1::VERDICT_INFRA_ERROR);

  // A reference that failed a trial is never recorded.
  FakeTaskSpec broken;
  broken.reference = "crash";
  FakeEvalTask bad("bad", broken);
  auto crashing = StartReference(format, bad, context);
  RecordingReferenceSession failed(crashing.get(), int64_t{1} << 20);
  const std::vector<TrialRequest> one = bad.PlanTrials(1, failed.RecordSeeds([] { return uint64_t{1}; }));
  CHECK_FALSE(failed.Trial(one[0], 1, &r).ok);
  CHECK(failed.Complete(1, false) == nullptr);
}

TEST_CASE("a recording stops copying answers past its byte limit and is never complete", "[reference_cache]") {
  FakeClock clock;
  FakeTaskFormat format(&clock);
  FakeEvalTask task("t", {});
  RequestContext context;
  auto reference = StartReference(format, task, context);
  RecordingReferenceSession recording(reference.get(), 40);  // two 16-byte answers fit, three do not
  const std::vector<TrialRequest> plan = task.PlanTrials(3, recording.RecordSeeds([] { return uint64_t{7}; }));
  for (const TrialRequest& trial : plan) {
    TrialResult r;
    REQUIRE(recording.Trial(trial, 1, &r).ok);  // the reference's answers still pass through
    CHECK(r.outputs.size() == 1);
  }
  CHECK(recording.Complete(plan.size(), false) == nullptr);
}

TEST_CASE("a task's second verification replays its seeds against the recorded reference and starts only "
          "the candidate", "[reference_cache][engine]") {
  Rig rig;
  auto first = rig.Evaluate("correct");
  REQUIRE(first.ok());
  CHECK(first->verdict() == v1::VERDICT_OK);
  CHECK_FALSE(first->reference_cached());
  CHECK(rig.format.reference_starts() == 1);
  CHECK(rig.engine->ReferenceCacheStats().entries == 1);

  const int starts = rig.format.starts();
  auto second = rig.Evaluate("fast");
  REQUIRE(second.ok());
  CHECK(second->verdict() == v1::VERDICT_OK);
  CHECK(second->reference_cached());
  CHECK(second->correctness().trials_passed() == 5);
  CHECK(rig.format.starts() - starts == 1);  // the candidate alone
  CHECK(rig.format.reference_starts() == 1);
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);

  // Judged as strictly: wrong outputs, mutated inputs, races and reused
  // buffers still fail against the recorded answers.
  for (const char* bad : {"wrong", "violate", "racy", "reuse", "crash"}) {
    auto r = rig.Evaluate(bad);
    REQUIRE(r.ok());
    CHECK(r->reference_cached());
    CHECK(r->verdict() != v1::VERDICT_OK);
  }
  CHECK(rig.format.reference_starts() == 1);
  CHECK(rig.metrics.reference_cache.Add({{"result", "hit"}}).Value() == 6);
  CHECK(rig.metrics.reference_cache.Add({{"result", "miss"}}).Value() == 1);

  // Another trial count is another plan: recorded afresh.
  v1::EvaluateRequest more = Rig::Request("correct");
  more.mutable_options()->set_trials(6);
  auto r = rig.engine->Evaluate(more, RequestContext::Background());
  REQUIRE(r.ok());
  CHECK_FALSE(r->reference_cached());
  CHECK(rig.format.reference_starts() == 2);
}

TEST_CASE("an incomplete verification records nothing; with the cache off the reference always runs",
          "[reference_cache][engine]") {
  Rig rig;
  auto wrong = rig.Evaluate("wrong");  // fails at trial 1: four trials never asked of the reference
  REQUIRE(wrong.ok());
  CHECK(wrong->verdict() == v1::VERDICT_WRONG_ANSWER);
  auto next = rig.Evaluate("correct");
  REQUIRE(next.ok());
  CHECK_FALSE(next->reference_cached());
  CHECK(rig.format.reference_starts() == 2);

  EngineOptions off;
  off.reference_cache.max_bytes = 0;
  Rig uncached({}, {{BackendKind::kHost, 0, "host:0"}}, {}, off);
  for (int i = 0; i < 2; ++i) {
    auto r = uncached.Evaluate("correct");
    REQUIRE(r.ok());
    CHECK(r->verdict() == v1::VERDICT_OK);
    CHECK_FALSE(r->reference_cached());
  }
  CHECK(uncached.format.reference_starts() == 2);
  CHECK(uncached.metrics.reference_cache.Add({{"result", "hit"}}).Value() == 0);

  EngineOptions twice;
  twice.reference_cache.max_uses = 2;
  Rig rotating({}, {{BackendKind::kHost, 0, "host:0"}}, {}, twice);
  for (int i = 0; i < 4; ++i) REQUIRE(rotating.Evaluate("correct")->verdict() == v1::VERDICT_OK);
  CHECK(rotating.format.reference_starts() == 2);  // recorded, used twice, recorded again
}

TEST_CASE("a candidate verified against the cache and kept for GPU timing keeps a reference started beside it, "
          "which it never calls; its measurement starts nothing", "[reference_cache][engine]") {
  FakeTaskSpec spec;
  spec.cuda = true;
  Rig rig(spec, {{BackendKind::kCuda, 0, "cuda:0"}});
  rig.format.set_readies(true);
  auto verify = [&](const std::string& behaviour, double keep) {
    v1::EvaluateRequest request = Rig::Request(behaviour);
    request.mutable_candidate()->set_backend(v1::BACKEND_CUDA);
    request.set_keep_for_timing_seconds(keep);
    auto r = rig.engine->Evaluate(request, RequestContext::Background());
    REQUIRE(r.ok());
    return *r;
  };
  v1::EvaluateResponse first = verify("correct", 10);
  REQUIRE(first.kept_pair().size() > 0);
  v1::MeasurePairRequest m = FivePairs(first.artifact_id());
  m.set_kept_pair(first.kept_pair());
  REQUIRE(rig.engine->MeasurePair(m, RequestContext::Background())->kept_pair_used());

  const int probes = rig.format.probe_calls();
  v1::EvaluateResponse second = verify("fast", 10);
  CHECK(second.reference_cached());
  CHECK(second.correctness().trials_passed() == 5);
  REQUIRE(second.kept_pair().size() > 0);
  CHECK(rig.format.open_sessions() == 2);  // the pair waits, the reference never called
  CHECK(rig.format.reference_starts() == 2);
  CHECK(rig.format.started_readied() == 4);  // both readied before the lane, both times
  CHECK(rig.format.probe_calls() == probes);
  const int starts = rig.format.starts();
  m = FivePairs(second.artifact_id());
  m.set_kept_pair(second.kept_pair());
  auto p = rig.engine->MeasurePair(m, RequestContext::Background());
  REQUIRE(p.ok());
  CHECK(p->verdict() == v1::VERDICT_OK);
  CHECK(p->kept_pair_used());
  CHECK(p->reference_samples_size() == 5);
  // Both sides timed live: "fast" takes half the reference's time.
  CHECK(p->candidate_samples(0).device_sync_seconds() < 0.6 * p->reference_samples(0).device_sync_seconds());
  CHECK(rig.format.starts() == starts);  // nothing started under the lane held alone
  CHECK(p->start_seconds() == Approx(0.0));

  // Not kept for timing: the candidate alone starts, as before.
  v1::EvaluateResponse third = verify("fast", 0);
  CHECK(third.reference_cached());
  CHECK(rig.format.reference_starts() == 2);
  rig.engine->WaitRetired();
  CHECK(rig.format.open_sessions() == 0);
  CHECK(rig.lanes.Busy() == 0);
}

}  // namespace
}  // namespace crl
