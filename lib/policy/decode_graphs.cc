#include "lib/policy/decode_graphs.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "common/logging.h"
#include "lib/policy/generate.h"
#include "lib/policy/sampling.h"

#ifdef CRL_POLICY_CUDA_GRAPHS
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/version.h>
#endif

namespace crl::policy {
namespace {

// Columns a graph reads at least: below this, padding costs nothing worth
// another graph.
constexpr int64_t kMinView = 256;

int64_t PowerOfTwoAtLeast(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

struct DecodeGraphs::Impl {
  CausalLm* model = nullptr;
  KvCache* cache = nullptr;
  int max_batch = 0;
  int64_t max_len = 0;
  bool capture = false;
  // Static inputs on the model's device, copied from the host before each
  // step: [5, max_batch] int64 (token ids, row lengths, top_k, seed, step)
  // and [2, max_batch] float32 (temperature, top_p).
  torch::Tensor longs, floats;

  // The bucketed step, run eagerly or recorded into a graph: [2, rows]
  // float64, the sampled tokens (exact in a double) and their
  // log-probabilities, so one copy brings both to the host; with `top`,
  // kMaxTopLogprobs more rows of top token ids, then as many of their
  // log-probabilities ([2 + 2K, rows]).
  torch::Tensor Forward(int rows, int64_t view, bool filter, bool top) {
    cache->first_row = 0;
    cache->row_lengths = longs.select(0, 1).narrow(0, 0, rows);
    cache->view = view;
    torch::Tensor ids = longs.select(0, 0).narrow(0, 0, rows).view({rows, 1});
    torch::Tensor logits = model->Forward(ids, {}, cache).select(1, 0);
    RowSampling r;
    r.top_k = longs.select(0, 2).narrow(0, 0, rows);
    r.seed = longs.select(0, 3).narrow(0, 0, rows);
    r.step = longs.select(0, 4).narrow(0, 0, rows);
    r.temperature = floats.select(0, 0).narrow(0, 0, rows);
    r.top_p = floats.select(0, 1).narrow(0, 0, rows);
    r.filter = filter;
    r.top_n = top ? kMaxTopLogprobs : 0;
    Sampled s = SampleNext(logits, r);
    torch::Tensor out = torch::stack({s.tokens.to(torch::kFloat64), s.logprobs.to(torch::kFloat64)});
    if (!top) return out;
    return torch::cat({out, s.top_tokens.t().to(torch::kFloat64), s.top_logprobs.t().to(torch::kFloat64)});
  }

#ifdef CRL_POLICY_CUDA_GRAPHS
  struct Graph {
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    torch::Tensor out;  // in the graphs' pool, rewritten by each replay
  };
  std::map<std::tuple<int, int64_t, bool, bool>, Graph> graphs;
  at::cuda::MempoolId_t pool{0, 0};

  // Records the step for (rows, view) on a side stream (capture needs one
  // that is not the default), after one eager run there that performs lazy
  // initialisation (cuBLAS workspaces, first launches) outside the capture.
  // The eager run writes the same keys and values the replay will.
  Graph Capture(int rows, int64_t view, bool filter, bool top) {
    const auto index = model->device().index();
    c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(index);
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index);
    at::cuda::CUDAEvent ready;
    ready.record(current);
    ready.block(side);
    Graph g;
    {
      c10::cuda::CUDAStreamGuard on_side(side);
      Forward(rows, view, filter, top);
      if (pool.first == 0 && pool.second == 0) pool = at::cuda::graph_pool_handle();
      g.graph = std::make_unique<at::cuda::CUDAGraph>();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
      // Thread-local: another thread's CUDA calls (a new policy version
      // loading beside this engine) do not break this capture.
      g.graph->capture_begin(pool, cudaStreamCaptureModeThreadLocal);
#else
      g.graph->capture_begin(pool);
#endif
      try {
        g.out = Forward(rows, view, filter, top);
      } catch (...) {
        try {
          g.graph->capture_end();  // leaves capture mode; reports the broken capture
        } catch (...) {
        }
        throw;
      }
      g.graph->capture_end();
    }
    at::cuda::CUDAEvent done;
    done.record(side);
    done.block(current);
    return g;
  }

  torch::Tensor Replay(int rows, int64_t view, bool filter, bool top) {
    const auto key = std::make_tuple(rows, view, filter, top);
    auto it = graphs.find(key);
    if (it == graphs.end()) {
      try {
        it = graphs.emplace(key, Capture(rows, view, filter, top)).first;
      } catch (const std::exception& e) {
        // The step still runs, eagerly; so do all later ones.
        CRL_LOG(WARNING) << "generation: capturing a CUDA graph of the decode step failed, decoding "
                            "without graphs from now on: "
                         << e.what();
        capture = false;
        graphs.clear();
        return Forward(rows, view, filter, top);
      }
    }
    it->second.graph->replay();
    return it->second.out;
  }
#endif
};

bool DecodeGraphs::Available() {
#ifdef CRL_POLICY_CUDA_GRAPHS
  return true;
#else
  return false;
#endif
}

DecodeGraphs::DecodeGraphs(CausalLm* model, KvCache* cache, int max_batch, int64_t max_len, bool capture)
    : impl_(std::make_unique<Impl>()) {
  impl_->model = model;
  impl_->cache = cache;
  impl_->max_batch = max_batch;
  impl_->max_len = max_len;
  impl_->capture = capture && Available() && model->device().is_cuda();
  auto opts = torch::TensorOptions().device(model->device());
  impl_->longs = torch::zeros({5, max_batch}, opts.dtype(torch::kLong));
  impl_->floats = torch::zeros({2, max_batch}, opts.dtype(torch::kFloat32));
}

DecodeGraphs::~DecodeGraphs() = default;

int DecodeGraphs::RowBucket(int rows, int max_batch) {
  return static_cast<int>(std::min<int64_t>(PowerOfTwoAtLeast(rows), max_batch));
}

int64_t DecodeGraphs::ViewBucket(int64_t view, int64_t max_len) {
  return std::min(PowerOfTwoAtLeast(std::max(view, kMinView)), max_len);
}

Sampled DecodeGraphs::Step(const std::vector<int64_t>& ids, const std::vector<int64_t>& lengths,
                           int64_t view, const HostRowSampling& rows) {
  const int n = static_cast<int>(ids.size());
  const int bucket = RowBucket(n, impl_->max_batch);
  const int64_t columns = ViewBucket(view, impl_->max_len);
  // Padding rows: token 0 at position 0, with HostRowSampling's defaults.
  const int M = impl_->max_batch;
  HostRowSampling padded(M);
  std::vector<int64_t> padded_ids(M, 0), padded_lengths(M, 0);
  auto put = [n](const auto& from, auto& to) { std::copy(from.begin(), from.begin() + n, to.begin()); };
  put(ids, padded_ids);
  put(lengths, padded_lengths);
  put(rows.top_k, padded.top_k);
  put(rows.seed, padded.seed);
  put(rows.step, padded.step);
  put(rows.temperature, padded.temperature);
  put(rows.top_p, padded.top_p);
  // One host tensor per static buffer, one copy each.
  std::vector<int64_t> longs;
  longs.reserve(5 * static_cast<size_t>(M));
  for (const auto* v : {&padded_ids, &padded_lengths, &padded.top_k, &padded.seed, &padded.step}) {
    longs.insert(longs.end(), v->begin(), v->end());
  }
  std::vector<float> floats = padded.temperature;
  floats.insert(floats.end(), padded.top_p.begin(), padded.top_p.end());
  impl_->longs.copy_(torch::tensor(longs, torch::kLong).view({5, M}));
  impl_->floats.copy_(torch::tensor(floats, torch::kFloat32).view({2, M}));
  const bool top = rows.top_n > 0;
  torch::Tensor out;
#ifdef CRL_POLICY_CUDA_GRAPHS
  if (impl_->capture) out = impl_->Replay(bucket, columns, rows.filter, top);
#endif
  if (!out.defined()) out = impl_->Forward(bucket, columns, rows.filter, top);
  out = out.narrow(1, 0, n).to(torch::kCPU);
  Sampled s{out[0].to(torch::kLong), out[1].to(torch::kFloat32), {}, {}};
  if (top) {
    const int64_t k = (out.size(0) - 2) / 2;  // kMaxTopLogprobs, or the vocabulary when smaller
    s.top_tokens = out.narrow(0, 2, k).t().to(torch::kLong).contiguous();
    s.top_logprobs = out.narrow(0, 2 + k, k).t().to(torch::kFloat32).contiguous();
  }
  return s;
}

int DecodeGraphs::graphs() const {
#ifdef CRL_POLICY_CUDA_GRAPHS
  return static_cast<int>(impl_->graphs.size());
#else
  return 0;
#endif
}

bool DecodeGraphs::capturing() const { return impl_->capture; }

}  // namespace crl::policy
