#include "services/trainer/training_loop.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "services/trainer/checkpoint_dirs.h"

namespace crl::trainer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void FillStats(const StepStats& s, v1::TrainStepStats* out) {
  out->set_objective(ObjectiveName(s.objective));
  out->set_loss(s.loss);
  out->set_kl(s.kl);
  out->set_clip_fraction(s.clip_fraction);
  out->set_entropy(s.entropy);
  out->set_grad_norm(s.grad_norm);
  out->set_learning_rate(s.lr);
  out->set_reward_mean(s.reward_mean);
  out->set_reward_std(s.reward_std);
  out->set_sequences(s.sequences);
  out->set_trained_tokens(s.trained_tokens);
  out->set_seconds(s.seconds);
}

}  // namespace

TrainingLoop::TrainingLoop(StepRunner* runner, const Intake* intake, LoopOptions options,
                           TrainerMetrics* metrics, ClockInterface* clock)
    : runner_(runner), intake_(intake), options_(options), metrics_(metrics), clock_(clock) {}

TrainingLoop::~TrainingLoop() { Drain(); }

absl::Status TrainingLoop::Start() {
  Trainer* t = runner_->trainer();
  if (options_.resume) {
    auto extra = t->Resume();
    if (extra.ok()) {
      absl::MutexLock lock(&mu_);
      RestoreQueue(extra->value("loop", json::object()));
      CRL_LOG(INFO) << "crl-trainer: resumed at step " << t->step() << " with " << groups_.size()
                    << " queued groups, " << examples_.size() << " queued examples";
    } else if (extra.status().code() != absl::StatusCode::kNotFound) {
      return extra.status();
    }
  }
  if (!options_.journal_dir.empty()) {
    absl::MutexLock lock(&mu_);
    const int replayed = ReplayJournal();
    if (replayed > 0) CRL_LOG(INFO) << "crl-trainer: queued " << replayed << " journaled submissions again";
    CRL_ASSIGN_OR_RETURN(journal_, Journal::Open(options_.journal_dir));
  }
  // The current version must be loadable: the base model at step 0, else
  // the published directory of this step (publishing it if the last run
  // stopped between a step and its publication).
  v1::PolicyVersion v;
  v.set_version(std::to_string(t->step()));
  v.set_step(t->step());
  v.set_base_model(t->options().model_dir);
  if (t->step() == 0) {
    v.set_checkpoint_uri(t->options().model_dir);
  } else {
    const std::string dir = (fs::path(t->options().out_dir) / "policy" / absl::StrCat("v", t->step())).string();
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      CRL_ASSIGN_OR_RETURN(PublishedPolicy p, runner_->Publish());
      (void)p;
    }
    v.set_checkpoint_uri(dir);
    v.set_adapter(t->options().lora);
  }
  absl::MutexLock lock(&mu_);
  current_ = v;
  step_ = t->step();
  phase_id_ = t->phase().id;
  UpdateGauges();
  if (metrics_) metrics_->policy_version.Set(static_cast<double>(t->step()));
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void TrainingLoop::Drain() {
  std::call_once(drain_once_, [this] {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    if (thread_.joinable()) thread_.join();
    absl::MutexLock lock(&watch_mu_);
    for (auto& [id, w] : watchers_) w.on_close();
  });
}

// ---- Submissions ---------------------------------------------------------------

bool TrainingLoop::Seen(const std::string& id) const { return seen_.count(id) > 0; }

void TrainingLoop::Remember(const std::string& id) {
  if (!seen_.insert(id).second) return;
  queue_changed_ = true;  // what a checkpoint holds changed
  seen_order_.push_back(id);
  while (static_cast<int>(seen_order_.size()) > options_.remembered_ids) {
    seen_.erase(seen_order_.front());
    seen_order_.pop_front();
  }
}

void TrainingLoop::UpdateGauges() {
  if (!metrics_) return;
  metrics_->queued_groups.Set(static_cast<double>(groups_.size()));
  metrics_->queued_examples.Set(static_cast<double>(examples_.size()));
}

