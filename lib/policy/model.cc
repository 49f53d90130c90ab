#include "lib/policy/model.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/status.h"
#include "lib/policy/safetensors.h"
#include "lib/policy/tensor_io.h"

namespace crl::policy {
namespace {

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool CudaAutocast() { return at::autocast::is_autocast_enabled(at::kCUDA); }
void SetCudaAutocast(bool on) {
  at::autocast::set_autocast_enabled(at::kCUDA, on);
  if (on) at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
}
#else
bool CudaAutocast() { return at::autocast::is_enabled(); }
void SetCudaAutocast(bool on) {
  at::autocast::set_enabled(on);
  if (on) at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
}
#endif

namespace fs = std::filesystem;
using torch::indexing::Slice;

// Set while a shell is built (CausalLmImpl's `shell`): a model whose every
// parameter is replaced (set_data) before use, by its checkpoint's tensor
// or another model's (ShareWeights).
thread_local bool building_shell = false;

// A parameter of `shape` as `make` gives it, or in a shell one element
// expanded to that shape: the sizes a loader checks, and no memory to
// allocate, fill or free.
template <typename Make>
torch::Tensor NewParameter(std::vector<int64_t> shape, Make make) {
  return building_shell ? torch::empty({1}).expand(shape) : make(shape);
}

class ShellScope {
 public:
  explicit ShellScope(bool shell) : outer_(building_shell) { building_shell = shell; }
  ~ShellScope() { building_shell = outer_; }
  ShellScope(const ShellScope&) = delete;
  ShellScope& operator=(const ShellScope&) = delete;

 private:
  bool outer_;
};

class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(int64_t dim, double eps) : eps_(eps) {
    weight = register_parameter("weight", NewParameter({dim}, [](auto s) { return torch::ones(s); }));
  }
  // Hugging Face's order: normalise in float32, cast back, then scale. On
  // CUDA, ATen's rms_norm where this LibTorch has it (2.4 on): the same
  // computation in fewer kernels (one fused kernel in recent releases, instead of
  // eight elementwise ones here), which matters most to a decode step.
  torch::Tensor forward(const torch::Tensor& x) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    if (x.is_cuda() && x.scalar_type() == weight.scalar_type()) {
      return at::rms_norm(x, {weight.size(0)}, weight, eps_);
    }
#endif
    torch::Tensor h = x.to(torch::kFloat32);
    h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps_);
    return weight * h.to(x.scalar_type());
  }
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RmsNorm);

// cos/sin [B, T, head_dim] for positions [B, T], computed in float32.
std::pair<torch::Tensor, torch::Tensor> Rope(const torch::Tensor& inv_freq,
                                             const torch::Tensor& positions,
                                             torch::ScalarType dtype) {
  torch::Tensor freqs = positions.to(torch::kFloat32).unsqueeze(-1) * inv_freq;  // [B, T, D/2]
  torch::Tensor emb = torch::cat({freqs, freqs}, -1);
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

torch::Tensor RotateHalf(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.index({"...", Slice(half, torch::indexing::None)}),
                     x.index({"...", Slice(0, half)})},
                    -1);
}

