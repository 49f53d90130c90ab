// The trainer's arithmetic and mechanics on CPU: group advantages, one
// policy-gradient step's loss and gradients against the independent Python
// reference (full weights and LoRA with a KL term), the chunked log-softmax,
// packing, activation checkpointing, the intake's field-naming errors, and
// checkpoints that resume bit for bit.
#include "tests/support/torch_catch.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/file.h"
#include "lib/policy/bpe_trainer.h"
#include "lib/policy/logprobs.h"
#include "lib/policy/lora.h"
#include "lib/policy/safetensors.h"
#include "services/trainer/batch.h"
#include "services/trainer/intake.h"
#include "services/trainer/objective.h"
#include "services/trainer/trainer.h"
#include "tests/support/policy_test_util.h"

namespace crl::trainer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using policy::TempDir;

policy::ModelConfig Small(policy::Family family = policy::Family::kQwen2) {
  return policy::TinyConfig(family, 300, 128);
}

// A model directory: random weights, a BPE tokenizer trained here, ChatML.
void MakeModel(const std::string& dir, const policy::ModelConfig& config, uint64_t seed = 7) {
  auto model = policy::CausalLm::Init(config, seed, torch::kCPU, torch::kFloat32);
  REQUIRE(model.ok());
  REQUIRE((*model)->Save(dir).ok());
  policy::BpeTrainOptions bpe;
  bpe.vocab_size = config.vocab_size;
  auto tok = policy::TrainBpe({"def forward(self, x): return torch.relu(x) * 2",
                               "__global__ void add(float* a) { a[i] += 1; }"},
                              bpe);
  REQUIRE(tok.ok());
  REQUIRE(WriteStringToFile(dir + "/tokenizer.json", *tok).ok());
  REQUIRE(WriteStringToFile(dir + "/tokenizer_config.json", policy::ChatMlTokenizerConfig()).ok());
}

TrainerOptions Options(const std::string& model, const std::string& out) {
  TrainerOptions o;
  o.model_dir = model;
  o.out_dir = out;
  o.device = "cpu";
  o.optimizer.lr = 1e-2;
  o.optimizer.grad_clip = 0;
  return o;
}

// Two groups of sequences over the same prompts, with behaviour logprobs
// off the current policy so the ratio (and the clip) matter.
std::vector<TrainSequence> Batch(const std::vector<std::vector<double>>& rewards,
                                 const AdvantageOptions& adv, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<TrainSequence> batch;
  int g = 0;
  for (const auto& group : rewards) {
    std::vector<double> a = GroupAdvantages(group, adv);
    for (size_t i = 0; i < group.size(); ++i) {
      TrainSequence s;
      s.id = "g" + std::to_string(g);
      s.prompt = {static_cast<int>(10 + g), 20, 30 + static_cast<int>(g)};
      const int len = 2 + static_cast<int>(rng() % 4);
      for (int t = 0; t < len; ++t) s.completion.push_back(static_cast<int>(rng() % 300));
      s.reward = group[i];
      s.advantage = a[i];
      batch.push_back(s);
    }
    ++g;
  }
  return batch;
}

TEST_CASE("group advantages: GRPO, Dr. GRPO, CUDA-L1's clip, equal groups", "[trainer]") {
  AdvantageOptions grpo;
  grpo.clip = 0;
  std::vector<double> a = GroupAdvantages({1, 2, 3, 6}, grpo);
  // mean 3, sample std sqrt(14/3)
  const double sd = std::sqrt(14.0 / 3.0);
  REQUIRE(a.size() == 4);
  CHECK(a[0] == Approx(-2 / (sd + 1e-6)));
  CHECK(a[3] == Approx(3 / (sd + 1e-6)));
  AdvantageOptions dr = grpo;
  dr.normalize_std = false;
  CHECK((GroupAdvantages({1, 2, 3, 6}, dr) == std::vector<double>{-2, -1, 0, 3}));
  AdvantageOptions l1;  // clip 1.5
  a = GroupAdvantages({0, 0, 0, 0, 0, 10}, l1);  // mean 5/3, sample std sqrt(50/3)
  CHECK(a[5] == 1.5);                             // 2.04 before the clip
  CHECK(a[0] == Approx(-(5.0 / 3) / std::sqrt(50.0 / 3)).epsilon(1e-5));
  CHECK(GroupAdvantages({2, 2, 2}, l1).empty());
  CHECK(GroupAdvantages({2}, l1).empty());
}

