#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "lib/reward/names.h"
#include "lib/reward/rewards.h"

namespace crl::reward {
namespace {

v1::RewardResult R(v1::Verdict v, double speedup, v1::RewardPreset p,
                   std::vector<v1::Flag> flags = {}) {
  return ComputeReward({v, speedup, flags}, p);
}

TEST_CASE("infrastructure failures never become a reward", "[rewards]") {
  for (auto p : {v1::REWARD_PRESET_CUDA_L1, v1::REWARD_PRESET_SPEEDUP_BONUS,
                 v1::REWARD_PRESET_TIERED}) {
    auto r = R(v1::VERDICT_INFRA_ERROR, 0, p);
    CHECK(r.status() == v1::REWARD_STATUS_INFRA_RETRY);
    CHECK(R(v1::VERDICT_UNSPECIFIED, 0, p).status() == v1::REWARD_STATUS_INFRA_RETRY);
    // OK without a measured speedup is a measurement failure, not a zero.
    CHECK(R(v1::VERDICT_OK, 0, p).status() == v1::REWARD_STATUS_INFRA_RETRY);
    CHECK(R(v1::VERDICT_OK, std::numeric_limits<double>::quiet_NaN(), p).status() ==
          v1::REWARD_STATUS_INFRA_RETRY);
  }
}

TEST_CASE("trust flags withhold the reward; the no-kernel label does not", "[rewards]") {
  auto r = R(v1::VERDICT_OK, 5, v1::REWARD_PRESET_CUDA_L1, {v1::FLAG_SIDE_STREAM});
  CHECK(r.status() == v1::REWARD_STATUS_WITHHELD);
  CHECK(r.explanation().find("FLAG_SIDE_STREAM") != std::string::npos);
  r = R(v1::VERDICT_OK, 1.5, v1::REWARD_PRESET_CUDA_L1, {v1::FLAG_NO_CUSTOM_KERNEL});
  CHECK(r.status() == v1::REWARD_STATUS_OK);
}

TEST_CASE("CUDA-L1 preset: speedup minus one, clipped; incorrect is -1", "[rewards]") {
  CHECK(R(v1::VERDICT_OK, 1.5, v1::REWARD_PRESET_CUDA_L1).reward() == Approx(0.5));
  CHECK(R(v1::VERDICT_OK, 50, v1::REWARD_PRESET_CUDA_L1).reward() == Approx(3.0));
  CHECK(R(v1::VERDICT_OK, 0.5, v1::REWARD_PRESET_CUDA_L1).reward() == Approx(-0.5));
  CHECK(R(v1::VERDICT_WRONG_ANSWER, 0, v1::REWARD_PRESET_CUDA_L1).reward() == -1);
  CHECK(R(v1::VERDICT_COMPILE_ERROR, 0, v1::REWARD_PRESET_CUDA_L1).status() ==
        v1::REWARD_STATUS_OK);
}

TEST_CASE("speedup-bonus and tiered presets", "[rewards]") {
  CHECK(R(v1::VERDICT_OK, 2, v1::REWARD_PRESET_SPEEDUP_BONUS).reward() == Approx(2.3));
  CHECK(R(v1::VERDICT_OK, 100, v1::REWARD_PRESET_SPEEDUP_BONUS).reward() == Approx(10.3));
  CHECK(R(v1::VERDICT_TIMEOUT, 0, v1::REWARD_PRESET_SPEEDUP_BONUS).reward() == 0);
  CHECK(R(v1::VERDICT_WRONG_ANSWER, 0, v1::REWARD_PRESET_TIERED).reward() == -1);
  CHECK(R(v1::VERDICT_OK, 0.5, v1::REWARD_PRESET_TIERED).reward() == Approx(0.1));
  CHECK(R(v1::VERDICT_OK, 1.01, v1::REWARD_PRESET_TIERED).reward() == Approx(0.3));
  CHECK(R(v1::VERDICT_OK, 1.5, v1::REWARD_PRESET_TIERED).reward() == Approx(0.6));
  CHECK(R(v1::VERDICT_OK, 3, v1::REWARD_PRESET_TIERED).reward() == Approx(1.0));
}

TEST_CASE("a noisy measurement is rewarded at the end of its interval nearest 1", "[rewards]") {
  RewardInput in{v1::VERDICT_OK, 2.0, {v1::FLAG_NOISY}};
  // No interval: nothing to be conservative with.
  CHECK(ComputeReward(in, v1::REWARD_PRESET_CUDA_L1).status() == v1::REWARD_STATUS_WITHHELD);
  in.ci_low = 1.5;
  in.ci_high = 2.6;
  auto r = ComputeReward(in, v1::REWARD_PRESET_CUDA_L1);
  CHECK(r.status() == v1::REWARD_STATUS_OK);
  CHECK(r.reward() == Approx(0.5));  // 1.5 - 1, not 2.0 - 1
  CHECK_THAT(r.explanation(), Catch::Contains("noisy"));
  in.speedup = 0.5;
  in.ci_low = 0.3;
  in.ci_high = 0.7;
  CHECK(ComputeReward(in, v1::REWARD_PRESET_CUDA_L1).reward() == Approx(-0.3));  // 0.7 - 1
  in.speedup = 1.3;
  in.ci_low = 0.8;
  in.ci_high = 1.9;
  CHECK(ComputeReward(in, v1::REWARD_PRESET_CUDA_L1).reward() == Approx(0));  // straddles 1
  // With a flag that says it may cheat, nothing.
  in.flags.push_back(v1::FLAG_SIDE_STREAM);
  CHECK(ComputeReward(in, v1::REWARD_PRESET_CUDA_L1).status() == v1::REWARD_STATUS_WITHHELD);
}

TEST_CASE("an API request's parameters are the reward's; absent ones take the defaults", "[rewards]") {
  v1::ComputeRewardRequest r;
  r.set_verdict(v1::VERDICT_OK);
  r.set_speedup(9);
  r.set_preset(v1::REWARD_PRESET_CUDA_L1);
  CHECK(ComputeReward(r).reward() == Approx(3));  // the default clip
  r.mutable_params()->set_clip(1.5);
  CHECK(ComputeReward(r).reward() == Approx(1.5));
  r.set_verdict(v1::VERDICT_WRONG_ANSWER);
  CHECK(ComputeReward(r).reward() == Approx(-1));
  r.mutable_params()->set_incorrect_reward(0);  // zero is a value, not "absent"
  CHECK(ComputeReward(r).reward() == 0);
  r.set_preset(v1::REWARD_PRESET_SPEEDUP_BONUS);
  r.set_verdict(v1::VERDICT_OK);
  r.set_speedup(100);
  r.mutable_params()->set_speedup_cap(4);
  r.mutable_params()->set_correctness_bonus(1);
  CHECK(ComputeReward(r).reward() == Approx(5));
}

TEST_CASE("a flag raised by verification and by timing is listed once", "[rewards]") {
  // A reused output buffer: WRITE_AFTER_RETURN from verification (--cuda-l1
  // mode), then from the timed-output check.
  std::vector<std::string> names = {"WRITE_AFTER_RETURN", "NO_CUSTOM_KERNEL"};
  google::protobuf::RepeatedField<int> timed;
  timed.Add(v1::FLAG_WRITE_AFTER_RETURN);
  timed.Add(v1::FLAG_NOISY);
  timed.Add(v1::FLAG_NOISY);
  AddFlagNamesOnce(timed, &names);
  CHECK(names == std::vector<std::string>{"WRITE_AFTER_RETURN", "NO_CUSTOM_KERNEL", "NOISY"});
}

}  // namespace
}  // namespace crl::reward
