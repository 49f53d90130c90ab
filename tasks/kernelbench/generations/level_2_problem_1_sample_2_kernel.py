import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Fused linear + biases + ReLU.
# BUG (deliberate, for crl's tests): the ReLU is applied before the extra bias is added,
# i.e. relu(xW^T + b_lin) + b_extra instead of relu(xW^T + b_lin + b_extra). Expect WRONG_ANSWER.
cpp_source = r"""
#include <torch/extension.h>

torch::Tensor linear_bias_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b_lin, torch::Tensor b_extra) {
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto b1 = b_lin.contiguous();
    auto b2 = b_extra.contiguous();
    const int64_t B = xc.size(0), K = xc.size(1), O = wc.size(0);
    auto out = torch::empty({B, O}, xc.options());
    const float* X = xc.data_ptr<float>();
    const float* W = wc.data_ptr<float>();
    const float* B1 = b1.data_ptr<float>();
    const float* B2 = b2.data_ptr<float>();
    float* Y = out.data_ptr<float>();
    for (int64_t i = 0; i < B; ++i)
        for (int64_t o = 0; o < O; ++o) {
            double acc = B1[o];
            for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(X[i * K + k]) * W[o * K + k];
            const float v = static_cast<float>(acc);
            Y[i * O + o] = (v > 0.0f ? v : 0.0f) + B2[o];
        }
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l2p1s2_linear_relu_then_bias",
    cpp_sources=cpp_source,
    functions=["linear_bias_relu"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        return _ext.linear_bias_relu(x, self.linear.weight, self.linear.bias, self.bias)