TEST_CASE("learning rate: linear warm-up, cosine to the floor", "[trainer]") {
  OptimizerOptions o;
  o.lr = 1.0;
  o.warmup_steps = 4;
  o.total_steps = 14;
  o.min_lr_ratio = 0.1;
  CHECK(LearningRate(o, 0) == Approx(0.25));
  CHECK(LearningRate(o, 3) == Approx(1.0));
  CHECK(LearningRate(o, 4) == Approx(1.0));
  CHECK(LearningRate(o, 9) == Approx(0.1 + 0.9 * 0.5));
  CHECK(LearningRate(o, 14) == Approx(0.1));
  CHECK(LearningRate(o, 100) == Approx(0.1));
}

TEST_CASE("layout: weights sum to the batch loss across shards and micro-batches", "[trainer]") {
  AdvantageOptions adv;
  std::vector<TrainSequence> batch = Batch({{1, 2, 3}, {0, 5, 1, 2}}, adv, 1);
  for (Aggregation agg : {Aggregation::kTokenMean, Aggregation::kSequenceMean}) {
    double total = 0;
    for (int rank = 0; rank < 3; ++rank) {
      LayoutOptions o;
      o.micro_batch_tokens = 12;
      o.aggregation = agg;
      for (const MicroBatch& mb : LayOut(batch, Shard(batch.size(), rank, 3), o)) {
        total += mb.weights.sum().item<double>();
        // Each trained token's position predicts it.
        for (int64_t k = 0; k < mb.targets.size(0); ++k) {
          const int64_t p = mb.positions[k].item<int64_t>() + 1;
          CHECK(mb.ids.view({-1})[p].item<int64_t>() == mb.targets[k].item<int64_t>());
        }
      }
    }
    CHECK(total == Approx(1.0));
  }
  LayoutOptions packed;
  packed.pack = true;
  packed.max_seq_len = 16;
  auto mbs = LayOut(batch, Shard(batch.size(), 0, 1), packed);
  int64_t rows = 0;
  for (const auto& mb : mbs) rows += mb.ids.size(0);
  CHECK(rows < static_cast<int64_t>(batch.size()));  // several sequences share rows
}

TEST_CASE("chunked log-softmax equals the plain one, values and gradients", "[trainer][policy]") {
  torch::manual_seed(3);
  torch::Tensor h = torch::randn({7, 16}, torch::kFloat64).requires_grad_(true);
  torch::Tensor w = torch::randn({50, 16}, torch::kFloat64).requires_grad_(true);
  torch::Tensor targets = torch::randint(0, 50, {7}, torch::kLong);
  torch::Tensor g = torch::randn({7}, torch::kFloat64);
  torch::Tensor plain = torch::log_softmax(torch::matmul(h, w.t()), -1).gather(1, targets.unsqueeze(1)).squeeze(1);
  auto grads = torch::autograd::grad({(plain * g).sum()}, {h, w});
  for (int64_t chunk : {int64_t{1}, int64_t{3}, int64_t{0}}) {
    CAPTURE(chunk);
    policy::LogprobOptions lo;
    lo.chunk_rows = chunk;
    policy::ChunkedLogprobs c = policy::ChunkedTokenLogprobs(h, w, targets, lo);
    CHECK(torch::allclose(c.logprobs.to(torch::kFloat64), plain, 1e-6, 1e-6));
    auto ours = torch::autograd::grad({(c.logprobs.to(torch::kFloat64) * g).sum()}, {h, w});
    CHECK(torch::allclose(ours[0], grads[0], 1e-5, 1e-6));
    CHECK(torch::allclose(ours[1], grads[1], 1e-5, 1e-6));
    torch::Tensor p = torch::softmax(torch::matmul(h, w.t()), -1);
    CHECK(torch::allclose(c.entropy.to(torch::kFloat64), -(p * p.log()).sum(1), 1e-5, 1e-6));
  }
  // Without the entropy: the same log-probabilities, no entropy tensor.
  policy::LogprobOptions no_entropy;
  no_entropy.entropy = false;
  policy::ChunkedLogprobs bare = policy::ChunkedTokenLogprobs(h, w, targets, no_entropy);
  CHECK(torch::allclose(bare.logprobs.to(torch::kFloat64), plain, 1e-6, 1e-6));
  CHECK_FALSE(bare.entropy.defined());
}

