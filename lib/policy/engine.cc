#include "lib/policy/engine.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "lib/policy/decode_graphs.h"
#include "lib/policy/sampling.h"

namespace crl::policy {
namespace {

// One Generate call, owned by the calling thread; the engine touches it only
// while it is queued or active, and never after `done`.
struct Pending {
  const GenerationRequest* request = nullptr;
  const RequestContext* context = nullptr;  // the caller's, alive until done
  std::vector<Generation> out;
  int unfinished = 0;
  absl::Status status;
  bool done = false;
  std::atomic<bool> cancel{false};
  absl::Time submitted;
};

struct Sequence {
  Pending* pending = nullptr;
  int index = 0;       // sample i of its request
  int64_t length = 0;  // tokens in the cache
  absl::Time start;
};

}  // namespace

struct GenerationEngine::Impl {
  Impl(std::shared_ptr<CausalLm> m, EngineOptions o) : model(std::move(m)), options(o) {}

  std::shared_ptr<CausalLm> model;
  EngineOptions options;
  mutable absl::Mutex mu;
  std::deque<Pending*> waiting ABSL_GUARDED_BY(mu);
  bool stop ABSL_GUARDED_BY(mu) = false;
  int free_slots ABSL_GUARDED_BY(mu) = 0;
  std::atomic<int> active{0};
  std::atomic<int64_t> tokens{0};
  std::atomic<int> graphs_captured{0};
  std::thread thread;
  // Engine thread only.
  KvCache cache;
  std::vector<Sequence*> slots;
  std::unique_ptr<DecodeGraphs> graphs;  // null: decode op by op

