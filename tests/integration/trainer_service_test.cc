// crl-trainer as a real service: bad groups refused naming the field while
// training goes on, groups that teach nothing counted, waiting for an
// update, duplicates and stale groups, Flush, the version stream, metrics,
// and a drain (SIGTERM) that keeps queued data for the next start.
#include <catch2/catch.hpp>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include "common/file.h"
#include "crl/v1/trainer.grpc.pb.h"
#include "services/trainer/grpc_trainer_client.h"
#include "tests/support/policy_fixture.h"
#include "tests/support/service_process.h"

namespace crl::testing {
namespace {

namespace fs = std::filesystem;

const std::string kBin = CRL_BIN_DIR;
const std::string kSource = CRL_SOURCE_DIR;

v1::SubmitGroupRequest Group(const std::string& id, const std::vector<double>& rewards,
                             const std::string& version = "") {
  v1::SubmitGroupRequest r;
  r.set_group_id(id);
  r.set_prompt("make the kernel " + id + " faster");
  r.set_policy_version(version);
  for (size_t i = 0; i < rewards.size(); ++i) {
    auto* c = r.add_completions();
    c->set_completion("return torch.relu(x) * " + std::to_string(i));
    c->mutable_reward()->set_status(v1::REWARD_STATUS_OK);
    c->mutable_reward()->set_reward(rewards[i]);
  }
  return r;
}

std::vector<std::string> TrainerArgs(const std::string& model, const std::string& out) {
  return {"--model", model, "--out_dir", out, "--groups_per_step", "2", "--max_staleness", "1",
          "--checkpoint_every", "0", "--lr", "1e-3", "--drain_delay=0s", "--log_level=warning",
          "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0"};
}

TEST_CASE("crl-trainer trains submitted groups, refuses bad ones, and streams versions", "[integration][trainer]") {
  TempDir dir;
  const std::string model = MakePolicy(dir);
  const std::string out = dir.path() + "/out";
  auto trainer = std::make_unique<ServiceProcess>(kBin + "/crl-trainer", TrainerArgs(model, out));
  REQUIRE(trainer->started());
  CHECK(std::system((kBin + "/crl health --service crl.v1.TrainerService " + trainer->grpc_address() +
                     " >/dev/null")
                        .c_str()) == 0);
  ClientOptions co;
  co.timeout = absl::Seconds(120);
  auto client = GrpcTrainerClient::Create(trainer->grpc_address(), co);
  REQUIRE(client.ok());
  auto& c = **client;
  const RequestContext& bg = RequestContext::Background();

  // A watcher sees the current version, then every published one.
  std::mutex mu;
  std::vector<v1::PolicyVersion> seen;
  RequestContext watch_ctx;
  std::atomic<bool> watch_ended{false};
  absl::Status watch_status;
  std::thread watcher([&] {
    watch_status = c.WatchPolicyVersions(watch_ctx, [&](const v1::PolicyVersion& v) {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(v);
    });
    watch_ended = true;
  });
  // A failed REQUIRE unwinds through here: end the watch first.
  struct JoinOnExit {
    RequestContext& ctx;
    std::thread& t;
    ~JoinOnExit() {
      ctx.Cancel();
      if (t.joinable()) t.join();
    }
  } join_on_exit{watch_ctx, watcher};

  // Bad input: INVALID_ARGUMENT naming the field; the trainer keeps serving.
  v1::SubmitGroupRequest bad = Group("bad", {0, 1});
  bad.mutable_completions(1)->add_token_ids(7);
  bad.mutable_completions(1)->add_token_ids(9999);
  auto refused = c.SubmitGroup(bad, bg);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("completions[1].token_ids[1]"));
  auto equal = c.SubmitGroup(Group("same", {1, 1, 1}), bg);
  REQUIRE(equal.ok());
  CHECK(equal->outcome() == v1::GROUP_OUTCOME_SKIPPED_EQUAL_REWARDS);
  v1::SubmitGroupRequest infra = Group("infra", {0.5, 2.0});
  infra.mutable_completions(0)->mutable_reward()->set_status(v1::REWARD_STATUS_INFRA_RETRY);
  auto few = c.SubmitGroup(infra, bg);
  REQUIRE(few.ok());
  CHECK(few->outcome() == v1::GROUP_OUTCOME_SKIPPED_TOO_FEW);
  CHECK(few->used() == 1);

  // Two groups make a step; the second waits for it.
  auto q = c.SubmitGroup(Group("a", {0.0, 1.0, 0.5}), bg);
  REQUIRE(q.ok());
  CHECK(q->outcome() == v1::GROUP_OUTCOME_QUEUED);
  CHECK(q->advantages_size() == 3);
  v1::SubmitGroupRequest b = Group("b", {2.0, 0.0});
  b.set_wait_for_update(true);
  auto trained = c.SubmitGroup(b, bg);
  REQUIRE(trained.ok());
  CHECK(trained->outcome() == v1::GROUP_OUTCOME_TRAINED);
  CHECK(trained->policy_version() == "1");
  CHECK(c.SubmitGroup(Group("a", {0.0, 1.0, 0.5}), bg)->outcome() == v1::GROUP_OUTCOME_DUPLICATE);

  // Flush trains a lone group; then a group sampled by version 0 is too old.
  REQUIRE(c.SubmitGroup(Group("c", {1.0, 0.0}), bg).ok());
  auto flushed = c.Flush(bg);
  REQUIRE(flushed.ok());
  CHECK(flushed->groups() == 1);
  CHECK(flushed->version().step() == 2);
  CHECK(c.SubmitGroup(Group("old", {1.0, 0.0}, "0"), bg)->outcome() == v1::GROUP_OUTCOME_DROPPED_STALE);
  auto version = c.GetPolicyVersion(bg);
  REQUIRE(version.ok());
  CHECK(version->step() == 2);
  CHECK(fs::exists(version->checkpoint_uri() + "/model.safetensors"));
  CHECK(version->stats().objective() == "policy-gradient");
  auto ckpt = c.Checkpoint(bg);
  REQUIRE(ckpt.ok());
  CHECK(fs::exists(ckpt->checkpoint_uri() + "/optimizer.safetensors"));