TEST_CASE("packed rows give each sequence its own logits", "[trainer][policy]") {
  auto model = policy::CausalLm::Init(Small(policy::Family::kQwen3), 5, torch::kCPU, torch::kFloat32);
  REQUIRE(model.ok());
  policy::CausalLm& m = **model;
  // Two sequences packed in one row vs each alone.
  torch::Tensor a = torch::tensor({5, 9, 13, 2}, torch::kLong), b = torch::tensor({7, 8, 1}, torch::kLong);
  policy::ForwardOptions packed;
  packed.segment_ids = torch::tensor({{1, 1, 1, 1, 2, 2, 2, 0}}, torch::kLong);
  torch::NoGradGuard no_grad;
  torch::Tensor row = torch::cat({a, b, torch::zeros({1}, torch::kLong)}).unsqueeze(0);
  torch::Tensor hp = m.Hidden(row, packed);
  torch::Tensor ha = m.Hidden(a.unsqueeze(0), {}), hb = m.Hidden(b.unsqueeze(0), {});
  CHECK(torch::allclose(hp.narrow(1, 0, 4), ha, 1e-5, 1e-5));
  CHECK(torch::allclose(hp.narrow(1, 4, 3), hb, 1e-5, 1e-5));
}

TEST_CASE("activation checkpointing gives the same gradients", "[trainer][policy]") {
  std::vector<std::vector<torch::Tensor>> grads;
  for (bool checkpoint : {false, true}) {
    auto model = policy::CausalLm::Init(Small(), 5, torch::kCPU, torch::kFloat32);
    REQUIRE(model.ok());
    policy::ForwardOptions o;
    o.checkpoint_layers = checkpoint;
    torch::Tensor ids = torch::tensor({{3, 4, 5, 6, 7, 8}}, torch::kLong);
    torch::Tensor h = (*model)->Hidden(ids, o);
    (h.pow(2).sum()).backward();
    std::vector<torch::Tensor> g;
    for (auto& [name, p] : (*model)->NamedParameters()) {
      g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));  // lm_head: unused
    }
    grads.push_back(g);
  }
  REQUIRE(grads[0].size() == grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i) CHECK(torch::allclose(grads[0][i], grads[1][i], 1e-5, 1e-6));
}

// Runs the reference's GRPO objective on `batch` and compares loss and
// gradients with the trainer's.
void CompareWithReference(Trainer& t, const std::string& model_dir, const std::string& adapter,
                          const std::vector<TrainSequence>& batch, const TrainerOptions& o,
                          const AdvantageOptions& adv) {
  json seqs = json::array();
  std::map<std::string, int> group_of;
  for (const auto& s : batch) {
    const int g = group_of.emplace(s.id, static_cast<int>(group_of.size())).first->second;
    seqs.push_back({{"prompt", s.prompt}, {"completion", s.completion}, {"old", s.old_logprobs},
                    {"group", g}, {"reward", s.reward}});
  }
  json spec = {{"sequences", seqs},
               {"normalize_std", adv.normalize_std},
               {"advantage_clip", adv.clip},
               {"clip_low", o.policy_loss.clip_low},
               {"clip_high", o.policy_loss.clip_high},
               {"kl_coef", o.policy_loss.kl_coef},
               {"aggregation", AggregationName(o.aggregation)}};
  json input = {{"grpo", spec}};
  if (!adapter.empty()) input["lora"] = adapter;
  auto ref = policy::RunReference(model_dir, input);
  REQUIRE(ref.ok());
  auto stats = t.Gradients(batch, Objective::kPolicyGradient);
  REQUIRE(stats.ok());
  INFO("loss: ours " << stats->loss << ", reference " << (*ref)["loss"].get<double>());
  CHECK(stats->loss == Approx((*ref)["loss"].get<double>()).epsilon(1e-5).margin(1e-7));
  CHECK(stats->clip_fraction > 0);  // the clip was exercised
  int compared = 0;
  for (const auto& [name, p] : t.Trainable()) {
    INFO(name);
    REQUIRE((*ref)["grads"].contains(name));
    std::vector<double> want = (*ref)["grads"][name].get<std::vector<double>>();
    torch::Tensor ours = p.grad().to(torch::kFloat64).reshape({-1});
    torch::Tensor theirs = torch::tensor(want, torch::kFloat64);
    const double scale = std::max(1e-6, theirs.abs().max().item<double>());
    CHECK((ours - theirs).abs().max().item<double>() / scale < 1e-4);
    ++compared;
  }
  CHECK(compared > 0);
}

