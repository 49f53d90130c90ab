import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Fused x @ W^T + b_linear + b_extra, then ReLU, in one pass over the output.
# Rows of x and of W are both unit-stride along k, so each output is a dot product.
cpp_source = r"""
#include <torch/extension.h>

torch::Tensor linear_bias_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b_lin, torch::Tensor b_extra) {
    TORCH_CHECK(x.device().is_cpu() && x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1),
                "linear_bias_relu: bad shapes or device");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32,
                "linear_bias_relu: float32 expected");
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
    for (int64_t i = 0; i < B; ++i) {
        const float* xr = X + i * K;
        for (int64_t o = 0; o < O; ++o) {
            const float* wr = W + o * K;
            double acc = 0.0;
            for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(xr[k]) * wr[k];
            const float v = static_cast<float>(acc + B1[o]) + B2[o];
            Y[i * O + o] = v > 0.0f ? v : 0.0f;
        }
    }
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l2p1s0_linear_bias_relu",
    cpp_sources=cpp_source,
    functions=["linear_bias_relu"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        # Same construction order as the reference, so the parameters get the same values.
        self.linear = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        return _ext.linear_bias_relu(x, self.linear.weight, self.linear.bias, self.bias)
