#include "services/cli/batch_eval.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <thread>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/reward/names.h"
#include "services/cli/commands.h"
#include "services/cli/progress_bar.h"

namespace crl::cli {
namespace {

// Times a verified sample with the oracle; a failure while timed becomes the
// sample's verdict, an infrastructure failure leaves it unscored.
void Time(TimingClientInterface* timing, const TimingSettings& settings, const v1::Task& task,
          Outcome* o) {
  if (o->artifact_id.empty()) return;
  v1::TimeRequest t;
  *t.mutable_task() = task;
  t.set_artifact_id(o->artifact_id);
  t.set_kept_pair(o->kept_pair);
  t.set_target_rel_ci(settings.target_rel_ci);
  t.set_budget_seconds(settings.budget_seconds);
  t.set_min_sample_seconds(settings.min_sample_seconds);
  t.set_max_calls_per_sample(settings.max_calls_per_sample);
  t.set_eager_timing(settings.eager_timing);
  auto timed = timing->Time(t, RequestContext::Background());
  if (!timed.ok() || timed->verdict() == v1::VERDICT_INFRA_ERROR) {
    o->evaluated = false;
    o->message = timed.ok() ? "timing: infrastructure error" : timed.status().ToString();
    if (timed.ok()) {
      for (const auto& e : timed->flag_evidence()) absl::StrAppend(&o->message, "; ", e);
    }
    return;
  }
  if (timed->verdict() != v1::VERDICT_OK) {
    // Failed while being timed (e.g. crashed on a timing input): that is the
    // sample's verdict.
    o->verdict = timed->verdict();
    for (const auto& e : timed->flag_evidence()) absl::StrAppend(&o->message, "; ", e);
    return;
  }
  AddFlagNamesOnce(timed->flags(), &o->flags);
  o->timing = std::move(*timed);
}

// What the journal keeps of a finished sample (not its artifact: a resumed
// batch never times it again).
nlohmann::json OutcomeJson(const Outcome& o) {
  nlohmann::json j = {{"evaluated", o.evaluated},         {"verdict", v1::Verdict_Name(o.verdict)},
                      {"compiled", o.compiled},           {"custom_kernel", o.custom_kernel},
                      {"compile_seconds", o.compile_seconds}, {"compile_cache_hit", o.compile_cache_hit},
                      {"flags", o.flags},                 {"message", o.message},
                      {"verify_seconds", o.verify_seconds}, {"time_seconds", o.time_seconds},
                      {"reference_cached", o.reference_cached},
                      {"verify_lane_wait_seconds", o.verify_lane_wait_seconds},
                      {"verify_prepare_seconds", o.verify_prepare_seconds},
                      {"verify_start_seconds", o.verify_start_seconds},
                      {"verify_trials_seconds", o.verify_trials_seconds},
                      {"verify_steps_aside", o.verify_steps_aside}};
  if (o.timing) j["timing"] = nlohmann::json::parse(ProtoJson(*o.timing, false));
  if (o.max_abs_error && o.max_rel_error) {
    j["max_abs_error"] = *o.max_abs_error;
    j["max_rel_error"] = *o.max_rel_error;
  }
  return j;
}

std::optional<Outcome> OutcomeFromJson(const nlohmann::json& j) {
  Outcome o;
  try {
    o.evaluated = j.at("evaluated").get<bool>();
    if (!v1::Verdict_Parse(j.at("verdict").get<std::string>(), &o.verdict)) return std::nullopt;
    o.compiled = j.at("compiled").get<bool>();
    o.custom_kernel = j.at("custom_kernel").get<bool>();
    o.compile_seconds = j.at("compile_seconds").get<double>();
    o.compile_cache_hit = j.at("compile_cache_hit").get<bool>();
    o.flags = j.at("flags").get<std::vector<std::string>>();
    o.message = j.at("message").get<std::string>();
    o.verify_seconds = j.value("verify_seconds", 0.0);
    o.time_seconds = j.value("time_seconds", 0.0);
    o.reference_cached = j.value("reference_cached", false);
    o.verify_lane_wait_seconds = j.value("verify_lane_wait_seconds", 0.0);
    o.verify_prepare_seconds = j.value("verify_prepare_seconds", 0.0);
    o.verify_start_seconds = j.value("verify_start_seconds", 0.0);
    o.verify_trials_seconds = j.value("verify_trials_seconds", 0.0);
    o.verify_steps_aside = j.value("verify_steps_aside", 0);
    if (j.contains("max_abs_error")) {
      o.max_abs_error = j["max_abs_error"].get<double>();
      o.max_rel_error = j.at("max_rel_error").get<double>();
    }
    if (j.contains("timing")) {
      v1::TimeResponse t;
      if (!google::protobuf::util::JsonStringToMessage(j["timing"].dump(), &t).ok()) return std::nullopt;
      o.timing = std::move(t);
    }
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  return o;
}

}  // namespace


Outcome Verify(WorkerClientInterface* worker, const v1::Task& task, const std::string& source,
               const std::string& filename, double keep_for_timing_seconds,
               const v1::VerifyOptions& options) {
  Outcome o;
  v1::EvaluateRequest request;
  request.set_keep_for_timing_seconds(keep_for_timing_seconds);
  *request.mutable_options() = options;
  *request.mutable_task() = task;
  request.mutable_candidate()->set_source(source);
  request.mutable_candidate()->set_filename(filename);
  auto r = worker->Evaluate(request, RequestContext::Background());
  if (!r.ok()) {
    o.message = r.status().ToString();
    // A task the worker rejects is the task's problem, not the sample's.
    o.verdict = v1::VERDICT_INFRA_ERROR;
    return o;
  }
  o.verdict = r->verdict();
  o.evaluated = r->verdict() != v1::VERDICT_INFRA_ERROR;
  o.compiled = r->compile().verdict() == v1::VERDICT_OK;
  o.compile_seconds = r->compile().compile_seconds();
  o.compile_cache_hit = r->compile().cache_hit();
  o.custom_kernel = r->custom_kernel();
  o.verify_lane_wait_seconds = r->lane_wait_seconds();
  o.verify_prepare_seconds = r->prepare_seconds();
  o.verify_start_seconds = r->start_seconds();
  o.verify_trials_seconds = r->trials_seconds();
  o.reference_cached = r->reference_cached();
  o.verify_steps_aside = r->steps_aside();
  AddFlagNamesOnce(r->flags(), &o.flags);
  // The errors mean something when the outputs were compared throughout:
  // they passed, or failed on numbers alone (not a NaN, a shape, a type).
  if (r->correctness().trials() > 0 &&
      (r->verdict() == v1::VERDICT_OK ||
       (r->verdict() == v1::VERDICT_WRONG_ANSWER && r->correctness().only_tolerance_mismatches()))) {
    o.max_abs_error = r->correctness().max_abs_error();
    o.max_rel_error = r->correctness().max_rel_error();
  }
  if (r->messages_size()) o.message = r->messages(r->messages_size() - 1);
  // Why each flag was raised, as timing's flags are (below).
  for (const auto& e : r->flag_evidence()) absl::StrAppend(&o.message, "; ", e);
  if (r->verdict() == v1::VERDICT_COMPILE_ERROR) o.message = r->compile().log().substr(0, 2000);
  if (r->verdict() == v1::VERDICT_OK) {
    o.artifact_id = r->artifact_id();
    o.kept_pair = r->kept_pair();
  }
  return o;
}

std::string Label(const Outcome& o) {
  std::string s = VerdictShortName(o.verdict);
  if (o.timing) absl::StrAppend(&s, absl::StrFormat(" %.2fx", o.timing->speedup()));
  return s;
}

void ParallelFor(int n, int jobs, const std::function<void(int)>& fn) {
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int j = 0; j < std::max(1, std::min(jobs, n)); ++j) {
    threads.emplace_back([&] {
      for (int i = next++; i < n; i = next++) fn(i);
    });
  }
  for (auto& t : threads) t.join();
}

std::vector<Outcome> VerifyThenTime(const Endpoints& endpoints, const TimingSettings& settings,
                                    const std::vector<BatchSample>& samples, int jobs, BenchJournal* journal) {
  const int n = static_cast<int>(samples.size());
  std::vector<Outcome> outcomes(n);
  std::vector<bool> resumed(n, false);
  if (journal) {
    for (int i = 0; i < n; ++i) {
      if (auto j = journal->Find(samples[i].key)) {
        if (auto o = OutcomeFromJson(*j)) {
          outcomes[i] = *std::move(o);
          resumed[i] = true;
        }
      }
    }
    const int from_journal = static_cast<int>(std::count(resumed.begin(), resumed.end(), true));
    if (from_journal > 0) {
      std::fprintf(stderr, "crl bench: resuming: %d of %d sample(s) already done in %s\n", from_journal, n,
                   journal->path().c_str());
    }
  }
  auto record = [&](int i) {
    if (!journal || !outcomes[i].evaluated) return;
    if (absl::Status s = journal->Append(samples[i].key, OutcomeJson(outcomes[i])); !s.ok()) {
      std::fprintf(stderr, "crl bench: %s (the batch goes on; a restart re-evaluates this sample)\n",
                   s.ToString().c_str());
    }
  };
  // One pipeline per sample: build and verify, then time at once. With
  // several jobs, builds (CPU) and verifications (sharing the GPU) go on
  // while one sample is timed; the lanes keep timing alone.
  std::mutex mu;
  ProgressBar bar(std::cerr, n, isatty(2));
  std::atomic<int> timed{0}, kept{0}, cached{0}, aside{0};
  std::atomic<int64_t> verify_ms{0}, time_ms{0}, lane_ms{0}, start_ms{0}, wait_ms{0};
  std::atomic<int64_t> verify_prepare_ms{0}, verify_wait_ms{0}, verify_start_ms{0}, verify_trials_ms{0};
  const absl::Time start = absl::Now();
  const bool two_phase = settings.time_after_verify && endpoints.timing;
  auto finished = [&](int i) {
    std::lock_guard<std::mutex> lock(mu);
    bar.Step(absl::StrCat(resumed[i] ? "journaled " : "", samples[i].name, " ", Label(outcomes[i])));
  };
  auto time_one = [&](int i) {
    const absl::Time t1 = absl::Now();
    Time(endpoints.timing.get(), settings, samples[i].task, &outcomes[i]);
    const absl::Duration took = absl::Now() - t1;
    outcomes[i].time_seconds = absl::ToDoubleSeconds(took);
    time_ms += absl::ToInt64Milliseconds(took);
    if (outcomes[i].timing) {
      kept += outcomes[i].timing->kept_pair_used();
      lane_ms += std::llround(outcomes[i].timing->measure_seconds() * 1e3);
      start_ms += std::llround(outcomes[i].timing->start_seconds() * 1e3);
      wait_ms += std::llround(outcomes[i].timing->lane_wait_seconds() * 1e3);
    }
    ++timed;
  };
  // Whether sample i waits for the timing phase (two_phase).
  std::vector<bool> to_time(n, false);
  ParallelFor(n, jobs, [&](int i) {
    const BatchSample& s = samples[i];
    if (resumed[i]) {
      // Taken from the journal.
    } else if (!s.error.empty()) {
      outcomes[i].verdict = v1::VERDICT_INFRA_ERROR;
      outcomes[i].message = s.error;
    } else {
      const absl::Time t0 = absl::Now();
      // Timed at once, on the sides verification started when the worker
      // could keep them; in two phases, later on sides of its own.
      outcomes[i] = Verify(endpoints.worker.get(), s.task, s.source, s.filename,
                           endpoints.timing && !two_phase ? settings.keep_for_timing_seconds : 0, s.options);
      const absl::Time t1 = absl::Now();
      outcomes[i].verify_seconds = absl::ToDoubleSeconds(t1 - t0);
      verify_ms += absl::ToInt64Milliseconds(t1 - t0);
      verify_wait_ms += std::llround(outcomes[i].verify_lane_wait_seconds * 1e3);
      verify_prepare_ms += std::llround(outcomes[i].verify_prepare_seconds * 1e3);
      verify_start_ms += std::llround(outcomes[i].verify_start_seconds * 1e3);
      verify_trials_ms += std::llround(outcomes[i].verify_trials_seconds * 1e3);
      cached += outcomes[i].reference_cached;
      aside += outcomes[i].verify_steps_aside;
      if (!outcomes[i].artifact_id.empty() && endpoints.timing) {
        if (two_phase) {
          to_time[i] = true;
          return;
        }
        time_one(i);
      }
      record(i);
    }
    finished(i);
  });
  if (two_phase) {
    std::vector<int> waiting;
    for (int i = 0; i < n; ++i) {
      if (to_time[i]) waiting.push_back(i);
    }
    ParallelFor(static_cast<int>(waiting.size()), jobs, [&](int k) {
      time_one(waiting[k]);
      record(waiting[k]);
      finished(waiting[k]);
    });
  }
  bar.Finish();
  // Lanes held alone for measuring, against the batch's wall: with one lane,
  // the fraction of the run the GPU spent timing.
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  std::fprintf(stderr,
               "crl bench: %d sample(s) in %.1f s with %d job(s); summed over samples: verification %.1f s "
               "(%d against recorded reference answers; readying sides off the lane %.1f s, waiting for a lane "
               "%.1f s, starting sides %.1f s, trials %.1f s; %d step(s) aside for timing), timing %.1f s (%d timed, "
               "%d on the sides verification kept: waiting for the lane alone %.1f s, starting sides %.1f s), lanes "
               "held for measuring %.1f s (%.0f%% of the wall)\n",
               n, wall, jobs, verify_ms.load() / 1e3, cached.load(), verify_prepare_ms.load() / 1e3,
               verify_wait_ms.load() / 1e3, verify_start_ms.load() / 1e3, verify_trials_ms.load() / 1e3, aside.load(),
               time_ms.load() / 1e3, timed.load(), kept.load(), wait_ms.load() / 1e3, start_ms.load() / 1e3,
               lane_ms.load() / 1e3, wall > 0 ? 100 * lane_ms.load() / 1e3 / wall : 0.0);
  return outcomes;
}

}  // namespace crl::cli