// inv_freq of the config, with its rope scaling.
torch::Tensor InverseFrequencies(const ModelConfig& c) {
  const int64_t half = c.head_dim / 2;
  std::vector<float> inv(half);
  const RopeScaling& s = c.rope_scaling;
  for (int64_t i = 0; i < half; ++i) {
    double f = 1.0 / std::pow(c.rope_theta, (2.0 * i) / c.head_dim);
    if (s.type == "linear") {
      f /= s.factor;
    } else if (s.type == "llama3") {
      const double low_wavelen = s.original_max_position_embeddings / s.low_freq_factor;
      const double high_wavelen = s.original_max_position_embeddings / s.high_freq_factor;
      const double wavelen = 2 * M_PI / f;
      if (wavelen > low_wavelen) {
        f /= s.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor) /
                              (s.high_freq_factor - s.low_freq_factor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
    inv[i] = static_cast<float>(f);
  }
  return torch::tensor(inv);
}

class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const ModelConfig& c) : c_(c) {
    const int64_t q = int64_t{c.num_attention_heads} * c.head_dim;
    const int64_t kv = int64_t{c.num_key_value_heads} * c.head_dim;
    q_proj = register_module("q_proj", Projection(c.hidden_size, q, c.attention_bias));
    k_proj = register_module("k_proj", Projection(c.hidden_size, kv, c.attention_bias));
    v_proj = register_module("v_proj", Projection(c.hidden_size, kv, c.attention_bias));
    o_proj = register_module("o_proj", Projection(q, c.hidden_size, false));
    if (c.qk_norm) {
      q_norm = register_module("q_norm", RmsNorm(c.head_dim, c.rms_norm_eps));
      k_norm = register_module("k_norm", RmsNorm(c.head_dim, c.rms_norm_eps));
    }
  }

  // x [B, T, hidden]; cos/sin [B, T, D]; allowed [B, 1, T, S] bool (or
  // undefined: plain causal); k/v of earlier tokens in *cache.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& allowed, KvCache* cache, int layer) {
    const int64_t B = x.size(0), T = x.size(1), D = c_.head_dim;
    const int64_t H = c_.num_attention_heads, KV = c_.num_key_value_heads;
    torch::Tensor q = q_proj(x).view({B, T, H, D});
    torch::Tensor k = k_proj(x).view({B, T, KV, D});
    torch::Tensor v = v_proj(x).view({B, T, KV, D}).transpose(1, 2);
    if (c_.qk_norm) {
      q = q_norm(q);
      k = k_norm(k);
    }
    q = q.transpose(1, 2);  // [B, H, T, D]
    k = k.transpose(1, 2);
    // In q's dtype: under autocast q is bfloat16 while cos/sin are float32.
    const torch::Tensor c = cos.unsqueeze(1).to(q.scalar_type());
    const torch::Tensor s = sin.unsqueeze(1).to(q.scalar_type());
    k = k.to(q.scalar_type());
    v = v.to(q.scalar_type());
    q = q * c + RotateHalf(q) * s;
    k = k * c + RotateHalf(k) * s;
    if (cache && (cache->slots.defined() || cache->row_lengths.defined())) {
      // Slot modes: this call's keys and values go where slot_hidden said
      // (write_rows index the whole cache with a slot list, the rows from
      // first_row without). Slot mode then attends to the cached columns; a
      // slot-list prefill only to this call's own tokens.
      const bool list = cache->slots.defined();
      torch::Tensor ck = list ? cache->keys[layer] : cache->keys[layer].narrow(0, cache->first_row, B);
      torch::Tensor cv = list ? cache->values[layer] : cache->values[layer].narrow(0, cache->first_row, B);
      ck.transpose(1, 2).index_put_({cache->write_rows, cache->write_positions}, k.transpose(1, 2));
      cv.transpose(1, 2).index_put_({cache->write_rows, cache->write_positions}, v.transpose(1, 2));
      if (!list) {
        k = ck.narrow(2, 0, cache->view);
        v = cv.narrow(2, 0, cache->view);
      }
    } else if (cache) {
      torch::Tensor& ck = cache->keys[layer];
      torch::Tensor& cv = cache->values[layer];
      const int64_t past = cache->length;
      if (cache->capacity > 0) {
        if (!ck.defined()) {
          ck = torch::zeros({B, KV, cache->capacity, D}, k.options());
          cv = torch::zeros({B, KV, cache->capacity, D}, v.options());
        }
        ck.narrow(2, past, T).copy_(k);
        cv.narrow(2, past, T).copy_(v);
        k = ck.narrow(2, 0, past + T);
        v = cv.narrow(2, 0, past + T);
      } else {
        if (ck.defined()) {
          k = torch::cat({ck, k}, 2);
          v = torch::cat({cv, v}, 2);
        }
        ck = k;
        cv = v;
      }
    }
    // One query per row against a mask (decode) with grouped-query
    // attention: the H / KV query heads of a key/value head attend as that
    // many query rows of it, so the cached keys and values are read in place
    // instead of copied H / KV times (repeat_interleave) at every step.
    const bool grouped = H != KV && T == 1 && allowed.defined();
    if (grouped) {
      q = q.reshape({B, KV, H / KV, D});
    } else if (H != KV) {
      k = k.repeat_interleave(H / KV, 1);
      v = v.repeat_interleave(H / KV, 1);
    }
    torch::Tensor out;
#if TORCH_VERSION_MAJOR >= 2
    if (allowed.defined()) {
      out = at::scaled_dot_product_attention(q, k, v, allowed);
    } else {
      out = at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
    }
#else
    torch::Tensor scores = torch::matmul(q.to(torch::kFloat32), k.to(torch::kFloat32).transpose(-2, -1)) /
                           std::sqrt(static_cast<double>(D));
    if (allowed.defined()) {
      scores = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<float>::infinity());
    } else {
      const int64_t S = k.size(2);
      scores = scores.masked_fill(
          torch::ones({T, S}, torch::TensorOptions().dtype(torch::kBool).device(x.device()))
              .triu(S - T + 1),
          -std::numeric_limits<float>::infinity());
    }
    out = torch::matmul(torch::softmax(scores, -1), v.to(torch::kFloat32)).to(x.scalar_type());