  void Run();
  void Prefill(const std::vector<Pending*>& admitted);
  void PrefillGroup(const std::vector<Pending*>& group);
  void Decode();
  // The sampled token of row `row` of `next` (its tensors on the host).
  void Append(Sequence* s, const Sampled& next, int64_t row);
  void Finish(Sequence* s, const char* reason);
  void FailAll(const absl::Status& status);
  void Complete(Pending* p);
  HostRowSampling Rows(const std::vector<const Sequence*>& rows, const std::vector<int>& steps) const;
};

namespace {

absl::Time Now() { return absl::Now(); }

// The sampled tensors on the host, contiguous.
Sampled ToHost(const Sampled& s) {
  Sampled h{s.tokens.to(torch::kCPU).contiguous(), s.logprobs.to(torch::kCPU).contiguous(), {}, {}};
  if (s.top_tokens.defined()) {
    h.top_tokens = s.top_tokens.to(torch::kCPU).contiguous();
    h.top_logprobs = s.top_logprobs.to(torch::kCPU).contiguous();
  }
  return h;
}

}  // namespace

GenerationEngine::GenerationEngine(std::shared_ptr<CausalLm> model, std::unique_ptr<Impl> impl)
    : model_(std::move(model)), impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<GenerationEngine>> GenerationEngine::Start(
    std::shared_ptr<CausalLm> model, EngineOptions options) {
  const ModelConfig& c = model->config();
  if (options.max_batch < 1) return absl::InvalidArgumentError("max_batch: must be at least 1");
  if (options.prefill_tokens < 1) return absl::InvalidArgumentError("prefill_tokens: must be at least 1");
  if (options.max_len <= 0) options.max_len = std::min(c.max_position_embeddings, kDefaultMaxLen);
  if (options.max_len > c.max_position_embeddings) {
    return absl::InvalidArgumentError(absl::StrCat("max_len: ", options.max_len, " exceeds the model's ",
                                                   c.max_position_embeddings, " positions"));
  }
  auto impl = std::make_unique<Impl>(model, options);
  try {
    torch::NoGradGuard no_grad;
    model->module().eval();
    auto opts = torch::TensorOptions().dtype(model->dtype()).device(model->device());
    for (int l = 0; l < c.num_hidden_layers; ++l) {
      impl->cache.keys.push_back(torch::zeros({options.max_batch, c.num_key_value_heads, options.max_len, c.head_dim}, opts));
      impl->cache.values.push_back(torch::zeros({options.max_batch, c.num_key_value_heads, options.max_len, c.head_dim}, opts));
    }
  } catch (const std::exception& e) {
    return absl::ResourceExhaustedError(absl::StrCat("KV cache: ", e.what()));
  }
  if (options.cuda_graphs && model->device().is_cuda() && DecodeGraphs::Available()) {
    impl->graphs = std::make_unique<DecodeGraphs>(model.get(), &impl->cache, options.max_batch,
                                                  options.max_len, /*capture=*/true);
  }
  impl->slots.assign(options.max_batch, nullptr);
  {
    absl::MutexLock lock(&impl->mu);
    impl->free_slots = options.max_batch;
  }
  Impl* raw = impl.get();
  std::unique_ptr<GenerationEngine> engine(new GenerationEngine(std::move(model), std::move(impl)));
  raw->thread = std::thread([raw] { raw->Run(); });
  return engine;
}

GenerationEngine::~GenerationEngine() {
  {
    absl::MutexLock lock(&impl_->mu);
    impl_->stop = true;
  }
  if (impl_->thread.joinable()) impl_->thread.join();
}

int GenerationEngine::waiting() const {
  absl::MutexLock lock(&impl_->mu);
  return static_cast<int>(impl_->waiting.size());
}
int GenerationEngine::active() const { return impl_->active.load(); }
int64_t GenerationEngine::tokens_generated() const { return impl_->tokens.load(); }
int GenerationEngine::decode_graphs() const { return impl_->graphs_captured.load(); }

absl::StatusOr<std::vector<Generation>> GenerationEngine::Generate(const GenerationRequest& r,
                                                                   const RequestContext& context) {
  const ModelConfig& c = model_->config();
  if (r.prompt.empty()) return absl::InvalidArgumentError("prompt: empty");
  for (size_t i = 0; i < r.prompt.size(); ++i) {
    if (r.prompt[i] < 0 || r.prompt[i] >= c.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("prompt[", i, "]: token id ", r.prompt[i],
                                                     " is outside the vocabulary (", c.vocab_size, ")"));
    }
  }
  if (r.n < 1 || r.n > impl_->options.max_batch) {
    return absl::InvalidArgumentError(
        absl::StrCat("n: ", r.n, " is outside [1, ", impl_->options.max_batch, "] (max_batch)"));
  }
  if (r.params.max_new_tokens < 1) return absl::InvalidArgumentError("max_new_tokens: must be at least 1");
  if (r.top_logprobs < 0 || r.top_logprobs > kMaxTopLogprobs) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_logprobs: ", r.top_logprobs, " is outside [0, ", kMaxTopLogprobs, "]"));
  }
  if (static_cast<int64_t>(r.prompt.size()) + r.params.max_new_tokens > impl_->options.max_len) {
    return absl::InvalidArgumentError(absl::StrCat(
        "prompt (", r.prompt.size(), " tokens) + max_new_tokens (", r.params.max_new_tokens,
        ") exceeds ", impl_->options.max_len, " positions (max_len)"));
  }
  if (absl::Status s = context.Check(); !s.ok()) return s;
  Pending p;
  p.request = &r;
  p.context = &context;
  p.out.resize(r.n);
  p.unfinished = r.n;
  p.submitted = Now();
  absl::MutexLock lock(&impl_->mu);
  if (impl_->stop) return absl::UnavailableError("the generation engine is stopping");
  impl_->waiting.push_back(&p);
  auto done = [&p]() { return p.done; };
  while (!p.done) {
    impl_->mu.AwaitWithTimeout(absl::Condition(&done), absl::Milliseconds(50));
    if (p.done) break;
    if (absl::Status s = context.Check(); !s.ok() && !p.cancel.load()) {
      // Still queued: take it out here; admitted: the engine drops it.
      auto it = std::find(impl_->waiting.begin(), impl_->waiting.end(), &p);
      if (it != impl_->waiting.end()) {
        impl_->waiting.erase(it);
        return s;
      }
      p.cancel.store(true);
    }
  }
  if (p.cancel.load()) {
    if (absl::Status s = context.Check(); !s.ok()) return s;
  }
  if (!p.status.ok()) return p.status;
  return std::move(p.out);
}

// ---- The engine thread --------------------------------------------------------------

void GenerationEngine::Impl::Run() {
  torch::NoGradGuard no_grad;  // thread-local
  for (;;) {
    std::vector<Pending*> admitted;
    {
      absl::MutexLock lock(&mu);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
        return stop || active.load() > 0 || (!waiting.empty() && free_slots >= waiting.front()->request->n);
      };
      mu.Await(absl::Condition(&ready));
      if (stop) break;
      // First come, first served: a large request is not overtaken.
      while (!waiting.empty() && free_slots >= waiting.front()->request->n) {
        free_slots -= waiting.front()->request->n;
        admitted.push_back(waiting.front());
        waiting.pop_front();
      }
    }
    try {
      Prefill(admitted);
      // Requests whose callers gave up leave the batch, seen here at each
      // step (a caller looks only every 50 ms).
      for (Sequence* s : slots) {
        if (!s) continue;
        Pending* p = s->pending;
        if (!p->cancel.load() && !p->context->Check().ok()) p->cancel.store(true);
        if (p->cancel.load()) Finish(s, "cancelled");
      }
      if (active.load() > 0) Decode();
    } catch (const std::exception& e) {
      FailAll(absl::InternalError(absl::StrCat("generation failed: ", e.what())));
    }
  }
  FailAll(absl::UnavailableError("the generation engine stopped"));
  absl::MutexLock lock(&mu);
  for (Pending* p : waiting) {
    p->status = absl::UnavailableError("the generation engine stopped");
    p->done = true;
  }
  waiting.clear();
}