absl::StatusOr<v1::SubmitGroupResponse> TrainingLoop::SubmitGroup(const v1::SubmitGroupRequest& request,
                                                                  const RequestContext& context) {
  CRL_ASSIGN_OR_RETURN(IntakeGroup g, intake_->Group(request));
  v1::SubmitGroupResponse response;
  response.set_used(g.used);
  for (double a : g.advantages) response.add_advantages(a);
  bool wait = false;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("crl-trainer is draining");
    const int64_t step = step_;
    v1::GroupOutcome outcome = g.outcome;
    if (Seen(g.id)) {
      outcome = v1::GROUP_OUTCOME_DUPLICATE;
    } else if (outcome == v1::GROUP_OUTCOME_QUEUED && options_.max_staleness >= 0 &&
               step - g.policy_version > options_.max_staleness) {
      outcome = v1::GROUP_OUTCOME_DROPPED_STALE;
      if (metrics_) metrics_->stale_samples.Increment(static_cast<double>(g.sequences.size()));
    } else if (outcome == v1::GROUP_OUTCOME_QUEUED &&
               static_cast<int>(groups_.size()) >= options_.max_queued_groups) {
      return absl::ResourceExhaustedError(
          absl::StrCat("crl-trainer: ", groups_.size(), " groups queued (max_queued_groups)"));
    }
    if (outcome == v1::GROUP_OUTCOME_QUEUED && journal_) {
      // Durable before it is acknowledged (journal.h).
      if (absl::Status j = journal_->Append(request); !j.ok()) return j;
    }
    if (outcome != v1::GROUP_OUTCOME_DUPLICATE) Remember(g.id);
    if (outcome == v1::GROUP_OUTCOME_QUEUED) {
      groups_.push_back({g.id, g.policy_version, std::move(g.sequences)});
      wait = request.wait_for_update();
      if (wait) waiting_[g.id] = Outcome();
    }
    if (metrics_) metrics_->CountGroup(outcome);
    response.set_outcome(outcome);
    response.set_policy_version(std::to_string(step));
    response.set_queued_groups(static_cast<int>(groups_.size()));
    UpdateGauges();
  }
  if (!wait) return response;
  CRL_ASSIGN_OR_RETURN(Outcome o, AwaitOutcome(g.id, context));
  response.set_outcome(o.outcome);
  response.set_policy_version(std::to_string(o.version));
  response.set_loss(o.loss);
  return response;
}

absl::StatusOr<v1::SubmitExamplesResponse> TrainingLoop::SubmitExamples(
    const v1::SubmitExamplesRequest& request, const RequestContext& context) {
  CRL_ASSIGN_OR_RETURN(std::vector<TrainSequence> examples, intake_->Examples(request));
  v1::SubmitExamplesResponse response;
  std::string last_id;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("crl-trainer is draining");
    if (static_cast<int>(examples_.size() + examples.size()) > options_.max_queued_examples) {
      return absl::ResourceExhaustedError(
          absl::StrCat("crl-trainer: ", examples_.size(), " examples queued (max_queued_examples)"));
    }
    if (journal_ && std::any_of(examples.begin(), examples.end(), [&](const TrainSequence& e)
                                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !Seen(e.id); })) {
      if (absl::Status j = journal_->Append(request); !j.ok()) return j;
    }
    for (TrainSequence& e : examples) {
      if (Seen(e.id)) {
        response.set_duplicates(response.duplicates() + 1);
        continue;
      }
      Remember(e.id);
      last_id = e.id;
      examples_.push_back(std::move(e));
      response.set_accepted(response.accepted() + 1);
    }
    if (metrics_) metrics_->examples.Increment(response.accepted());
    if (request.wait_for_update() && !last_id.empty()) waiting_[last_id] = Outcome();
    response.set_policy_version(std::to_string(step_));
    response.set_queued_examples(static_cast<int>(examples_.size()));
    UpdateGauges();
  }
  if (!request.wait_for_update() || last_id.empty()) return response;
  // Examples train in order: the last one's step trained them all.
  CRL_ASSIGN_OR_RETURN(Outcome o, AwaitOutcome(last_id, context));
  response.set_policy_version(std::to_string(o.version));
  return response;
}