#endif
    if (grouped) out = out.reshape({B, H, T, D});
    return o_proj(out.transpose(1, 2).reshape({B, T, H * D}));
  }

  Projection q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  RmsNorm q_norm{nullptr}, k_norm{nullptr};

 private:
  ModelConfig c_;
};
TORCH_MODULE(Attention);

class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(const ModelConfig& c) {
    gate_proj = register_module("gate_proj", Projection(c.hidden_size, c.intermediate_size, false));
    up_proj = register_module("up_proj", Projection(c.hidden_size, c.intermediate_size, false));
    down_proj = register_module("down_proj", Projection(c.intermediate_size, c.hidden_size, false));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return down_proj(torch::silu(gate_proj(x)) * up_proj(x));
  }
  Projection gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(Mlp);

class LayerImpl : public torch::nn::Module {
 public:
  explicit LayerImpl(const ModelConfig& c) {
    self_attn = register_module("self_attn", Attention(c));
    mlp = register_module("mlp", Mlp(c));
    input_layernorm = register_module("input_layernorm", RmsNorm(c.hidden_size, c.rms_norm_eps));
    post_attention_layernorm =
        register_module("post_attention_layernorm", RmsNorm(c.hidden_size, c.rms_norm_eps));
  }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& allowed, KvCache* cache, int index) {
    torch::Tensor h = x + self_attn->forward(input_layernorm(x), cos, sin, allowed, cache, index);
    return h + mlp(post_attention_layernorm(h));
  }
  Attention self_attn{nullptr};
  Mlp mlp{nullptr};
  RmsNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
TORCH_MODULE(Layer);

