#include "lib/policy/generate.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "lib/policy/engine.h"

namespace crl::policy {

absl::StatusOr<std::vector<Generation>> Generate(CausalLm& model,
                                                 const std::vector<std::vector<int>>& prompts,
                                                 const SamplingParams& p) {
  const int64_t B = static_cast<int64_t>(prompts.size());
  if (B == 0) return std::vector<Generation>();
  int64_t longest = 0;
  for (const auto& prompt : prompts) longest = std::max<int64_t>(longest, prompt.size());
  EngineOptions options;
  options.max_batch = static_cast<int>(B);
  options.max_len = static_cast<int>(
      std::min<int64_t>(longest + p.max_new_tokens, model.config().max_position_embeddings));
  // The engine shares the model (not owned here).
  std::shared_ptr<CausalLm> shared(&model, [](CausalLm*) {});
  const bool was_training = model.module().is_training();
  auto engine = GenerationEngine::Start(shared, options);
  if (!engine.ok()) return engine.status();
  // Every prompt is its own request (seed + i), submitted together so the
  // engine decodes them as one batch.
  std::vector<absl::StatusOr<std::vector<Generation>>> results(B, absl::UnknownError("not run"));
  std::vector<GenerationRequest> requests(B);
  std::vector<std::thread> threads;
  for (int64_t i = 0; i < B; ++i) {
    requests[i].prompt = prompts[i];
    requests[i].params = p;
    requests[i].params.seed = p.seed + i;
    threads.emplace_back([&, i] {
      results[i] = (*engine)->Generate(requests[i], RequestContext::Background());
    });
  }
  for (auto& t : threads) t.join();
  engine->reset();
  if (was_training) model.module().train();
  std::vector<Generation> out;
  for (int64_t i = 0; i < B; ++i) {
    if (!results[i].ok()) {
      const absl::Status& s = results[i].status();
      if (s.code() == absl::StatusCode::kInvalidArgument) {
        return absl::InvalidArgumentError(absl::StrCat("prompt ", i, ": ", s.message()));
      }
      return s;
    }
    out.push_back(std::move((*results[i])[0]));
  }
  return out;
}

}  // namespace crl::policy