absl::StatusOr<TrainingLoop::Outcome> TrainingLoop::AwaitOutcome(const std::string& id,
                                                                 const RequestContext& context) {
  absl::MutexLock lock(&mu_);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = waiting_.find(id);
    return it == waiting_.end() || it->second.outcome != v1::GROUP_OUTCOME_UNSPECIFIED ||
           !it->second.status.ok();
  };
  while (!done()) {
    if (absl::Status s = context.Check(); !s.ok()) {
      waiting_.erase(id);  // the data stays queued; only the wait ends
      return s;
    }
    mu_.AwaitWithTimeout(absl::Condition(&done), absl::Milliseconds(250));
  }
  auto it = waiting_.find(id);
  if (it == waiting_.end()) return absl::UnavailableError("crl-trainer stopped before the update");
  Outcome o = it->second;
  waiting_.erase(it);
  if (!o.status.ok()) return o.status;
  return o;
}

v1::PolicyVersion TrainingLoop::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

int TrainingLoop::Watch(std::function<void(const v1::PolicyVersion&)> on_version,
                        std::function<void()> on_close) {
  absl::MutexLock lock(&watch_mu_);
  watchers_[next_watcher_] = {std::move(on_version), std::move(on_close)};
  return next_watcher_++;
}

void TrainingLoop::Unwatch(int id) {
  absl::MutexLock lock(&watch_mu_);
  watchers_.erase(id);
}

absl::StatusOr<v1::CheckpointResponse> TrainingLoop::Checkpoint(const RequestContext& context) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("crl-trainer is draining");
  const int ticket = ++checkpoints_requested_;
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return checkpoints_done_ >= ticket || stopping_; };
  while (!done()) {
    CRL_RETURN_IF_ERROR(context.Check());
    mu_.AwaitWithTimeout(absl::Condition(&done), absl::Milliseconds(250));
  }
  if (checkpoints_done_ < ticket) return absl::UnavailableError("crl-trainer stopped");
  CRL_RETURN_IF_ERROR(last_checkpoint_);
  v1::CheckpointResponse r;
  r.set_checkpoint_uri(last_checkpoint_uri_);
  r.set_step(step_);
  return r;
}

absl::StatusOr<v1::FlushResponse> TrainingLoop::Flush(const RequestContext& context) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("crl-trainer is draining");
  if (flushes_requested_ == flushes_done_) last_flush_.Clear();  // a new flush round
  const int ticket = ++flushes_requested_;
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return flushes_done_ >= ticket || stopping_; };
  while (!done()) {
    CRL_RETURN_IF_ERROR(context.Check());
    mu_.AwaitWithTimeout(absl::Condition(&done), absl::Milliseconds(250));
  }
  if (flushes_done_ < ticket) return absl::UnavailableError("crl-trainer stopped");
  return last_flush_;
}

absl::StatusOr<v1::PolicyVersion> TrainingLoop::BeginPhase(const v1::BeginPhaseRequest& request,
                                                           const RequestContext& context) {
  const v1::OptimizerSchedule& sc = request.schedule();
  if (sc.lr() < 0 || sc.warmup_steps() < 0 || sc.total_steps() < 0 ||
      (sc.has_min_lr_ratio() && (sc.min_lr_ratio() < 0 || sc.min_lr_ratio() > 1))) {
    return absl::InvalidArgumentError(
        "schedule: lr, warmup_steps and total_steps must not be negative, min_lr_ratio is 0 to 1");
  }
  if (request.phase_id().empty()) return absl::InvalidArgumentError("phase_id: required");
  PhaseChange change;
  change.id = request.phase_id();
  change.optimizer = runner_->trainer()->options().optimizer;
  if (sc.lr() > 0) {
    change.optimizer.lr = sc.lr();
    change.optimizer.warmup_steps = sc.warmup_steps();
    change.optimizer.total_steps = sc.total_steps();
    if (sc.has_min_lr_ratio()) change.optimizer.min_lr_ratio = sc.min_lr_ratio();
  }
  change.save_snapshot = request.save_snapshot();
  change.restore_snapshot = request.restore_snapshot();
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("crl-trainer is draining");
  if (phase_id_ == change.id && phase_requests_.empty()) return current_;  // a retry
  // A retry of a request still queued waits for that one (applying a phase
  // twice would reset the moments and restore the snapshot again).
  int ticket = 0;
  for (size_t i = 0; i < phase_requests_.size(); ++i) {
    if (phase_requests_[i].id == change.id) ticket = phases_done_ + 1 + static_cast<int>(i);
  }
  if (ticket == 0) {
    phase_requests_.push_back(std::move(change));
    ticket = ++phases_requested_;
  }
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return phases_done_ >= ticket || stopping_; };
  while (!done()) {
    CRL_RETURN_IF_ERROR(context.Check());
    mu_.AwaitWithTimeout(absl::Condition(&done), absl::Milliseconds(250));
  }
  if (phases_done_ < ticket) return absl::UnavailableError("crl-trainer stopped");
  if (auto it = phase_results_.find(ticket); it != phase_results_.end()) CRL_RETURN_IF_ERROR(it->second);
  return current_;
}