HostRowSampling GenerationEngine::Impl::Rows(const std::vector<const Sequence*>& rows,
                                             const std::vector<int>& steps) const {
  HostRowSampling out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i]) continue;
    const SamplingParams& p = rows[i]->pending->request->params;
    out.temperature[i] = static_cast<float>(p.temperature);
    out.top_p[i] = static_cast<float>(p.top_p);
    out.top_k[i] = p.top_k;
    out.seed[i] = static_cast<int64_t>(p.seed + rows[i]->index);
    out.step[i] = steps[i];
    out.filter = out.filter || p.top_k > 0 || p.top_p < 1.0;
    out.top_n = std::max<int64_t>(out.top_n, rows[i]->pending->request->top_logprobs);
  }
  return out;
}

void GenerationEngine::Impl::Prefill(const std::vector<Pending*>& admitted) {
  // In admission order, as many requests per forward pass as fit in
  // prefill_tokens padded prompt tokens (a longer prompt goes alone).
  size_t i = 0;
  while (i < admitted.size()) {
    size_t j = i + 1;
    size_t longest = admitted[i]->request->prompt.size();
    while (j < admitted.size()) {
      const size_t l = std::max(longest, admitted[j]->request->prompt.size());
      if (static_cast<int64_t>(l * (j - i + 1)) > options.prefill_tokens) break;
      longest = l;
      ++j;
    }
    PrefillGroup({admitted.begin() + i, admitted.begin() + j});
    i = j;
  }
}

void GenerationEngine::Impl::PrefillGroup(const std::vector<Pending*>& group) {
  const int64_t R = static_cast<int64_t>(group.size());
  int64_t P = 0;
  for (const Pending* p : group) P = std::max<int64_t>(P, p->request->prompt.size());
  // Each request's n slots (admission reserved them); its prompt, right
  // padded, prefills the first one.
  std::vector<int> open;
  for (int s = 0; s < static_cast<int>(slots.size()); ++s) {
    if (!slots[s]) open.push_back(s);
  }
  std::vector<std::vector<int>> taken(R);
  std::vector<int64_t> ids(R * P, 0), first(R), last(R);
  size_t used = 0;
  for (int64_t g = 0; g < R; ++g) {
    const GenerationRequest& r = *group[g]->request;
    taken[g].assign(open.begin() + used, open.begin() + used + r.n);
    used += r.n;
    std::copy(r.prompt.begin(), r.prompt.end(), ids.begin() + g * P);
    first[g] = taken[g][0];
    last[g] = static_cast<int64_t>(r.prompt.size()) - 1;
  }
  const auto dev = model->device();
  auto longs = torch::TensorOptions().dtype(torch::kLong);
  ForwardOptions forward;
  forward.cache = &cache;
  cache.slots = torch::tensor(first, longs).to(dev);
  torch::Tensor hidden;
  try {
    hidden = model->Hidden(torch::tensor(ids, longs).view({R, P}).to(dev), forward);
  } catch (...) {
    cache.slots = torch::Tensor();  // decode steps must not see the prefill's slot list
    throw;
  }
  cache.slots = torch::Tensor();
  torch::Tensor at_last = hidden.index({torch::arange(R, longs.device(dev)), torch::tensor(last, longs).to(dev)});
  torch::Tensor logits = model->Logits(at_last);  // [R, V]
  // Samples 2..n of a prompt decode from a copy of its keys and values.
  std::vector<int64_t> row_of;  // the logits row of each new sequence
  std::vector<Sequence*> seqs;
  std::vector<const Sequence*> rows;
  for (int64_t g = 0; g < R; ++g) {
    Pending* p = group[g];
    const int64_t len = static_cast<int64_t>(p->request->prompt.size());
    for (size_t k = 1; k < taken[g].size(); ++k) {
      for (size_t l = 0; l < cache.keys.size(); ++l) {
        cache.keys[l][taken[g][k]].narrow(1, 0, len).copy_(cache.keys[l][taken[g][0]].narrow(1, 0, len));
        cache.values[l][taken[g][k]].narrow(1, 0, len).copy_(cache.values[l][taken[g][0]].narrow(1, 0, len));
      }
    }
    for (int i = 0; i < p->request->n; ++i) {
      auto* s = new Sequence{p, i, len, Now()};
      slots[taken[g][i]] = s;
      seqs.push_back(s);
      rows.push_back(s);
      row_of.push_back(g);
    }
  }
  const int64_t N = static_cast<int64_t>(seqs.size());
  active += static_cast<int>(N);
  const Sampled next = ToHost(SampleNext(logits.index_select(0, torch::tensor(row_of, longs).to(dev)),
                                         Rows(rows, std::vector<int>(N, 0)).ToDevice(dev)));
  const absl::Time now = Now();
  for (int64_t i = 0; i < N; ++i) {
    Sequence* s = seqs[i];
    s->pending->out[s->index].first_token_seconds = absl::ToDoubleSeconds(now - s->pending->submitted);
    Append(s, next, i);
  }
}