TEST_CASE("one GRPO step's loss and gradients match the reference (full weights)", "[trainer][reference]") {
  TempDir dir;
  const std::string model = dir.path() + "/model";
  MakeModel(model, Small(policy::Family::kQwen2));
  TrainerOptions o = Options(model, dir.path() + "/out");
  o.aggregation = Aggregation::kSequenceMean;
  o.policy_loss.clip_low = 0.1;
  o.policy_loss.clip_high = 0.15;
  auto t = Trainer::Create(o, RealClock::Get(), nullptr);
  REQUIRE(t.ok());
  AdvantageOptions adv;
  adv.normalize_std = true;
  adv.clip = 1.0;
  std::vector<TrainSequence> batch = Batch({{0.1, 0.9, 0.4}, {1.5, 0.0, 0.2, 0.7}}, adv, 2);
  auto current = (*t)->Logprobs(batch);
  REQUIRE(current.ok());
  std::mt19937_64 rng(9);
  for (size_t i = 0; i < batch.size(); ++i) {  // off-policy behaviour: ratios around 1 +- 0.3
    for (float lp : (*current)[i]) {
      batch[i].old_logprobs.push_back(lp + 0.3f * (static_cast<float>(rng() % 1000) / 500.0f - 1.0f));
    }
  }
  CompareWithReference(**t, model, "", batch, o, adv);
}

TEST_CASE("one GRPO step with LoRA and a KL term matches the reference", "[trainer][reference]") {
  TempDir dir;
  const std::string model = dir.path() + "/model";
  MakeModel(model, Small(policy::Family::kLlama));
  TrainerOptions o = Options(model, dir.path() + "/out");
  o.lora = true;
  o.lora_config.rank = 4;
  o.lora_config.targets = {"q_proj", "v_proj", "up_proj"};
  o.policy_loss.kl_coef = 0.2;
  auto t = Trainer::Create(o, RealClock::Get(), nullptr);
  REQUIRE(t.ok());
  {
    torch::NoGradGuard no_grad;  // B != 0: the policy differs from the reference
    for (auto& [name, p] : (*t)->Trainable()) p.normal_(0, 0.1);
  }
  const std::string adapter = dir.path() + "/adapter";
  REQUIRE(policy::SaveLoraAdapter((*t)->model(), o.lora_config, adapter, model).ok());
  AdvantageOptions adv;
  std::vector<TrainSequence> batch = Batch({{0.0, 1.0, 2.0, 0.5}, {3.0, 1.0}}, adv, 4);
  auto current = (*t)->Logprobs(batch);
  REQUIRE(current.ok());
  for (size_t i = 0; i < batch.size(); ++i) {
    for (size_t j = 0; j < (*current)[i].size(); ++j) {
      batch[i].old_logprobs.push_back((*current)[i][j] + ((i + j) % 2 ? 0.25f : -0.25f));
    }
  }
  CompareWithReference(**t, model, adapter, batch, o, adv);
}

