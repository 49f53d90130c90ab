#include "lib/policy/logprobs.h"

#include <algorithm>

#include "lib/policy/model.h"

namespace crl::policy {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Every dtype below is chosen explicitly; CUDA autocast (on in the caller's
// thread and in the backward engine's) would turn the softmax into float32.
c10::impl::ExcludeDispatchKeyGuard NoAutocast() {
  return c10::impl::ExcludeDispatchKeyGuard(c10::DispatchKeySet(c10::DispatchKey::AutocastCUDA));
}

int64_t RowsPerChunk(int64_t requested, int64_t vocab) {
  if (requested > 0) return requested;
  return std::max<int64_t>(16, (int64_t{1} << 27) / std::max<int64_t>(vocab, 1));
}

// Forward, per chunk: logits = h W^T in the compute dtype; log-softmax with
// float32 accumulation (one read of the logits to normalise, one to write
// the float32 result); the targets' entries gathered; the entropy as
// -sum(p * log p), in place over one float32 temporary, only when asked
// for. Backward, per chunk: the logits again (recomputed from the saved
// hidden states), d logits = g * (onehot(target) - softmax) in the compute
// dtype.
struct ChunkedLogprobFunction : public torch::autograd::Function<ChunkedLogprobFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& hidden,
                               const torch::Tensor& weight, const torch::Tensor& targets,
                               int64_t chunk_rows, bool want_entropy) {
    const int64_t M = hidden.size(0), V = weight.size(0);
    const int64_t rows = RowsPerChunk(chunk_rows, V);
    const auto compute = AutocastGuard::Enabled() && hidden.is_cuda() ? torch::kBFloat16
                                                                       : weight.scalar_type();
    torch::Tensor w = weight.to(compute);
    torch::Tensor h_all = hidden.to(compute);
    const auto no_autocast = NoAutocast();
    auto f32 = hidden.options().dtype(torch::kFloat32);
    torch::Tensor logprobs = torch::empty({M}, f32);
    torch::Tensor entropy = want_entropy ? torch::empty({M}, f32) : torch::Tensor();
    for (int64_t start = 0; start < M; start += rows) {
      const int64_t n = std::min(rows, M - start);
      torch::Tensor logits = torch::matmul(h_all.narrow(0, start, n), w.t());
      torch::Tensor logp = torch::log_softmax(logits, 1, torch::kFloat32);
      logprobs.narrow(0, start, n).copy_(logp.gather(1, targets.narrow(0, start, n).unsqueeze(1)).squeeze(1));
      if (want_entropy) {
        entropy.narrow(0, start, n).copy_(-logp.exp().mul_(logp).sum(1));
      }
    }
    ctx->save_for_backward({hidden, weight, targets});
    ctx->saved_data["rows"] = rows;
    ctx->saved_data["compute"] = static_cast<int64_t>(compute);
    if (want_entropy) ctx->mark_non_differentiable({entropy});
    return {logprobs, want_entropy ? entropy : torch::zeros({0}, f32)};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& hidden = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor& targets = saved[2];
    const int64_t rows = ctx->saved_data["rows"].toInt();
    const auto compute = static_cast<torch::ScalarType>(ctx->saved_data["compute"].toInt());
    const int64_t M = hidden.size(0);
    const bool want_hidden = ctx->needs_input_grad(0), want_weight = ctx->needs_input_grad(1);
    const auto no_autocast = NoAutocast();
    torch::Tensor g = grads[0].to(compute);
    torch::Tensor w = weight.to(compute);
    torch::Tensor h_all = hidden.to(compute);
    torch::Tensor grad_hidden, grad_weight;
    if (want_hidden) grad_hidden = torch::empty(hidden.sizes(), hidden.options().dtype(compute));
    if (want_weight) grad_weight = torch::zeros(weight.sizes(), weight.options().dtype(torch::kFloat32));
    for (int64_t start = 0; start < M; start += rows) {
      const int64_t n = std::min(rows, M - start);
      torch::Tensor h = h_all.narrow(0, start, n);
      torch::Tensor logits = torch::matmul(h, w.t());
      torch::Tensor gn = g.narrow(0, start, n).unsqueeze(1);
      // d logprob / d logits = onehot - softmax, times the incoming gradient.
      torch::Tensor d = torch::softmax(logits, 1).mul_(-gn);
      d.scatter_add_(1, targets.narrow(0, start, n).unsqueeze(1), gn);
      if (want_hidden) {
        torch::Tensor out = grad_hidden.narrow(0, start, n);
        torch::mm_out(out, d, w);
      }
      if (want_weight) grad_weight.add_(torch::matmul(d.t(), h).to(torch::kFloat32));
    }
    if (want_hidden) grad_hidden = grad_hidden.to(hidden.scalar_type());
    if (want_weight) grad_weight = grad_weight.to(weight.scalar_type());
    return {grad_hidden, grad_weight, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

ChunkedLogprobs ChunkedTokenLogprobs(const torch::Tensor& hidden, const torch::Tensor& weight,
                                     const torch::Tensor& targets, const LogprobOptions& options) {
  variable_list out = ChunkedLogprobFunction::apply(hidden, weight, targets, options.chunk_rows, options.entropy);
  return {out[0], options.entropy ? out[1] : torch::Tensor()};
}

torch::Tensor TokenLogprobs(const torch::Tensor& logits, const torch::Tensor& ids) {
  using torch::indexing::None;
  using torch::indexing::Slice;
  torch::Tensor lp = torch::log_softmax(logits.index({Slice(), Slice(None, -1)}).to(torch::kFloat32), -1);
  return lp.gather(-1, ids.index({Slice(), Slice(1, None)}).unsqueeze(-1)).squeeze(-1);
}

}  // namespace crl::policy
