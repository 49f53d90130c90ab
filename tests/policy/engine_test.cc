// The generation engine and the in-process sampler: continuous batching
// across concurrent requests, seeded sampling that does not depend on the
// batch, samples of one prompt sharing its prefill, cancellation, stop
// strings, the sampler's log-probabilities equal to the trainer's for the
// same sequence and weights, and a hot swap under load that loses nothing.
#include "tests/support/torch_catch.h"

#include <atomic>
#include <numeric>
#include <set>
#include <thread>

#include "absl/synchronization/notification.h"
#include "common/file.h"
#include "lib/policy/bpe_trainer.h"
#include "lib/policy/decode_graphs.h"
#include "lib/policy/engine.h"
#include "lib/policy/logprobs.h"
#include "lib/policy/lora.h"
#include "services/sampler/local_backend.h"
#include "services/sampler/sampler_metrics.h"
#include "services/trainer/trainer.h"
#include "tests/support/policy_test_util.h"

namespace crl::policy {
namespace {

ModelConfig Config() { return TinyConfig(Family::kQwen2, 300, 256, 64); }

std::shared_ptr<CausalLm> Model(uint64_t seed = 3) {
  auto m = CausalLm::Init(Config(), seed, torch::kCPU, torch::kFloat32);
  REQUIRE(m.ok());
  return std::shared_ptr<CausalLm>(std::move(*m));
}

void WriteModel(const std::string& dir, uint64_t seed) {
  auto m = CausalLm::Init(Config(), seed, torch::kCPU, torch::kFloat32);
  REQUIRE(m.ok());
  REQUIRE((*m)->Save(dir).ok());
  BpeTrainOptions bpe;
  bpe.vocab_size = 300;
  REQUIRE(WriteStringToFile(dir + "/tokenizer.json",
                            TrainBpe({"def forward(self, x): return torch.relu(x)"}, bpe).value())
              .ok());
  REQUIRE(WriteStringToFile(dir + "/tokenizer_config.json", ChatMlTokenizerConfig()).ok());
}

// An in-process sampler of `model_dir` on the CPU: four slots of 128 positions.
std::unique_ptr<sampler::LocalBackend> CpuBackend(const std::string& model_dir, sampler::SamplerMetrics* metrics) {
  sampler::LocalBackendOptions o;
  o.model_dir = model_dir;
  o.device = "cpu";
  o.engine = {4, 128};
  auto backend = sampler::LocalBackend::Create(o, metrics);
  REQUIRE(backend.ok());
  return std::move(*backend);
}

GenerationRequest Request(std::vector<int> prompt, int n, double temperature, uint64_t seed, int max_new = 12) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.n = n;
  r.params.temperature = temperature;
  r.params.top_p = 0.9;
  r.params.top_k = 40;
  r.params.seed = seed;
  r.params.max_new_tokens = max_new;
  return r;
}

TEST_CASE("engine: concurrent requests share the batch; seeds do not depend on it", "[engine]") {
  auto engine = GenerationEngine::Start(Model(), {8, 128});
  REQUIRE(engine.ok());
  const GenerationRequest probe = Request({5, 6, 7, 8}, 3, 1.0, 77);
  auto alone = (*engine)->Generate(probe, RequestContext::Background());
  REQUIRE(alone.ok());
  REQUIRE(alone->size() == 3);
  CHECK((*alone)[0].tokens != (*alone)[1].tokens);  // seeds 77 and 78 differ

  // The same request among others, all submitted at once.
  std::atomic<int> most{0};
  std::atomic<bool> running{true};
  std::thread monitor([&] {
    while (running) {
      most = std::max(most.load(), (*engine)->active());
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  std::vector<absl::StatusOr<std::vector<Generation>>> results(4, absl::UnknownError(""));
  std::vector<std::thread> threads;
  // All four submit together, and the others decode 100 tokens, so that on a
  // loaded machine (CI runs test binaries side by side) one request is not
  // over before the last thread has started: with 40 tokens and no start
  // line, a CI run once saw at most two at a time.
  std::atomic<int> ready{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      GenerationRequest r = i == 2 ? probe : Request({9, 10 + i}, 1 + i % 2, 1.0, 1000 + i, 100);
      ++ready;
      while (ready.load() < 4) std::this_thread::yield();
      results[i] = (*engine)->Generate(r, RequestContext::Background());
    });
  }
  for (auto& t : threads) t.join();
  running = false;
  monitor.join();
  for (auto& r : results) REQUIRE(r.ok());
  CHECK(most.load() >= 3);  // sequences of several requests were decoded together
  for (int k = 0; k < 3; ++k) {
    CHECK((*results[2])[k].tokens == (*alone)[k].tokens);
    for (size_t t = 0; t < (*alone)[k].logprobs.size(); ++t) {
      CHECK((*results[2])[k].logprobs[t] == Approx((*alone)[k].logprobs[t]).margin(1e-5));
    }
  }
  CHECK((*engine)->tokens_generated() > 0);
}

TEST_CASE("engine: samples of one prompt share its prefill; logprobs are the model's", "[engine]") {
  auto model = Model(4);
  auto engine = GenerationEngine::Start(model, {6, 64});
  REQUIRE(engine.ok());
  auto greedy = (*engine)->Generate(Request({11, 12, 13}, 3, 0.0, 0), RequestContext::Background());
  auto one = (*engine)->Generate(Request({11, 12, 13}, 1, 0.0, 0), RequestContext::Background());
  REQUIRE(greedy.ok());
  REQUIRE(one.ok());
  for (const auto& g : *greedy) CHECK(g.tokens == (*one)[0].tokens);
  auto sampled = (*engine)->Generate(Request({11, 12, 13}, 2, 1.0, 5), RequestContext::Background());
  REQUIRE(sampled.ok());
  torch::NoGradGuard no_grad;
  for (const auto& g : *sampled) {  // the second sample decodes from a copied prefix
    std::vector<int64_t> seq = {11, 12, 13};
    for (int t : g.tokens) seq.push_back(t);
    torch::Tensor ids = torch::tensor(seq, torch::kLong).unsqueeze(0);
    torch::Tensor lp = TokenLogprobs(model->Forward(ids), ids);
    for (size_t i = 0; i < g.logprobs.size(); ++i) {
      CHECK(g.logprobs[i] == Approx(lp[0][2 + i].item<float>()).margin(1e-4));
    }
  }
}

TEST_CASE("engine: cancellation frees the slots; stop callbacks and bad requests", "[engine]") {
  auto engine = GenerationEngine::Start(Model(), {2, 256});
  REQUIRE(engine.ok());
  RequestContext ctx;
  // Cancelled once its second token is out; from then on each token takes a
  // millisecond, so the waiting caller (which looks every 50 ms) sees the
  // cancellation long before the 250 tokens are done.
  GenerationRequest long_one = Request({1, 2}, 2, 1.0, 1, 250);
  long_one.stop = [&ctx](const std::vector<int>& tokens) {
    if (tokens.size() == 2) ctx.Cancel();
    if (tokens.size() >= 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return false;
  };
  auto cancelled = (*engine)->Generate(long_one, ctx);
  CHECK(cancelled.status().code() == absl::StatusCode::kCancelled);
  // Both slots are free again: a request of two runs.
  GenerationRequest stopper = Request({1, 2}, 2, 1.0, 9, 50);
  stopper.stop = [](const std::vector<int>& tokens) { return tokens.size() == 3; };
  auto stopped = (*engine)->Generate(stopper, RequestContext::Background());
  REQUIRE(stopped.ok());
  for (const auto& g : *stopped) {
    CHECK(g.tokens.size() == 3);
    CHECK(g.finish_reason == "stop");
  }
  CHECK((*engine)->Generate(Request({1, 299 + 1}, 1, 1, 1), RequestContext::Background()).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK((*engine)->Generate(Request({1}, 3, 1, 1), RequestContext::Background()).status().code() ==
        absl::StatusCode::kInvalidArgument);  // n above max_batch
  CHECK((*engine)->Generate(Request({1}, 1, 1, 1, 256), RequestContext::Background()).status().code() ==
        absl::StatusCode::kInvalidArgument);  // beyond max_len
}

TEST_CASE("engine: top tokens are the model's most likely; on_token sees each token as it comes", "[engine]") {
  auto model = Model(5);
  auto engine = GenerationEngine::Start(model, {4, 64});
  REQUIRE(engine.ok());
  GenerationRequest r = Request({21, 22, 23}, 2, 1.0, 8, 10);
  r.top_logprobs = 4;
  absl::Mutex mu;
  std::vector<std::vector<size_t>> seen(2);  // tokens so far, per call
  r.on_token = [&](int sample, const Generation& so_far) {
    absl::MutexLock lock(&mu);
    seen[sample].push_back(so_far.tokens.size());
    CHECK(so_far.top_logprobs.size() == so_far.tokens.size());
  };
  auto out = (*engine)->Generate(r, RequestContext::Background());
  REQUIRE(out.ok());
  torch::NoGradGuard no_grad;
  for (int k = 0; k < 2; ++k) {
    const Generation& g = (*out)[k];
    REQUIRE(g.top_logprobs.size() == g.tokens.size());
    std::vector<size_t> expected(g.tokens.size());
    std::iota(expected.begin(), expected.end(), 1);
    CHECK(seen[k] == expected);  // once per token, in order
    // The model's own distribution at each position, computed apart.
    std::vector<int64_t> seq = {21, 22, 23};
    for (int t : g.tokens) seq.push_back(t);
    torch::Tensor logp = torch::log_softmax(model->Forward(torch::tensor(seq, torch::kLong).unsqueeze(0))[0], -1);
    for (size_t i = 0; i < g.tokens.size(); ++i) {
      auto [values, ids] = logp[2 + i].topk(4);
      REQUIRE(g.top_logprobs[i].size() == 4);
      for (int j = 0; j < 4; ++j) {
        CHECK(g.top_logprobs[i][j].token == ids[j].item<int64_t>());
        CHECK(g.top_logprobs[i][j].logprob == Approx(values[j].item<float>()).margin(1e-4));
      }
      CHECK(g.logprobs[i] <= g.top_logprobs[i][0].logprob + 1e-5f);
    }
  }
  GenerationRequest none = Request({21, 22, 23}, 1, 1.0, 8, 10);
  auto plain = (*engine)->Generate(none, RequestContext::Background());
  REQUIRE(plain.ok());
  CHECK((*plain)[0].top_logprobs.empty());
  CHECK((*plain)[0].tokens == (*out)[0].tokens);  // asking for top tokens changes no sample
  none.top_logprobs = kMaxTopLogprobs + 1;
  CHECK((*engine)->Generate(none, RequestContext::Background()).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("decode graphs: a padded, bucketed step gives the exact step's logits", "[engine]") {
  CHECK(DecodeGraphs::RowBucket(1, 8) == 1);
  CHECK(DecodeGraphs::RowBucket(3, 8) == 4);
  CHECK(DecodeGraphs::RowBucket(5, 6) == 6);  // never beyond max_batch
  CHECK(DecodeGraphs::ViewBucket(10, 64) == 64);
  CHECK(DecodeGraphs::ViewBucket(10, 4096) == 256);
  CHECK(DecodeGraphs::ViewBucket(257, 4096) == 512);
  CHECK(DecodeGraphs::ViewBucket(3000, 2048) == 2048);

  // Three busy slots (0, 1, 2) of five with prompts of 5, 9 and 2 tokens,
  // prefilled in slot mode; then one decode step computed exactly (3 rows,
  // view = longest + 1) and bucketed (4 rows, 256 columns: padding row 3
  // and masked columns).
  ModelConfig c = TinyConfig(Family::kQwen2, 300, 300, 64);
  auto model = CausalLm::Init(c, 5, torch::kCPU, torch::kFloat32);
  REQUIRE(model.ok());
  torch::NoGradGuard no_grad;
  KvCache cache;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    cache.keys.push_back(torch::zeros({5, c.num_key_value_heads, 300, c.head_dim}));
    cache.values.push_back(torch::zeros({5, c.num_key_value_heads, 300, c.head_dim}));
  }
  const std::vector<std::vector<int64_t>> prompts = {{1, 2, 3, 4, 5}, {9, 8, 7, 6, 5, 4, 3, 2, 1}, {42, 43}};
  for (int row = 0; row < 3; ++row) {
    const int64_t P = static_cast<int64_t>(prompts[row].size());
    cache.first_row = row;
    cache.row_lengths = torch::zeros({1}, torch::kLong);
    cache.view = P;
    (*model)->Forward(torch::tensor(prompts[row], torch::kLong).view({1, P}), {}, &cache);
  }
  const std::vector<int64_t> ids = {17, 18, 19}, lengths = {5, 9, 2};
  HostRowSampling rows(3);
  rows.temperature = {1.f, 0.f, 0.7f};  // sampled, greedy, sampled
  rows.seed = {11, 12, 13};
  rows.step = {0, 3, 1};
  auto exact_step = [&](const HostRowSampling& r) {
    cache.first_row = 0;
    cache.row_lengths = torch::tensor(lengths, torch::kLong);
    cache.view = 10;
    torch::Tensor logits = (*model)->Forward(torch::tensor(ids, torch::kLong).view({3, 1}), {}, &cache).select(1, 0);
    return SampleNext(logits, r.ToDevice(torch::kCPU));
  };

  DecodeGraphs graphs(model->get(), &cache, 5, 300, /*capture=*/false);
  CHECK_FALSE(graphs.capturing());  // a CPU model is never captured
  for (bool filter : {false, true}) {
    CAPTURE(filter);
    if (filter) {
      rows.top_k = {5, 0, 0};
      rows.top_p = {1.f, 1.f, 0.5f};
      rows.filter = true;
    }
    Sampled exact = exact_step(rows);
    Sampled bucketed = graphs.Step(ids, lengths, 10, rows);
    REQUIRE(bucketed.tokens.sizes() == exact.tokens.sizes());
    CHECK(torch::equal(bucketed.tokens, exact.tokens));
    CHECK(torch::allclose(bucketed.logprobs, exact.logprobs, 1e-5, 1e-5));
    // The step is a function of the cache: run again, the same tokens.
    CHECK(torch::equal(graphs.Step(ids, lengths, 10, rows).tokens, exact.tokens));
    CHECK_FALSE(bucketed.top_tokens.defined());  // none asked for
  }
  // A row that asks for top tokens: the step computes kMaxTopLogprobs of
  // them for every row, the exact step's first ones among them.
  rows.top_n = 3;
  Sampled exact = exact_step(rows);
  Sampled topped = graphs.Step(ids, lengths, 10, rows);
  CHECK(torch::equal(topped.tokens, exact.tokens));
  REQUIRE(topped.top_tokens.sizes() == torch::IntArrayRef({3, kMaxTopLogprobs}));
  CHECK(torch::equal(topped.top_tokens.narrow(1, 0, 3), exact.top_tokens));
  CHECK(torch::allclose(topped.top_logprobs.narrow(1, 0, 3), exact.top_logprobs, 1e-5, 1e-5));
  CHECK(graphs.graphs() == 0);
  // A change of the seeds changes the sampled rows, not the greedy one.
  HostRowSampling reseeded = rows;
  reseeded.seed = {901, 902, 903};
  Sampled a = graphs.Step(ids, lengths, 10, rows), b = graphs.Step(ids, lengths, 10, reseeded);
  CHECK(a.tokens[1].item<int64_t>() == b.tokens[1].item<int64_t>());
}

TEST_CASE("slot-list prefill: right-padded prompts prefilled together equal each alone", "[engine]") {
  ModelConfig c = TinyConfig(Family::kQwen2, 300, 64, 64);
  auto model = CausalLm::Init(c, 6, torch::kCPU, torch::kFloat32);
  REQUIRE(model.ok());
  torch::NoGradGuard no_grad;
  auto empty_cache = [&] {
    KvCache cache;
    for (int l = 0; l < c.num_hidden_layers; ++l) {
      cache.keys.push_back(torch::zeros({4, c.num_key_value_heads, 64, c.head_dim}));
      cache.values.push_back(torch::zeros({4, c.num_key_value_heads, 64, c.head_dim}));
    }
    return cache;
  };
  const std::vector<std::vector<int64_t>> prompts = {{3, 1, 4, 1, 5, 9, 2}, {2, 7}};
  // Together: slots 3 and 1, the second prompt padded with zeros to 7.
  KvCache together = empty_cache();
  together.slots = torch::tensor(std::vector<int64_t>{3, 1}, torch::kLong);
  std::vector<int64_t> ids = prompts[0];
  ids.insert(ids.end(), {2, 7, 0, 0, 0, 0, 0});
  ForwardOptions o;
  o.cache = &together;
  torch::Tensor hidden = (*model)->Hidden(torch::tensor(ids, torch::kLong).view({2, 7}), o);
  // Alone: each prompt by itself in the first-row slot mode.
  KvCache alone = empty_cache();
  const int64_t slot[] = {3, 1};
  for (int r = 0; r < 2; ++r) {
    const int64_t P = static_cast<int64_t>(prompts[r].size());
    alone.first_row = slot[r];
    alone.row_lengths = torch::zeros({1}, torch::kLong);
    alone.view = P;
    torch::Tensor logits = (*model)->Forward(torch::tensor(prompts[r], torch::kLong).view({1, P}), {}, &alone);
    CAPTURE(r);
    CHECK(torch::allclose((*model)->Logits(hidden[r].narrow(0, 0, P)), logits[0], 1e-5, 1e-5));
    for (int l = 0; l < c.num_hidden_layers; ++l) {
      CHECK(torch::allclose(together.keys[l][slot[r]].narrow(1, 0, P), alone.keys[l][slot[r]].narrow(1, 0, P), 1e-5, 1e-5));
      CHECK(torch::allclose(together.values[l][slot[r]].narrow(1, 0, P), alone.values[l][slot[r]].narrow(1, 0, P), 1e-5, 1e-5));
    }
  }
  // Slots not in the list are untouched.
  CHECK(together.keys[0][0].abs().sum().item<float>() == 0.f);
  CHECK(together.keys[0][2].abs().sum().item<float>() == 0.f);
}

TEST_CASE("sampler: logprobs equal the trainer's; stop strings; a hot swap under load loses nothing; min_policy_step waits",
          "[engine][sampler]") {
  TempDir dir;
  const std::string v0 = dir.path() + "/v0", v1 = dir.path() + "/v1";
  WriteModel(v0, 1);
  WriteModel(v1, 2);
  sampler::LocalBackendOptions o;
  o.model_dir = v0;
  o.name = "tiny";
  o.device = "cpu";
  o.engine = {8, 128};
  auto backend = sampler::LocalBackend::Create(o, nullptr);
  REQUIRE(backend.ok());
  v1::SampleRequest req;
  req.set_num_completions(3);
  auto* m = req.add_messages();
  m->set_role("user");
  m->set_content("make relu faster");
  req.mutable_params()->set_temperature(1.0);
  req.mutable_params()->set_max_tokens(16);
  req.mutable_params()->set_seed(3);
  req.mutable_params()->set_has_seed(true);
  auto r = (*backend)->Sample(req, RequestContext::Background());
  REQUIRE(r.ok());
  CHECK(r->policy_version() == "0");
  // The trainer computes the same log-probabilities for the same sequences.
  trainer::TrainerOptions to;
  to.model_dir = v0;
  to.out_dir = dir.path() + "/out";
  to.device = "cpu";
  auto t = trainer::Trainer::Create(to, RealClock::Get(), nullptr);
  REQUIRE(t.ok());
  std::vector<trainer::TrainSequence> seqs;
  for (const auto& c : r->completions()) {
    trainer::TrainSequence s;
    s.prompt.assign(r->prompt_token_ids().begin(), r->prompt_token_ids().end());
    s.completion.assign(c.token_ids().begin(), c.token_ids().end());
    seqs.push_back(s);
  }
  auto lp = (*t)->Logprobs(seqs);
  REQUIRE(lp.ok());
  for (int i = 0; i < r->completions_size(); ++i) {
    REQUIRE(static_cast<int>((*lp)[i].size()) == r->completions(i).token_logprobs_size());
    for (size_t j = 0; j < (*lp)[i].size(); ++j) {
      CHECK(r->completions(i).token_logprobs(j) == Approx((*lp)[i][j]).margin(1e-4));
    }
  }
  // Seeded: the same request gives the same completions.
  auto again = (*backend)->Sample(req, RequestContext::Background());
  REQUIRE(again.ok());
  CHECK(again->completions(1).token_ids_size() == r->completions(1).token_ids_size());
  CHECK(again->completions(1).text() == r->completions(1).text());
  // A stop string ends the text before it.
  v1::SampleRequest stop = req;
  stop.mutable_params()->set_max_tokens(40);
  stop.mutable_params()->add_stop("e");
  auto stopped = (*backend)->Sample(stop, RequestContext::Background());
  REQUIRE(stopped.ok());
  for (const auto& c : stopped->completions()) {
    CHECK(c.text().find('e') == std::string::npos);
  }

  // Hot swap while 6 threads keep sampling: three sample throughout, three
  // take their last three samples only after the swap.
  std::atomic<int> ok{0}, failed{0};
  std::mutex mu;
  std::set<std::string> versions;
  std::vector<std::thread> load;
  absl::Notification swapped;
  for (int i = 0; i < 6; ++i) {
    load.emplace_back([&, i] {
      for (int k = 0; k < 6; ++k) {
        if (i >= 3 && k == 3) swapped.WaitForNotification();
        v1::SampleRequest q = req;
        q.mutable_params()->set_seed(100 * i + k);
        auto s = (*backend)->Sample(q, RequestContext::Background());
        if (!s.ok() || s->completions_size() != 3) {
          ++failed;
          continue;
        }
        ++ok;
        std::lock_guard<std::mutex> lock(mu);
        for (const auto& c : s->completions()) versions.insert(c.policy_version());
      }
    });
  }
  // The swap once samples of the old policy have come back.
  for (int i = 0; i < 6000 && ok.load() + failed.load() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  v1::PolicyVersion next;
  next.set_version("1");
  next.set_step(1);
  next.set_checkpoint_uri(v1);
  const absl::Status used = (*backend)->UsePolicy(next);
  swapped.Notify();
  for (auto& th : load) th.join();
  REQUIRE(used.ok());
  CHECK(failed == 0);
  CHECK(ok == 36);
  CHECK(versions.count("1") == 1);
  auto after = (*backend)->Sample(req, RequestContext::Background());
  REQUIRE(after.ok());
  CHECK(after->policy_version() == "1");
  CHECK((*backend)->Policies()[0].version() == "1");

  // A request for a later training step waits for that policy to arrive,
  // whichever comes first (the request or the swap), and samples from it.
  v1::SampleRequest later = req;
  later.set_min_policy_step(2);
  absl::StatusOr<v1::SampleResponse> waited;
  std::thread asker([&] { waited = (*backend)->Sample(later, RequestContext::Background()); });
  v1::PolicyVersion two;
  two.set_version("2");
  two.set_step(2);
  two.set_checkpoint_uri(v0);
  const absl::Status swapped_again = (*backend)->UsePolicy(two);
  asker.join();
  REQUIRE(swapped_again.ok());
  REQUIRE(waited.ok());
  CHECK(waited->policy_version() == "2");
  // One that never arrives: the wait ends after policy_wait, and the sample
  // says which policy it came from.
  sampler::LocalBackendOptions impatient = o;
  impatient.policy_wait = absl::Milliseconds(200);
  auto short_wait = sampler::LocalBackend::Create(impatient, nullptr);
  REQUIRE(short_wait.ok());
  later.set_min_policy_step(5);
  const absl::Time asked = absl::Now();
  auto stale = (*short_wait)->Sample(later, RequestContext::Background());
  REQUIRE(stale.ok());
  CHECK(absl::Now() - asked >= absl::Milliseconds(200));
  CHECK(stale->policy_version() == "0");
}

TEST_CASE("sampler: announced versions load when a request needs one, only the newest; a bad one is skipped",
          "[engine][sampler]") {
  TempDir dir;
  const std::string v0 = dir.path() + "/v0", v1 = dir.path() + "/v1";
  WriteModel(v0, 1);
  WriteModel(v1, 2);
  prometheus::Registry registry;
  sampler::SamplerMetrics metrics(&registry);
  auto backend = CpuBackend(v0, &metrics);
  auto loads = [&](const char* result) { return metrics.policy_updates.Add({{"result", result}}).Value(); };
  // A trainer publishing a version a step (SFT): nothing loads.
  for (int i = 1; i <= 20; ++i) {
    v1::PolicyVersion v;
    v.set_version(std::to_string(i));
    v.set_step(i);
    v.set_checkpoint_uri(i % 2 ? v1 : v0);
    REQUIRE(backend->UsePolicy(v).ok());
  }
  CHECK(loads("ok") == 0);
  CHECK(backend->Policies()[0].version() == "20");  // what a request starting now gets
  v1::SampleRequest req;
  req.set_prompt("def forward(self, x):");
  req.set_num_completions(2);
  req.mutable_params()->set_max_tokens(4);
  auto r = backend->Sample(req, RequestContext::Background());
  REQUIRE(r.ok());
  CHECK(r->policy_version() == "20");
  CHECK(loads("ok") == 1);  // the newest, once
  REQUIRE(backend->Sample(req, RequestContext::Background()).ok());
  CHECK(loads("ok") == 1);
  // One that does not load: counted, and the current one goes on serving.
  v1::PolicyVersion broken;
  broken.set_version("21");
  broken.set_step(21);
  broken.set_checkpoint_uri(dir.path() + "/missing");
  REQUIRE(backend->UsePolicy(broken).ok());
  auto after = backend->Sample(req, RequestContext::Background());
  REQUIRE(after.ok());
  CHECK(after->policy_version() == "20");
  CHECK(loads("failed") == 1);
  CHECK(backend->Policies()[0].version() == "20");
}

TEST_CASE("sampler: LoRA versions attach to the kept base; each samples with its own adapter", "[engine][sampler]") {
  TempDir dir;
  const std::string v0 = dir.path() + "/v0";
  WriteModel(v0, 1);
  {
    auto m = CausalLm::Load(v0, torch::kCPU, torch::kFloat32);
    REQUIRE(m.ok());
    LoraConfig lora;
    lora.rank = 4;
    lora.targets = {"q_proj", "v_proj", "down_proj"};
    REQUIRE(AttachLora(m->get(), lora).ok());
    for (const std::string name : {"a1", "a2"}) {
      torch::NoGradGuard no_grad;
      for (auto& [n, p] : LoraParameters(**m)) p.normal_(0, 0.5);  // large: the samples must differ
      REQUIRE(SaveLoraAdapter(**m, lora, dir.path() + "/" + name, "v0").ok());
    }
  }
  prometheus::Registry registry;
  sampler::SamplerMetrics metrics(&registry);
  auto backend = CpuBackend(v0, &metrics);
  v1::SampleRequest req;
  req.set_prompt("def forward(self, x):");
  req.set_num_completions(2);
  req.mutable_params()->set_max_tokens(8);
  req.mutable_params()->set_seed(7);
  req.mutable_params()->set_has_seed(true);
  // Announces `adapter` as version `n` (on the sampler's own base) and samples.
  auto sample = [&](int n, const std::string& adapter) {
    v1::PolicyVersion v;
    v.set_version(std::to_string(n));
    v.set_step(n);
    v.set_checkpoint_uri(dir.path() + "/" + adapter);
    v.set_adapter(true);
    REQUIRE(backend->UsePolicy(v).ok());
    auto r = backend->Sample(req, RequestContext::Background());
    REQUIRE(r.ok());
    CHECK(r->policy_version() == std::to_string(n));
    std::vector<double> logprobs;
    for (const auto& c : r->completions()) {
      for (double lp : c.token_logprobs()) logprobs.push_back(lp);
    }
    return logprobs;
  };
  const auto first = sample(1, "a1"), second = sample(2, "a2"), again = sample(3, "a1");
  REQUIRE_FALSE(first.empty());
  CHECK(first != second);  // a2's factors, not a1's
  // a1 again, attached beside the others on the same base: what it sampled
  // the first time (factors do not pile up on a shared base).
  REQUIRE(again.size() == first.size());
  for (size_t i = 0; i < first.size(); ++i) CHECK(again[i] == Approx(first[i]).margin(1e-5));
  CHECK(metrics.policy_updates.Add({{"result", "ok"}}).Value() == 3);
}

TEST_CASE("sampler: a streamed sample's pieces add up to its completions, stop strings never shown", "[engine][sampler]") {
  TempDir dir;
  WriteModel(dir.path() + "/m", 6);
  sampler::LocalBackendOptions o;
  o.model_dir = dir.path() + "/m";
  o.device = "cpu";
  o.engine = {8, 128};
  auto backend = sampler::LocalBackend::Create(o, nullptr);
  REQUIRE(backend.ok());
  // A random tiny model writes any bytes: partial UTF-8 characters too.
  for (const char* stop : {"", "e", "rel"}) {
    INFO("stop string '" << stop << "'");
    v1::SampleRequest req;
    req.set_prompt("def forward(self, x):");
    req.set_num_completions(3);
    req.mutable_params()->set_temperature(1.0);
    req.mutable_params()->set_max_tokens(60);
    req.mutable_params()->set_seed(11);
    req.mutable_params()->set_has_seed(true);
    req.mutable_params()->set_top_logprobs(2);
    if (*stop) req.mutable_params()->add_stop(stop);
    std::vector<v1::Completion> joined(3);
    std::vector<int> pieces(3, 0);
    bool after_last = false;
    auto r = (*backend)->SampleStream(req, RequestContext::Background(), [&](int i, const v1::Completion& piece) {
      REQUIRE(i < 3);
      if (!joined[i].finish_reason().empty()) after_last = true;
      if (*stop) CHECK(piece.text().find(stop) == std::string::npos);
      joined[i].mutable_text()->append(piece.text());
      joined[i].mutable_token_ids()->MergeFrom(piece.token_ids());
      joined[i].mutable_token_logprobs()->MergeFrom(piece.token_logprobs());
      joined[i].mutable_top_logprobs()->MergeFrom(piece.top_logprobs());
      joined[i].set_finish_reason(piece.finish_reason());
      ++pieces[i];
    });
    REQUIRE(r.ok());
    CHECK_FALSE(after_last);
    for (int i = 0; i < 3; ++i) {
      const v1::Completion& c = r->completions(i);
      CHECK(joined[i].text() == c.text());
      CHECK(joined[i].finish_reason() == c.finish_reason());
      CHECK(std::vector<int>(joined[i].token_ids().begin(), joined[i].token_ids().end()) ==
            std::vector<int>(c.token_ids().begin(), c.token_ids().end()));
      CHECK(joined[i].token_logprobs_size() == c.token_logprobs_size());
      CHECK(c.top_logprobs_size() == c.token_ids_size());
      CHECK(joined[i].top_logprobs_size() == c.token_ids_size());
      CHECK(pieces[i] == c.token_ids_size() + 1);  // one a token, then the rest of the text
      if (*stop) CHECK(c.text().find(stop) == std::string::npos);
    }
    auto whole = (*backend)->Sample(req, RequestContext::Background());  // seeded: the same
    REQUIRE(whole.ok());
    for (int i = 0; i < 3; ++i) CHECK(whole->completions(i).text() == r->completions(i).text());
  }
}

}  // namespace
}  // namespace crl::policy