TEST_CASE("training lowers the loss and checkpoints resume bit for bit", "[trainer]") {
  TempDir dir;
  const std::string model = dir.path() + "/model";
  MakeModel(model, Small(policy::Family::kQwen3));
  AdvantageOptions adv;
  std::vector<std::vector<TrainSequence>> batches;
  for (int i = 0; i < 6; ++i) batches.push_back(Batch({{0, 1, 2}, {2, 0, 1}}, adv, 100 + i));
  auto options = [&](const std::string& out) {
    TrainerOptions o = Options(model, dir.path() + out);
    o.lora = true;
    o.lora_config.dropout = 0.2;  // the RNG state matters
    o.lora_config.targets = {"q_proj", "k_proj", "v_proj", "o_proj", "down_proj"};
    o.optimizer.warmup_steps = 2;
    o.optimizer.total_steps = 6;
    o.updates_per_batch = 2;
    o.recompute_old_logprobs = true;
    return o;
  };
  auto weights = [](Trainer& t) {
    std::vector<torch::Tensor> out;
    for (auto& [name, p] : t.Trainable()) out.push_back(p.detach().clone());
    return out;
  };
  // Straight through.
  auto a = Trainer::Create(options("/a"), RealClock::Get(), nullptr);
  REQUIRE(a.ok());
  for (const auto& b : batches) REQUIRE((*a)->Train(b, Objective::kPolicyGradient).ok());
  CHECK((*a)->step() == 12);
  // Three batches, a checkpoint, a new trainer resumed from it, the rest.
  {
    auto b = Trainer::Create(options("/b"), RealClock::Get(), nullptr);
    REQUIRE(b.ok());
    for (int i = 0; i < 3; ++i) REQUIRE((*b)->Train(batches[i], Objective::kPolicyGradient).ok());
    REQUIRE((*b)->SaveCheckpoint({{"cursor", 3}}).ok());
    REQUIRE((*b)->Train(batches[3], Objective::kPolicyGradient).ok());  // lost in the "crash"
  }
  auto c = Trainer::Create(options("/b"), RealClock::Get(), nullptr);
  REQUIRE(c.ok());
  auto extra = (*c)->Resume();
  REQUIRE(extra.ok());
  CHECK((*extra)["cursor"] == 3);
  CHECK((*c)->step() == 6);
  for (int i = (*extra)["cursor"].get<int>(); i < 6; ++i) {
    REQUIRE((*c)->Train(batches[i], Objective::kPolicyGradient).ok());
  }
  auto wa = weights(**a), wc = weights(**c);
  REQUIRE(wa.size() == wc.size());
  for (size_t i = 0; i < wa.size(); ++i) CHECK(torch::equal(wa[i], wc[i]));
  // A wrong configuration cannot resume it.
  TrainerOptions full = options("/b");
  full.lora = false;
  auto d = Trainer::Create(full, RealClock::Get(), nullptr);
  REQUIRE(d.ok());
  CHECK((*d)->Resume().status().code() == absl::StatusCode::kFailedPrecondition);

  // Supervised training on a fixed example lowers its loss.
  auto s = Trainer::Create(Options(model, dir.path() + "/sft"), RealClock::Get(), nullptr);
  REQUIRE(s.ok());
  std::vector<TrainSequence> sft = {batches[0][0], batches[0][1]};
  double first = 0, last = 0;
  for (int i = 0; i < 8; ++i) {
    auto st = (*s)->Train(sft, Objective::kSupervised);
    REQUIRE(st.ok());
    if (i == 0) first = st->loss;
    last = st->loss;
  }
  CHECK(last < first * 0.8);
  // Publishing: a full model directory that loads and has the new weights.
  auto published = (*s)->Publish();
  REQUIRE(published.ok());
  CHECK(published->version == 8);
  auto loaded = policy::CausalLm::Load(published->path, torch::kCPU, torch::kFloat32);
  REQUIRE(loaded.ok());
  CHECK(fs::exists(published->path + "/tokenizer.json"));
}