  // Metrics a dashboard scrapes.
  const std::string metrics = HttpGet(trainer->metrics_port(), "/metrics");
  CHECK_THAT(metrics, Catch::Contains("crl_trainer_groups_total{outcome=\"skipped_equal_rewards\"} 1"));
  CHECK_THAT(metrics, Catch::Contains("crl_trainer_groups_total{outcome=\"dropped_stale\"} 1"));
  CHECK_THAT(metrics, Catch::Contains("crl_trainer_groups_total{outcome=\"trained\"} 3"));
  CHECK_THAT(metrics, Catch::Contains("crl_trainer_rejected_total 1"));
  CHECK_THAT(metrics, Catch::Contains("crl_trainer_policy_version 2"));
  CHECK_THAT(metrics, Catch::Contains("crl_trainer_loss "));
  CHECK_THAT(metrics, Catch::Contains("crl_trainer_stale_samples_total 2"));

  // One group left queued, then SIGTERM: the stream ends, the queue is kept.
  REQUIRE(c.SubmitGroup(Group("d", {0.3, 0.9}, "2"), bg)->outcome() == v1::GROUP_OUTCOME_QUEUED);
  trainer->Signal(SIGTERM);
  CHECK(trainer->Wait(60) == 0);
  watcher.join();
  CHECK(watch_ended);
  CHECK(watch_status.ok());
  {
    std::lock_guard<std::mutex> lock(mu);
    REQUIRE(seen.size() == 3);  // 0 (the base model), 1, 2
    CHECK(seen[0].checkpoint_uri() == model);
    CHECK(seen[1].step() == 1);
    CHECK(seen[1].trained_ids_size() == 2);
    CHECK(seen[2].trained_ids(0) == "c");
  }
  trainer = std::make_unique<ServiceProcess>(kBin + "/crl-trainer", TrainerArgs(model, out));
  REQUIRE(trainer->started());
  auto again = GrpcTrainerClient::Create(trainer->grpc_address(), co);
  REQUIRE(again.ok());
  CHECK((*again)->GetPolicyVersion(bg)->step() == 2);
  // "d" survived the restart: one more group makes a step of two.
  CHECK((*again)->SubmitGroup(Group("a", {0.0, 1.0, 0.5}), bg)->outcome() == v1::GROUP_OUTCOME_DUPLICATE);
  v1::SubmitGroupRequest e = Group("e", {0.1, 0.7}, "2");
  e.set_wait_for_update(true);
  auto after = (*again)->SubmitGroup(e, bg);
  REQUIRE(after.ok());
  CHECK(after->policy_version() == "3");
  CHECK((*again)->GetPolicyVersion(bg)->trained_ids(0) == "d");
}

}  // namespace
}  // namespace crl::testing

namespace crl::testing {

TEST_CASE("crl-trainer killed with SIGKILL between checkpoints loses no acknowledged submission",
          "[integration][trainer]") {
  TempDir dir;
  const std::string model = MakePolicy(dir);
  const std::string out = dir.path() + "/out";
  // Large batches: nothing trains before the kill; no checkpoint is taken.
  std::vector<std::string> args = TrainerArgs(model, out);
  args.insert(args.end(), {"--groups_per_step=50", "--examples_per_step=50"});
  auto trainer = std::make_unique<ServiceProcess>(kBin + "/crl-trainer", args);
  REQUIRE(trainer->started());
  ClientOptions co;
  co.timeout = absl::Seconds(120);
  {
    auto client = GrpcTrainerClient::Create(trainer->grpc_address(), co);
    REQUIRE(client.ok());
    auto g = (*client)->SubmitGroup(Group("journaled-group", {1.0, 0.0, 0.5}), RequestContext::Background());
    REQUIRE(g.ok());
    CHECK(g->outcome() == v1::GROUP_OUTCOME_QUEUED);
    v1::SubmitExamplesRequest ex;
    auto* e = ex.add_examples();
    e->set_example_id("journaled-example");
    e->set_prompt("make relu faster");
    e->set_completion("return x.clamp_min(0)");
    auto accepted = (*client)->SubmitExamples(ex, RequestContext::Background());
    REQUIRE(accepted.ok());
    CHECK(accepted->accepted() == 1);
  }
  trainer->Signal(SIGKILL);
  trainer->Wait(30);
  CHECK_FALSE(fs::exists(out + "/checkpoints/latest"));

  // Restarted on the same out_dir: the journal brings both back, once.
  trainer = std::make_unique<ServiceProcess>(kBin + "/crl-trainer", args);
  REQUIRE(trainer->started());
  auto client = GrpcTrainerClient::Create(trainer->grpc_address(), co);
  REQUIRE(client.ok());
  // Submitted again (a client retrying): a duplicate, not trained twice.
  auto again = (*client)->SubmitGroup(Group("journaled-group", {1.0, 0.0, 0.5}), RequestContext::Background());
  REQUIRE(again.ok());
  CHECK(again->outcome() == v1::GROUP_OUTCOME_DUPLICATE);
  auto flushed = (*client)->Flush(RequestContext::Background());
  REQUIRE(flushed.ok());
  CHECK(flushed->groups() == 1);
  CHECK(flushed->examples() == 1);
  CHECK(flushed->version().step() >= 1);
}

}  // namespace crl::testing