// ---- The training thread ----------------------------------------------------------

TrainingLoop::Work TrainingLoop::NextWork(std::vector<TrainSequence>* batch,
                                          std::vector<std::string>* ids) {
  if (stopping_) return Work::kStop;
  if (checkpoints_requested_ > checkpoints_done_) return Work::kCheckpoint;
  const int64_t step = step_;
  // Groups that became too old while queued.
  for (auto it = groups_.begin(); it != groups_.end();) {
    if (options_.max_staleness >= 0 && step - it->version > options_.max_staleness) {
      if (metrics_) {
        metrics_->CountGroup(v1::GROUP_OUTCOME_DROPPED_STALE);
        metrics_->stale_samples.Increment(static_cast<double>(it->sequences.size()));
      }
      if (auto w = waiting_.find(it->id); w != waiting_.end()) {
        w->second.outcome = v1::GROUP_OUTCOME_DROPPED_STALE;
        w->second.version = step;
      }
      it = groups_.erase(it);
    } else {
      ++it;
    }
  }
  // A phase change waits for what was queued before it, as a flush does.
  const bool flush = flushes_requested_ > flushes_done_ || !phase_requests_.empty();
  const size_t eps = static_cast<size_t>(std::max(1, options_.examples_per_step));
  const size_t gps = static_cast<size_t>(std::max(1, options_.groups_per_step));
  if (examples_.size() >= eps || (flush && !examples_.empty())) {
    const size_t n = std::min(eps, examples_.size());
    for (size_t i = 0; i < n; ++i) {
      ids->push_back(examples_.front().id);
      batch->push_back(std::move(examples_.front()));
      examples_.pop_front();
    }
    if (flush) last_flush_.set_examples(last_flush_.examples() + static_cast<int>(n));
    UpdateGauges();
    return Work::kSupervised;
  }
  if (groups_.size() >= gps || (flush && !groups_.empty())) {
    const size_t n = std::min(gps, groups_.size());
    for (size_t i = 0; i < n; ++i) {
      ids->push_back(groups_.front().id);
      for (TrainSequence& s : groups_.front().sequences) batch->push_back(std::move(s));
      groups_.pop_front();
    }
    if (flush) last_flush_.set_groups(last_flush_.groups() + static_cast<int>(n));
    UpdateGauges();
    return Work::kPolicyGradient;
  }
  if (flushes_requested_ > flushes_done_) {
    *last_flush_.mutable_version() = current_;
    flushes_done_ = flushes_requested_;
  }
  if (!phase_requests_.empty()) return Work::kPhase;
  return Work::kNone;
}