void GenerationEngine::Impl::Decode() {
  int hi = 0;
  int64_t view = 0;
  for (int i = 0; i < static_cast<int>(slots.size()); ++i) {
    if (slots[i]) {
      hi = i + 1;
      view = std::max(view, slots[i]->length + 1);
    }
  }
  std::vector<int64_t> ids(hi, 0), lengths(hi, 0);
  std::vector<const Sequence*> rows(hi, nullptr);
  std::vector<int> steps(hi, 0);
  for (int i = 0; i < hi; ++i) {
    if (Sequence* s = slots[i]) {
      ids[i] = s->pending->out[s->index].tokens.back();
      lengths[i] = s->length;
      rows[i] = s;
      steps[i] = static_cast<int>(s->pending->out[s->index].tokens.size());
    }
  }
  const HostRowSampling sampling = Rows(rows, steps);
  Sampled next;
  if (graphs) {
    next = graphs->Step(ids, lengths, view, sampling);
    graphs_captured = graphs->graphs();
  } else {
    const auto dev = model->device();
    auto longs = torch::TensorOptions().dtype(torch::kLong);
    cache.first_row = 0;
    cache.row_lengths = torch::tensor(lengths, longs).to(dev);
    cache.view = view;
    torch::Tensor logits =
        model->Forward(torch::tensor(ids, longs).view({hi, 1}).to(dev), {}, &cache).select(1, 0);
    next = SampleNext(logits, sampling.ToDevice(dev));
  }
  next = ToHost(next);
  for (int i = 0; i < hi; ++i) {
    if (Sequence* s = slots[i]) {
      ++s->length;
      Append(s, next, i);
    }
  }
}

void GenerationEngine::Impl::Append(Sequence* s, const Sampled& next, int64_t row) {
  Generation& g = s->pending->out[s->index];
  const GenerationRequest& r = *s->pending->request;
  const int token = static_cast<int>(next.tokens.data_ptr<int64_t>()[row]);
  g.tokens.push_back(token);
  g.logprobs.push_back(next.logprobs.data_ptr<float>()[row]);
  if (r.top_logprobs > 0) {
    const int64_t width = next.top_tokens.size(1);
    const int64_t* ids = next.top_tokens.data_ptr<int64_t>() + row * width;
    const float* values = next.top_logprobs.data_ptr<float>() + row * width;
    std::vector<TopToken> top;
    for (int64_t k = 0; k < std::min<int64_t>(r.top_logprobs, width); ++k) {
      top.push_back({static_cast<int>(ids[k]), values[k]});
    }
    g.top_logprobs.push_back(std::move(top));
  }
  ++tokens;
  if (r.on_token) r.on_token(s->index, g);
  if (std::find(r.params.stop_ids.begin(), r.params.stop_ids.end(), token) != r.params.stop_ids.end() ||
      (r.stop && r.stop(g.tokens))) {
    Finish(s, "stop");
  } else if (static_cast<int>(g.tokens.size()) >= r.params.max_new_tokens) {
    Finish(s, "length");
  }
}

void GenerationEngine::Impl::Finish(Sequence* s, const char* reason) {
  Pending* p = s->pending;
  Generation& g = p->out[s->index];
  g.finish_reason = reason;
  g.seconds = absl::ToDoubleSeconds(Now() - p->submitted);
  for (auto& slot : slots) {
    if (slot == s) slot = nullptr;
  }
  delete s;
  --active;
  {
    absl::MutexLock lock(&mu);
    ++free_slots;
  }
  if (--p->unfinished == 0) Complete(p);
}

void GenerationEngine::Impl::Complete(Pending* p) {
  absl::MutexLock lock(&mu);
  p->done = true;
}

void GenerationEngine::Impl::FailAll(const absl::Status& status) {
  for (Sequence*& s : slots) {
    if (!s) continue;
    Pending* p = s->pending;
    if (p->status.ok()) p->status = status;
    Sequence* gone = s;
    Finish(gone, "error");
  }
}

}  // namespace crl::policy