// Activation checkpointing of one layer: the forward pass keeps only the
// layer's input; the backward pass runs the layer again with gradients on
// (under the autocast state of the forward) and back-propagates through it,
// which accumulates the layer's parameter gradients and returns the input's.
struct LayerCheckpoint : public torch::autograd::Function<LayerCheckpoint> {
  static torch::Tensor Mask(const torch::Tensor& t) { return t.numel() == 0 ? torch::Tensor() : t; }
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& cos, const torch::Tensor& sin,
                               const torch::Tensor& allowed, int64_t layer) {
    ctx->save_for_backward({x, cos, sin, allowed});
    ctx->saved_data["layer"] = layer;
    ctx->saved_data["autocast"] = AutocastGuard::Enabled();
    return reinterpret_cast<LayerImpl*>(layer)->forward(x, cos, sin, Mask(allowed), nullptr, 0);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    auto* layer = reinterpret_cast<LayerImpl*>(ctx->saved_data["layer"].toInt());
    torch::Tensor x = saved[0].detach().requires_grad_(true);
    torch::Tensor out;
    {
      torch::AutoGradMode grad_on(true);
      AutocastGuard autocast(ctx->saved_data["autocast"].toBool(), x.device());
      out = layer->forward(x, saved[1], saved[2], Mask(saved[3]), nullptr, 0);
    }
    torch::autograd::backward({out}, {grads[0]});
    return {x.grad(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

class DecoderImpl : public torch::nn::Module {
 public:
  explicit DecoderImpl(const ModelConfig& c) {
    auto embedding = torch::nn::EmbeddingOptions(c.vocab_size, c.hidden_size);
    if (building_shell) {  // else Embedding's own normal init
      embedding._weight(NewParameter({c.vocab_size, c.hidden_size}, [](auto s) { return torch::empty(s); }));
    }
    embed_tokens = register_module("embed_tokens", torch::nn::Embedding(embedding));
    layers = register_module("layers", torch::nn::ModuleList());
    for (int i = 0; i < c.num_hidden_layers; ++i) layers->push_back(Layer(c));
    norm = register_module("norm", RmsNorm(c.hidden_size, c.rms_norm_eps));
  }
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RmsNorm norm{nullptr};
};
TORCH_MODULE(Decoder);

bool IsLoraName(const std::string& name) {
  return absl::StrContains(name, ".lora_A.") || absl::StrContains(name, ".lora_B.");
}

}  // namespace

// ---- Autocast ----------------------------------------------------------------

AutocastGuard::AutocastGuard(bool enable, torch::Device device) {
  if (!enable || !device.is_cuda()) return;
  active_ = true;
  previous_ = CudaAutocast();
  SetCudaAutocast(true);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  // As torch.autocast's exit: the cast cache lives while any scope is open.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  SetCudaAutocast(previous_);
}

bool AutocastGuard::Enabled() { return CudaAutocast(); }

// ---- Projection --------------------------------------------------------------

ProjectionImpl::ProjectionImpl(int64_t in, int64_t out, bool with_bias) {
  weight = register_parameter("weight", NewParameter({out, in}, [](auto s) { return torch::empty(s); }));
  if (with_bias) bias = register_parameter("bias", NewParameter({out}, [](auto s) { return torch::zeros(s); }));
}

torch::Tensor ProjectionImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = torch::nn::functional::linear(x, weight, bias);
  if (lora_a_ && lora_enabled) {
    torch::Tensor h = x;
    if (lora_dropout > 0 && is_training()) h = torch::dropout(h, lora_dropout, true);
    // Under autocast the adapters' matmuls run in bfloat16 whatever their
    // input: a cast to the factors' float32 first would only add two passes
    // over the activations (and two more in backward) per projection.
    const bool autocast = x.is_cuda() && CudaAutocast();
    if (!autocast) h = h.to(lora_a_->weight.scalar_type());
    torch::Tensor down = lora_a_(h), up = lora_b_->weight;
    if (!autocast) {
      down = down.to(y.scalar_type());
      up = up.to(y.scalar_type());
    }
    // y + scale (h A^T) B^T as one GEMM that adds y in its epilogue (beta 1,
    // alpha the scale): one copy of y into the result instead of a pass to
    // scale the update and one to add it; in backward the scale applies to
    // the rank-r factors' gradients, not to the output's.
    const std::vector<int64_t> shape = y.sizes().vec();
    y = torch::addmm(y.reshape({-1, shape.back()}), down.reshape({-1, down.size(-1)}), up.t(), 1.0, lora_scale)
            .view(shape);
  }
  return y;
}

// ---- The model ---------------------------------------------------------------

class CausalLmImpl : public torch::nn::Module {
 public:
  // `shell`: every parameter to be replaced before use (NewParameter).
  explicit CausalLmImpl(const ModelConfig& c, bool shell = false) : config(c) {
    ShellScope scope(shell);
    model = register_module("model", Decoder(c));
    if (!c.tie_word_embeddings) {
      lm_head = register_module("lm_head", Projection(c.hidden_size, c.vocab_size, false));
    }
    inv_freq = InverseFrequencies(c);  // not a checkpoint tensor: kept out of the buffers
  }

  // See CausalLm::Hidden.
  torch::Tensor hidden(const torch::Tensor& ids, const ForwardOptions& o) {
    const int64_t B = ids.size(0), T = ids.size(1);
    KvCache* cache = o.cache;
    const int64_t past = cache ? cache->length : 0;
    if (cache && cache->capacity > 0 && past + T > cache->capacity) {
      throw std::length_error("KV cache capacity exceeded");
    }
    const bool padded = o.attention_mask.defined(), packed = o.segment_ids.defined();
    if (packed && (padded || cache)) {
      throw std::invalid_argument("segment_ids go without an attention mask or a cache");
    }
    if (cache && (cache->row_lengths.defined() || cache->slots.defined())) return slot_hidden(ids, *cache);
    const int64_t S = past + T;
    const auto dtype = model->embed_tokens->weight.scalar_type();
    const auto dev = ids.device();
    auto longs = torch::TensorOptions().dtype(torch::kLong).device(dev);
    torch::Tensor positions, allowed;
    if (padded) {
      // Positions count real tokens only (left padding keeps them aligned).
      torch::Tensor m = o.attention_mask.to(torch::kLong);
      positions = (m.cumsum(1) - 1).clamp_min(0).index({Slice(), Slice(past, S)});
    } else if (packed) {
      // Each segment starts again at 0: position = t - (start of t's segment).
      torch::Tensor idx = torch::arange(T, longs).unsqueeze(0).expand({B, T});
      torch::Tensor seg = o.segment_ids.to(torch::kLong);
      torch::Tensor starts = torch::ones({B, T}, longs.dtype(torch::kBool));
      if (T > 1) starts.narrow(1, 1, T - 1).copy_(seg.narrow(1, 1, T - 1) != seg.narrow(1, 0, T - 1));
      positions = idx - std::get<0>(torch::cummax(torch::where(starts, idx, torch::zeros_like(idx)), 1));
    } else {
      positions = torch::arange(past, S, longs).unsqueeze(0).expand({B, T});
    }
    if (padded || packed || past > 0 || config.sliding_window > 0) {
      // [B, 1, T, S]: key j visible to query t when j <= past + t, within
      // the window, not padding, and in the same segment.
      torch::Tensor qi = torch::arange(past, S, longs).unsqueeze(1);
      torch::Tensor kj = torch::arange(0, S, longs).unsqueeze(0);
      torch::Tensor visible = kj <= qi;
      if (config.sliding_window > 0) visible = visible & (kj > qi - config.sliding_window);
      allowed = visible.unsqueeze(0).unsqueeze(0).expand({B, 1, T, S});
      if (padded) allowed = allowed & o.attention_mask.to(torch::kBool).view({B, 1, 1, S});
      if (packed) {
        torch::Tensor seg = o.segment_ids.to(torch::kLong);
        allowed = allowed & (seg.unsqueeze(2) == seg.unsqueeze(1)).unsqueeze(1) &
                  (seg != 0).view({B, 1, 1, S});
      }
      // Every query sees at least itself, so padding rows stay finite (a
      // fully masked row would be NaN, and 0 * NaN reaches real rows).
      allowed = allowed | (kj == qi).unsqueeze(0).unsqueeze(0);
    }
    auto [cos, sin] = Rope(inv_freq, positions, dtype);
    torch::Tensor h = model->embed_tokens(ids);
    if (cache && cache->keys.empty()) {
      cache->keys.resize(config.num_hidden_layers);
      cache->values.resize(config.num_hidden_layers);
    }
    const bool recompute = o.checkpoint_layers && torch::GradMode::is_enabled() && !cache;
    for (int i = 0; i < config.num_hidden_layers; ++i) {
      auto layer = model->layers->ptr<LayerImpl>(i);
      if (recompute) {
        // LibTorch 1.13's custom functions take no undefined tensors: an
        // empty one stands for "no mask".
        h = LayerCheckpoint::apply(h, cos, sin,
                                   allowed.defined() ? allowed : torch::empty({0}, torch::kBool),
                                   reinterpret_cast<int64_t>(layer.get()));
      } else {
        h = layer->forward(h, cos, sin, allowed, cache, i);
      }
    }
    if (cache) cache->length = S;
    return model->norm(h);
  }

  // Slot mode (KvCache): positions and visibility per row.
  torch::Tensor slot_hidden(const torch::Tensor& ids, KvCache& cache) {
    const int64_t B = ids.size(0), T = ids.size(1), S = cache.slots.defined() ? T : cache.view;
    const auto dtype = model->embed_tokens->weight.scalar_type();
    auto longs = torch::TensorOptions().dtype(torch::kLong).device(ids.device());
    torch::Tensor positions;
    if (cache.slots.defined()) {
      // Slot-list prefill: every row from position 0, causal over this call.
      positions = torch::arange(T, longs).unsqueeze(0).expand({B, T});
      cache.write_rows = cache.slots.unsqueeze(1).expand({B, T});
    } else {
      positions = cache.row_lengths.unsqueeze(1) + torch::arange(T, longs).unsqueeze(0);
      cache.write_rows = torch::arange(B, longs).unsqueeze(1).expand({B, T});
    }
    // Where every layer writes this call's keys and values: computed once.
    cache.write_positions = positions;
    // Key j is visible to a query at position q when j <= q (and in the window).
    torch::Tensor q = positions.unsqueeze(2);                          // [B, T, 1]
    torch::Tensor kj = torch::arange(S, longs).view({1, 1, S});        // [1, 1, S]
    torch::Tensor allowed = kj <= q;
    if (config.sliding_window > 0) allowed = allowed & (kj > q - config.sliding_window);
    allowed = allowed.unsqueeze(1);                                     // [B, 1, T, S]
    auto [cos, sin] = Rope(inv_freq, positions, dtype);
    torch::Tensor h = model->embed_tokens(ids);
    for (int i = 0; i < config.num_hidden_layers; ++i) {
      h = model->layers->ptr<LayerImpl>(i)->forward(h, cos, sin, allowed, &cache, i);
    }
    return model->norm(h);
  }

  torch::Tensor output_embedding() const {
    return lm_head ? lm_head->weight : model->embed_tokens->weight;
  }

  torch::Tensor logits(const torch::Tensor& hidden) {
    torch::Tensor out = lm_head ? lm_head(hidden)
                                : torch::nn::functional::linear(hidden, model->embed_tokens->weight);
    return out.to(torch::kFloat32);
  }

  ModelConfig config;
  Decoder model{nullptr};
  Projection lm_head{nullptr};
  torch::Tensor inv_freq;
};

CausalLm::CausalLm(std::shared_ptr<CausalLmImpl> impl) : impl_(std::move(impl)) {}
CausalLm::~CausalLm() = default;

const ModelConfig& CausalLm::config() const { return impl_->config; }
torch::nn::Module& CausalLm::module() { return *impl_; }
torch::Device CausalLm::device() const { return impl_->model->embed_tokens->weight.device(); }
torch::ScalarType CausalLm::dtype() const {
  return impl_->model->embed_tokens->weight.scalar_type();
}

torch::Tensor CausalLm::Forward(const torch::Tensor& ids, const torch::Tensor& attention_mask,
                                KvCache* cache) {
  ForwardOptions o;
  o.attention_mask = attention_mask;
  o.cache = cache;
  return impl_->logits(impl_->hidden(ids, o));
}

torch::Tensor CausalLm::Logits(const torch::Tensor& hidden) { return impl_->logits(hidden); }

torch::Tensor CausalLm::Hidden(const torch::Tensor& ids, const ForwardOptions& options) {
  return impl_->hidden(ids, options);
}

torch::Tensor CausalLm::OutputEmbedding() const { return impl_->output_embedding(); }

std::vector<std::pair<std::string, torch::Tensor>> CausalLm::NamedParameters() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : impl_->named_parameters(/*recurse=*/true)) out.emplace_back(p.key(), p.value());
  return out;
}

