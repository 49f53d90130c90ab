#include "lib/policy/logprobs.h"

#include <algorithm>

#include "lib/policy/model.h"

namespace crl::policy {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

int64_t RowsPerChunk(int64_t requested, int64_t vocab) {
  if (requested > 0) return requested;
  return std::max<int64_t>(16, (int64_t{1} << 27) / std::max<int64_t>(vocab, 1));
}

// Forward: per chunk, logits = h W^T (compute dtype), then float32
// log-softmax gathered at the targets; the per-row logsumexp is saved.
// Backward: d logits = g * (onehot(target) - softmax), recomputed per chunk.
struct ChunkedLogprobFunction : public torch::autograd::Function<ChunkedLogprobFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& hidden,
                               const torch::Tensor& weight, const torch::Tensor& targets,
                               int64_t chunk_rows) {
    const int64_t M = hidden.size(0), V = weight.size(0);
    const int64_t rows = RowsPerChunk(chunk_rows, V);
    const auto compute = AutocastGuard::Enabled() && hidden.is_cuda() ? torch::kBFloat16
                                                                       : weight.scalar_type();
    torch::Tensor w = weight.to(compute);
    auto f32 = hidden.options().dtype(torch::kFloat32);
    torch::Tensor logprobs = torch::empty({M}, f32), entropy = torch::empty({M}, f32),
                  lse = torch::empty({M}, f32);
    for (int64_t start = 0; start < M; start += rows) {
      const int64_t n = std::min(rows, M - start);
      torch::Tensor logits =
          torch::matmul(hidden.narrow(0, start, n).to(compute), w.t()).to(torch::kFloat32);
      torch::Tensor z = torch::logsumexp(logits, 1);
      lse.narrow(0, start, n).copy_(z);
      logprobs.narrow(0, start, n)
          .copy_(logits.gather(1, targets.narrow(0, start, n).unsqueeze(1)).squeeze(1) - z);
      torch::Tensor p = torch::exp(logits - z.unsqueeze(1));
      entropy.narrow(0, start, n).copy_(z - (p * logits).sum(1));
    }
    ctx->save_for_backward({hidden, weight, targets, lse});
    ctx->saved_data["rows"] = rows;
    ctx->saved_data["compute"] = static_cast<int64_t>(compute);
    ctx->mark_non_differentiable({entropy});
    return {logprobs, entropy};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& hidden = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor& targets = saved[2];
    const torch::Tensor& lse = saved[3];
    const int64_t rows = ctx->saved_data["rows"].toInt();
    const auto compute = static_cast<torch::ScalarType>(ctx->saved_data["compute"].toInt());
    const int64_t M = hidden.size(0);
    const bool want_hidden = ctx->needs_input_grad(0), want_weight = ctx->needs_input_grad(1);
    torch::Tensor g = grads[0].to(torch::kFloat32);
    torch::Tensor w = weight.to(compute);
    torch::Tensor grad_hidden, grad_weight;
    if (want_hidden) grad_hidden = torch::empty_like(hidden);
    if (want_weight) grad_weight = torch::zeros(weight.sizes(), weight.options().dtype(torch::kFloat32));
    for (int64_t start = 0; start < M; start += rows) {
      const int64_t n = std::min(rows, M - start);
      torch::Tensor h = hidden.narrow(0, start, n).to(compute);
      torch::Tensor logits = torch::matmul(h, w.t()).to(torch::kFloat32);
      torch::Tensor gn = g.narrow(0, start, n).unsqueeze(1);
      // d logprob / d logits = onehot - softmax, times the incoming gradient.
      torch::Tensor d = torch::exp(logits - lse.narrow(0, start, n).unsqueeze(1)) * (-gn);
      d.scatter_add_(1, targets.narrow(0, start, n).unsqueeze(1), gn);
      torch::Tensor dc = d.to(compute);
      if (want_hidden) grad_hidden.narrow(0, start, n).copy_(torch::matmul(dc, w));
      if (want_weight) grad_weight.add_(torch::matmul(dc.t(), h).to(torch::kFloat32));
    }
    if (want_weight) grad_weight = grad_weight.to(weight.scalar_type());
    return {grad_hidden, grad_weight, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

ChunkedLogprobs ChunkedTokenLogprobs(const torch::Tensor& hidden, const torch::Tensor& weight,
                                     const torch::Tensor& targets, int64_t chunk_rows) {
  variable_list out = ChunkedLogprobFunction::apply(hidden, weight, targets, chunk_rows);
  return {out[0], out[1]};
}

}  // namespace crl::policy