TEST_CASE("phases: fresh optimizer state and their own schedule; snapshots restore the weights", "[trainer]") {
  TempDir dir;
  const std::string model = dir.path() + "/model";
  MakeModel(model, Small());
  AdvantageOptions adv;
  const auto sft = Batch({{0, 1, 2}}, adv, 1);
  const auto rl = Batch({{0, 1, 2}, {2, 0, 1}}, adv, 2);
  TrainerOptions o = Options(model, dir.path() + "/out");
  o.optimizer.warmup_steps = 3;  // the trainer's own schedule: warm-up over 3 steps
  OptimizerOptions phase = o.optimizer;
  phase.lr = 5e-3;
  phase.warmup_steps = 0;
  phase.total_steps = 0;
  auto weights = [](Trainer& t) {
    std::vector<torch::Tensor> out;
    for (auto& [name, p] : t.Trainable()) out.push_back(p.detach().clone());
    return out;
  };
  // A: SFT steps, a snapshot, then an RL phase.
  auto a = Trainer::Create(o, RealClock::Get(), nullptr);
  REQUIRE(a.ok());
  for (int i = 0; i < 2; ++i) REQUIRE((*a)->Train(sft, Objective::kSupervised).ok());
  REQUIRE((*a)->SaveSnapshot("sft").ok());
  (*a)->BeginPhase("rl", phase);
  auto st = (*a)->Train(rl, Objective::kPolicyGradient);
  REQUIRE(st.ok());
  CHECK(st->lr == Approx(5e-3));  // the phase's schedule from its first step, not the trainer's warm-up
  CHECK((*a)->phase().id == "rl");
  CHECK((*a)->phase().steps == 1);
  CHECK((*a)->step() == 3);
  // B: a fresh trainer on the same out_dir, the snapshot restored (a new
  // version), the same phase: the same weights as A, bit for bit (A's SFT
  // moments were dropped when its phase began).
  auto b = Trainer::Create(o, RealClock::Get(), nullptr);
  REQUIRE(b.ok());
  REQUIRE((*b)->RestoreSnapshot("sft").ok());
  CHECK((*b)->step() == 1);
  (*b)->BeginPhase("rl", phase);
  REQUIRE((*b)->Train(rl, Objective::kPolicyGradient).ok());
  auto wa = weights(**a), wb = weights(**b);
  REQUIRE(wa.size() == wb.size());
  for (size_t i = 0; i < wa.size(); ++i) CHECK(torch::equal(wa[i], wb[i]));
  // A checkpoint keeps the phase.
  REQUIRE((*a)->SaveCheckpoint(json::object()).ok());
  auto c = Trainer::Create(o, RealClock::Get(), nullptr);
  REQUIRE(c.ok());
  REQUIRE((*c)->Resume().ok());
  CHECK((*c)->phase().id == "rl");
  CHECK((*c)->phase().steps == 1);
  CHECK((*c)->phase().optimizer.lr == Approx(5e-3));
  CHECK((*c)->phase().optimizer.warmup_steps == 0);
  // Names are checked; a missing snapshot is named.
  CHECK((*a)->SaveSnapshot("../up").code() == absl::StatusCode::kInvalidArgument);
  absl::Status missing = (*a)->RestoreSnapshot("nope");
  CHECK(missing.code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(missing.message()), Catch::Contains("snapshot 'nope'"));
}