std::vector<std::pair<std::string, Projection>> CausalLm::Projections() const {
  std::vector<std::pair<std::string, Projection>> out;
  for (int i = 0; i < impl_->config.num_hidden_layers; ++i) {
    auto layer = impl_->model->layers->ptr<LayerImpl>(i);
    const std::string at = absl::StrCat("model.layers.", i, ".");
    out.emplace_back(at + "self_attn.q_proj", layer->self_attn->q_proj);
    out.emplace_back(at + "self_attn.k_proj", layer->self_attn->k_proj);
    out.emplace_back(at + "self_attn.v_proj", layer->self_attn->v_proj);
    out.emplace_back(at + "self_attn.o_proj", layer->self_attn->o_proj);
    out.emplace_back(at + "mlp.gate_proj", layer->mlp->gate_proj);
    out.emplace_back(at + "mlp.up_proj", layer->mlp->up_proj);
    out.emplace_back(at + "mlp.down_proj", layer->mlp->down_proj);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<CausalLm>> CausalLm::Init(const ModelConfig& config, uint64_t seed,
                                                         torch::Device device,
                                                         torch::ScalarType dtype) {
  torch::manual_seed(seed);
  auto impl = std::make_shared<CausalLmImpl>(config);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : impl->named_parameters()) {
      if (absl::EndsWith(p.key(), "norm.weight")) {
        p.value().fill_(1.0);
      } else if (absl::EndsWith(p.key(), ".bias")) {
        p.value().zero_();
      } else {
        p.value().normal_(0.0, 0.02);
      }
    }
  }
  impl->to(device, dtype);
  impl->inv_freq = impl->inv_freq.to(device);
  return std::unique_ptr<CausalLm>(new CausalLm(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<CausalLm>> CausalLm::Load(const std::string& dir,
                                                         torch::Device device,
                                                         torch::ScalarType dtype) {
  CRL_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig((fs::path(dir) / "config.json").string()));
  CRL_ASSIGN_OR_RETURN(auto store, WeightStore::Open(dir));
  // Every parameter is replaced by its tensor read straight onto the
  // device in the placement's dtype: the model's own host tensors are never
  // filled (nor initialised), and a bfloat16 checkpoint crosses to a GPU as
  // bfloat16, not widened to float32 first.
  auto impl = std::make_shared<CausalLmImpl>(config, /*shell=*/true);
  std::set<std::string> used;
  {
    torch::NoGradGuard no_grad;
    for (auto& p : impl->named_parameters()) {
      const TensorView* v = store->Find(p.key());
      if (!v) {
        return absl::InvalidArgumentError(
            absl::StrCat(dir, ": tensor '", p.key(), "' is missing from the weights"));
      }
      CRL_ASSIGN_OR_RETURN(torch::ScalarType from, TorchType(v->dtype, p.key()));
      if (!c10::isFloatingType(from)) {
        return absl::InvalidArgumentError(absl::StrCat(dir, ": tensor '", p.key(), "' has dtype ",
                                                       DTypeName(v->dtype), ", not a float type"));
      }
      torch::Tensor t = torch::from_blob(const_cast<char*>(v->bytes.data()), v->shape,
                                         torch::TensorOptions().dtype(from));
      if (t.sizes() != p.value().sizes()) {
        return absl::InvalidArgumentError(absl::StrCat(
            dir, ": tensor '", p.key(), "' has shape ", c10::str(t.sizes()), ", the config says ",
            c10::str(p.value().sizes())));
      }
      // A copy, always: `t` is the store's memory, gone when it closes.
      p.value().set_data(t.to(device, dtype, /*non_blocking=*/false, /*copy=*/true));
      used.insert(p.key());
    }
  }
  for (const std::string& name : store->Names()) {
    if (used.count(name)) continue;
    // A tied checkpoint may still carry lm_head; old ones carry RoPE buffers.
    if (name == "lm_head.weight" && config.tie_word_embeddings) continue;
    if (absl::EndsWith(name, "rotary_emb.inv_freq")) continue;
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": tensor '", name, "' is not part of a ", FamilyName(config.family),
                     " model with this config"));
  }
  // Every parameter is on the device in its dtype already (the model has no buffers).
  impl->inv_freq = impl->inv_freq.to(device);
  return std::unique_ptr<CausalLm>(new CausalLm(std::move(impl)));
}

