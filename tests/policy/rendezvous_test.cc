// The launcher's environment and the beats that name a rank that is gone
// (services/trainer/rendezvous.h); the process group itself is exercised by
// two crl-trainer processes in process_test.cc.
#include "services/trainer/rendezvous.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>

namespace crl::trainer {
namespace {

struct Env {
  std::map<std::string, std::string> vars;
  const char* operator()(const char* name) const {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  }
};

TEST_CASE("the launcher's variables place a rank as torchrun's do", "[trainer][rendezvous]") {
  Env env{{{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "trainer-0.ranks"},
           {"MASTER_PORT", "29500"}}};
  DistributedOptions o;
  REQUIRE(ApplyLauncherEnvironment(&o, env).ok());
  CHECK(o.rank == 3);
  CHECK(o.world_size == 4);
  CHECK(o.local_rank == 1);
  CHECK(o.store == "trainer-0.ranks:29500");

  SECTION("an explicit --dist_store is kept") {
    DistributedOptions f;
    f.store = "/shared/store";
    REQUIRE(ApplyLauncherEnvironment(&f, env).ok());
    CHECK(f.store == "/shared/store");
    CHECK(f.rank == 3);
  }
  SECTION("flags win: a world set on the command line ignores the environment") {
    DistributedOptions f;
    f.world_size = 2;
    f.rank = 1;
    f.store = "h:1";
    REQUIRE(ApplyLauncherEnvironment(&f, env).ok());
    CHECK(f.world_size == 2);
    CHECK(f.rank == 1);
    CHECK(f.store == "h:1");
  }
  SECTION("torchrun's agent store: every rank a client, keys per restart attempt") {
    CHECK_FALSE(o.launcher_hosts_store);  // no TORCHELASTIC_USE_AGENT_STORE: rank 0 serves it
    CHECK(o.store_prefix.empty());
    Env agent = env;
    agent.vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
    agent.vars["TORCHELASTIC_RESTART_COUNT"] = "2";
    DistributedOptions f;
    REQUIRE(ApplyLauncherEnvironment(&f, agent).ok());
    CHECK(f.launcher_hosts_store);
    CHECK(f.store_prefix == "/worker/attempt_2/");
    CHECK(f.store == "trainer-0.ranks:29500");
    agent.vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";  // c10d rendezvous: rank 0 serves it
    DistributedOptions c;
    REQUIRE(ApplyLauncherEnvironment(&c, agent).ok());
    CHECK_FALSE(c.launcher_hosts_store);
  }
  SECTION("no WORLD_SIZE, or a world of one: one process") {
    DistributedOptions f;
    REQUIRE(ApplyLauncherEnvironment(&f, Env{{{"RANK", "1"}}}).ok());
    CHECK(f.world_size == 1);
    CHECK(f.rank == 0);
    REQUIRE(ApplyLauncherEnvironment(&f, Env{{{"WORLD_SIZE", "1"}, {"RANK", "0"}}}).ok());
    CHECK(f.world_size == 1);
    CHECK(f.store.empty());
  }
}

TEST_CASE("a malformed launcher environment names the variable", "[trainer][rendezvous]") {
  auto error = [](std::map<std::string, std::string> vars) {
    DistributedOptions o;
    absl::Status s = ApplyLauncherEnvironment(&o, Env{std::move(vars)});
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(o.world_size == 1);  // nothing half-applied
    return std::string(s.message());
  };
  const std::map<std::string, std::string> good = {
      {"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}};
  auto without = [&](const std::string& name) {
    auto v = good;
    v.erase(name);
    return v;
  };
  auto with = [&](const std::string& name, const std::string& value) {
    auto v = good;
    v[name] = value;
    return v;
  };
  CHECK_THAT(error(without("RANK")), Catch::StartsWith("RANK: not set"));
  CHECK_THAT(error(without("MASTER_ADDR")), Catch::StartsWith("MASTER_ADDR: not set"));
  CHECK_THAT(error(without("MASTER_PORT")), Catch::StartsWith("MASTER_PORT: not set"));
  CHECK_THAT(error(with("RANK", "2")), Catch::Contains("RANK: '2' is not an integer in [0, 1]"));
  CHECK_THAT(error(with("WORLD_SIZE", "two")), Catch::StartsWith("WORLD_SIZE: 'two'"));
  CHECK_THAT(error(with("MASTER_PORT", "70000")), Catch::StartsWith("MASTER_PORT: '70000'"));
  CHECK_THAT(error(with("LOCAL_RANK", "-1")), Catch::StartsWith("LOCAL_RANK: '-1'"));
  auto agent = with("TORCHELASTIC_USE_AGENT_STORE", "True");
  agent["TORCHELASTIC_RESTART_COUNT"] = "x";
  CHECK_THAT(error(agent), Catch::StartsWith("TORCHELASTIC_RESTART_COUNT: 'x'"));
}

TEST_CASE("beats: a rank that stops is named, one that left or has not started is not",
          "[trainer][rendezvous]") {
  const absl::Time t0 = absl::UnixEpoch() + absl::Hours(1);
  PeerWatch watch(4, /*self=*/0);
  CHECK(watch.Stalled(t0, absl::Seconds(1)).empty());  // nothing read yet
  // Rank 3 has not beaten yet (still loading its model).
  watch.Observe({5, 5, 5, 0}, t0);
  for (int s = 1; s <= 10; ++s) {
    // Rank 1 beats on; rank 2 stops after 2 s; rank 0 is this one.
    watch.Observe({5, 5 + s, 5 + std::min(s, 2), 0}, t0 + absl::Seconds(s));
  }
  const absl::Time now = t0 + absl::Seconds(10);
  CHECK(watch.Stalled(now, absl::Seconds(9)).empty());
  CHECK(watch.Stalled(now, absl::Seconds(8)) == std::vector<int>{2});
  CHECK(watch.Describe({2}, now) == "rank 2 stopped beating 8.0 s ago");
  CHECK(watch.Describe({}, now).empty());

  SECTION("a rank that said goodbye is not gone") {
    watch.Observe({5, 16, PeerWatch::kLeft, 0}, now + absl::Seconds(1));
    CHECK(watch.Stalled(now + absl::Seconds(60), absl::Seconds(30)) == std::vector<int>{1});
  }
  SECTION("a rank that starts late counts from its first beat") {
    watch.Observe({5, 16, 7, 1}, now + absl::Seconds(1));
    CHECK(watch.Stalled(now + absl::Seconds(3), absl::Seconds(2.5)) == std::vector<int>{2});
    CHECK(watch.Stalled(now + absl::Seconds(3), absl::Seconds(1.5)) == std::vector<int>{1, 2, 3});
  }
}

}  // namespace
}  // namespace crl::trainer