void TrainingLoop::Run() {
  for (;;) {
    std::vector<TrainSequence> batch;
    std::vector<std::string> ids;
    Work work;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || checkpoints_requested_ > checkpoints_done_ ||
               flushes_requested_ > flushes_done_ || !phase_requests_.empty() ||
               static_cast<int>(groups_.size()) >= options_.groups_per_step ||
               static_cast<int>(examples_.size()) >= options_.examples_per_step;
      };
      mu_.Await(absl::Condition(&ready));
      work = NextWork(&batch, &ids);
      if (work == Work::kNone) continue;
    }
    if (work == Work::kStop) {
      bool changed;
      {
        absl::MutexLock lock(&mu_);
        changed = queue_changed_;
      }
      if (steps_since_checkpoint_ > 0 || changed) {
        if (absl::Status s = CheckpointNow(); !s.ok()) CRL_LOG(ERROR) << "crl-trainer: final checkpoint: " << s;
      }
      if (absl::Status s = runner_->Stop(); !s.ok()) CRL_LOG(ERROR) << "crl-trainer: stopping ranks: " << s;
      absl::MutexLock lock(&mu_);
      for (auto& [id, o] : waiting_) {
        if (o.outcome == v1::GROUP_OUTCOME_UNSPECIFIED && o.status.ok()) {
          o.status = absl::UnavailableError("crl-trainer is draining; the data is kept in its checkpoint");
        }
      }
      return;
    }
    if (work == Work::kCheckpoint) {
      absl::Status s = CheckpointNow();
      absl::MutexLock lock(&mu_);
      last_checkpoint_ = s;
      checkpoints_done_ = checkpoints_requested_;
      continue;
    }
    if (work == Work::kPhase) {
      ApplyPhase();
      continue;
    }
    const Objective objective =
        work == Work::kSupervised ? Objective::kSupervised : Objective::kPolicyGradient;
    AfterStep(runner_->Train(batch, objective), work, ids);
  }
}

void TrainingLoop::AfterStep(const absl::StatusOr<StepStats>& stats, Work work,
                             const std::vector<std::string>& ids) {
  if (!stats.ok()) {
    CRL_LOG(ERROR) << "crl-trainer: step failed: " << stats.status();
    if (metrics_) metrics_->step_failures.Increment();
    absl::MutexLock lock(&mu_);
    for (const std::string& id : ids) {
      if (auto w = waiting_.find(id); w != waiting_.end()) w->second.status = stats.status();
    }
    return;
  }
  if (metrics_) {
    metrics_->ObserveStep(*stats);
    if (work == Work::kPolicyGradient) {
      for (size_t i = 0; i < ids.size(); ++i) metrics_->CountGroup(v1::GROUP_OUTCOME_TRAINED);
    }
  }
  CRL_LOG(INFO) << "crl-trainer: step " << stats->step << " " << ObjectiveName(stats->objective)
                << " loss=" << stats->loss << " sequences=" << stats->sequences
                << " tokens=" << stats->tokens << " seconds=" << stats->seconds;
  ++steps_since_checkpoint_;
  if (++steps_since_publish_ >= std::max(1, options_.publish_every)) {
    steps_since_publish_ = 0;
    if (absl::Status s = PublishNow(&*stats); !s.ok()) CRL_LOG(ERROR) << "crl-trainer: publish: " << s;
  }
  if (options_.checkpoint_every > 0 && steps_since_checkpoint_ >= options_.checkpoint_every) {
    if (absl::Status s = CheckpointNow(); !s.ok()) CRL_LOG(ERROR) << "crl-trainer: checkpoint: " << s;
  }
  absl::MutexLock lock(&mu_);
  step_ = stats->step;
  for (const std::string& id : ids) {
    if (auto w = waiting_.find(id); w != waiting_.end()) {
      w->second.outcome = v1::GROUP_OUTCOME_TRAINED;
      w->second.version = stats->step;
      w->second.loss = stats->loss;
    }
  }
}

void TrainingLoop::ApplyPhase() {
  PhaseChange change;
  {
    absl::MutexLock lock(&mu_);
    change = phase_requests_.front();
  }
  absl::Status s = runner_->BeginPhase(change);
  if (s.ok()) {
    CRL_LOG(INFO) << "crl-trainer: phase " << change.id << " begins (lr " << change.optimizer.lr << ", warm-up "
                  << change.optimizer.warmup_steps << ", total " << change.optimizer.total_steps << " steps"
                  << (change.restore_snapshot.empty() ? "" : ", weights of snapshot " + change.restore_snapshot)
                  << ")";
    if (!change.restore_snapshot.empty()) {
      // New weights: a new version for the sampler, and for the checkpoint.
      s = PublishNow(nullptr);
      ++steps_since_checkpoint_;
    }
  }
  absl::MutexLock lock(&mu_);
  phase_requests_.pop_front();
  phase_results_[++phases_done_] = s;
  while (phase_results_.size() > 64) phase_results_.erase(phase_results_.begin());
  step_ = runner_->trainer()->step();
  phase_id_ = runner_->trainer()->phase().id;
}