TEST_CASE("intake: errors name the field; groups that teach nothing are outcomes", "[trainer]") {
  TempDir dir;
  const std::string model = dir.path() + "/model";
  MakeModel(model, Small());
  auto tok = policy::LoadTokenizer(model);
  REQUIRE(tok.ok());
  IntakeOptions io;
  io.vocab_size = 300;
  io.max_seq_len = 64;
  Intake intake(tok->get(), policy::LoadChatFormat(model), io);
  auto ok_reward = [](double r) {
    v1::RewardResult x;
    x.set_status(v1::REWARD_STATUS_OK);
    x.set_reward(r);
    return x;
  };
  v1::SubmitGroupRequest good;
  good.set_prompt("make relu faster");
  for (int i = 0; i < 3; ++i) {
    auto* c = good.add_completions();
    c->add_token_ids(5 + i);
    c->add_token_ids(6);
    c->add_behaviour_logprobs(-1.0f);
    c->add_behaviour_logprobs(-2.0f);
    *c->mutable_reward() = ok_reward(i);
  }
  auto g = intake.Group(good);
  REQUIRE(g.ok());
  CHECK(g->outcome == v1::GROUP_OUTCOME_QUEUED);
  CHECK(g->sequences.size() == 3);
  CHECK(g->sequences[0].prompt.front() == (*tok)->TokenId("<|im_start|>").value());
  CHECK(g->id.rfind("sha256:", 0) == 0);

  auto error = [&](const v1::SubmitGroupRequest& r) {
    auto e = intake.Group(r);
    REQUIRE_FALSE(e.ok());
    CHECK(e.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(e.status().message());
  };
  v1::SubmitGroupRequest r = good;
  r.mutable_completions(1)->set_token_ids(1, 300);
  CHECK_THAT(error(r), Catch::StartsWith("completions[1].token_ids[1]: 300 is outside the vocabulary"));
  r = good;
  r.mutable_completions(2)->add_behaviour_logprobs(-1.0f);
  CHECK_THAT(error(r), Catch::StartsWith("completions[2].behaviour_logprobs: 3 values for 2 tokens"));
  r = good;
  r.mutable_completions(0)->set_behaviour_logprobs(0, std::nanf(""));
  CHECK_THAT(error(r), Catch::StartsWith("completions[0].behaviour_logprobs[0]"));
  r = good;
  r.mutable_completions(0)->mutable_reward()->set_reward(std::numeric_limits<double>::infinity());
  CHECK_THAT(error(r), Catch::StartsWith("completions[0].reward.reward: inf is not finite"));
  r = good;
  r.mutable_completions()->DeleteSubrange(1, 2);
  CHECK_THAT(error(r), Catch::StartsWith("completions: a group needs at least two (got 1)"));
  r = good;
  r.mutable_completions(1)->clear_token_ids();
  r.mutable_completions(1)->clear_behaviour_logprobs();
  CHECK_THAT(error(r), Catch::StartsWith("completions[1].token_ids: empty completion"));
  r = good;
  for (int i = 0; i < 70; ++i) r.mutable_completions(0)->add_token_ids(7);
  r.mutable_completions(0)->clear_behaviour_logprobs();
  CHECK_THAT(error(r), Catch::StartsWith("completions[0]: prompt + completion is"));
  r = good;
  r.set_policy_version("v3");
  CHECK_THAT(error(r), Catch::StartsWith("policy_version: 'v3'"));
  r = good;
  r.clear_prompt();
  CHECK_THAT(error(r), Catch::StartsWith("prompt: empty"));

  // Infrastructure failures are left out, never zero; then too few remain.
  r = good;
  r.mutable_completions(0)->mutable_reward()->set_status(v1::REWARD_STATUS_INFRA_RETRY);
  r.mutable_completions(0)->mutable_reward()->set_reward(0);
  auto skipped = intake.Group(r);
  REQUIRE(skipped.ok());
  CHECK(skipped->used == 2);
  CHECK(skipped->outcome == v1::GROUP_OUTCOME_QUEUED);
  r.mutable_completions(1)->mutable_reward()->set_status(v1::REWARD_STATUS_WITHHELD);
  CHECK(intake.Group(r)->outcome == v1::GROUP_OUTCOME_SKIPPED_TOO_FEW);
  r = good;
  for (auto& c : *r.mutable_completions()) *c.mutable_reward() = ok_reward(1.0);
  CHECK(intake.Group(r)->outcome == v1::GROUP_OUTCOME_SKIPPED_EQUAL_REWARDS);

  // Examples: text gets the end-of-turn token; errors name the example.
  v1::SubmitExamplesRequest ex;
  auto* e = ex.add_examples();
  e->set_prompt("speed up relu");
  e->set_completion("return x");
  auto seqs = intake.Examples(ex);
  REQUIRE(seqs.ok());
  CHECK((*seqs)[0].completion.back() == (*tok)->TokenId("<|im_end|>").value());
  ex.add_examples()->set_prompt("no completion");
  CHECK_THAT(std::string(intake.Examples(ex).status().message()),
             Catch::StartsWith("examples[1].completion_token_ids: empty completion"));

  // Chat messages are rendered as the sampler renders them (system + user,
  // the assistant header opened); the text prompt is then ignored.
  v1::SubmitExamplesRequest chat;
  auto* c = chat.add_examples();
  c->set_prompt("ignored");
  c->set_completion("return x");
  auto* sys = c->add_messages();
  sys->set_role("system");
  sys->set_content("go");
  auto* user = c->add_messages();
  user->set_role("user");
  user->set_content("relu");
  auto rendered = intake.Examples(chat);
  REQUIRE(rendered.ok());
  auto format = policy::LoadChatFormat(model);
  REQUIRE(format.ok());
  auto expected = policy::EncodeChat(**tok, *format, {{"system", "go"}, {"user", "relu"}}, true);
  REQUIRE(expected.ok());
  CHECK((*rendered)[0].prompt == *expected);
}

}  // namespace
}  // namespace crl::trainer