std::unique_ptr<CausalLm> CausalLm::ShareWeights(const CausalLm& base) {
  auto impl = std::make_shared<CausalLmImpl>(base.impl_->config, /*shell=*/true);
  const auto from = base.impl_->named_parameters();
  {
    torch::NoGradGuard no_grad;
    // The same configuration has the same names; set_data makes each
    // parameter the base's tensor (storage shared, nothing copied).
    for (auto& p : impl->named_parameters()) p.value().set_data(from[p.key()]);
  }
  impl->inv_freq = base.impl_->inv_freq;
  return std::unique_ptr<CausalLm>(new CausalLm(std::move(impl)));
}

absl::Status CausalLm::Save(const std::string& dir) const {
  std::error_code ec;
  fs::create_directories(dir, ec);
  torch::ScalarType out_type = torch::kBFloat16;
  ParseScalarType(impl_->config.torch_dtype, &out_type);
  TensorWriter writer;
  for (const auto& [name, p] : NamedParameters()) {
    if (!IsLoraName(name)) CRL_RETURN_IF_ERROR(writer.Add(name, p, out_type));
  }
  CRL_RETURN_IF_ERROR(WriteFileAtomically((fs::path(dir) / "config.json").string(),
                                          ModelConfigJson(impl_->config)));
  return writer.WriteDir(dir);
}

bool ParseScalarType(const std::string& name, torch::ScalarType* dtype) {
  if (name == "float32") *dtype = torch::kFloat32;
  else if (name == "bfloat16") *dtype = torch::kBFloat16;
  else if (name == "float16") *dtype = torch::kFloat16;
  else return false;
  return true;
}

}  // namespace crl::policy