absl::Status TrainingLoop::PublishNow(const StepStats* stats) {
  CRL_ASSIGN_OR_RETURN(PublishedPolicy p, runner_->Publish());
  v1::PolicyVersion v;
  v.set_version(std::to_string(p.version));
  v.set_checkpoint_uri(p.path);
  v.set_step(p.version);
  v.set_adapter(p.adapter);
  v.set_base_model(p.base_model);
  if (stats) {
    for (const std::string& id : stats->ids) {
      if (v.trained_ids_size() == 0 || v.trained_ids(v.trained_ids_size() - 1) != id) v.add_trained_ids(id);
    }
    FillStats(*stats, v.mutable_stats());
  }
  {
    absl::MutexLock lock(&mu_);
    current_ = v;
  }
  // Under watch_mu_: a watcher that Unwatch()ed is never called afterwards.
  absl::MutexLock lock(&watch_mu_);
  for (auto& [id, w] : watchers_) w.on_version(v);
  return absl::OkStatus();
}

absl::Status TrainingLoop::CheckpointNow() {
  json extra;
  int64_t covered_before = 0;  // journal segments this checkpoint makes redundant
  {
    absl::MutexLock lock(&mu_);
    extra = {{"loop", QueueState()}};
    queue_changed_ = false;
    if (journal_) {
      auto next = journal_->Rotate();
      if (!next.ok()) return next.status();
      covered_before = *next;
    }
  }
  CRL_RETURN_IF_ERROR(runner_->Checkpoint(extra));
  if (covered_before > 0) {
    absl::MutexLock lock(&mu_);
    journal_->DropBefore(covered_before);
  }
  steps_since_checkpoint_ = 0;
  if (metrics_) metrics_->checkpoints.Increment();
  auto dir = LatestDirectory((fs::path(runner_->trainer()->options().out_dir) / "checkpoints").string());
  absl::MutexLock lock(&mu_);
  last_checkpoint_uri_ = dir.ok() ? *dir : "";
  return absl::OkStatus();
}

json TrainingLoop::QueueState() const {
  json groups = json::array();
  for (const QueuedGroup& g : groups_) {
    groups.push_back({{"id", g.id}, {"version", g.version}, {"sequences", SequencesToJson(g.sequences)}});
  }
  json examples = SequencesToJson(std::vector<TrainSequence>(examples_.begin(), examples_.end()));
  return {{"groups", groups}, {"examples", examples},
          {"seen", std::vector<std::string>(seen_order_.begin(), seen_order_.end())}};
}

int TrainingLoop::ReplayJournal() {
  int replayed = 0;
  (void)Journal::Replay(
      options_.journal_dir,
      [&](const v1::SubmitGroupRequest& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        auto g = intake_->Group(r);
        if (!g.ok() || g->outcome != v1::GROUP_OUTCOME_QUEUED || Seen(g->id)) return;
        Remember(g->id);
        groups_.push_back({g->id, g->policy_version, std::move(g->sequences)});
        ++replayed;
      },
      [&](const v1::SubmitExamplesRequest& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        auto examples = intake_->Examples(r);
        if (!examples.ok()) return;
        bool any = false;
        for (TrainSequence& e : *examples) {
          if (Seen(e.id)) continue;
          Remember(e.id);
          examples_.push_back(std::move(e));
          any = true;
        }
        replayed += any;
      });
  if (replayed > 0) queue_changed_ = true;
  return replayed;
}

void TrainingLoop::RestoreQueue(const json& state) {
  for (const auto& g : state.value("groups", json::array())) {
    groups_.push_back({g.at("id").get<std::string>(), g.at("version").get<int64_t>(),
                       SequencesFromJson(g.at("sequences"))});
  }
  for (TrainSequence& e : SequencesFromJson(state.value("examples", json::array()))) {
    examples_.push_back(std::move(e));
  }
  for (const auto& id : state.value("seen", json::array())) Remember(id.get<std::string>());
}

}  // namespace crl::trainer
