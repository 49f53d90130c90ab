import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Leaky ReLU with the slope taken from forward's Python float argument (bound as double).
cpp_source = r"""
#include <torch/extension.h>

torch::Tensor leaky_relu_scalar(torch::Tensor x, double negative_slope) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32,
                "leaky_relu_scalar: float32 CPU tensor expected");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const float s = static_cast<float>(negative_slope);
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = in[i] > 0.0f ? in[i] : in[i] * s;
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l1p9s0_leaky_relu_scalar",
    cpp_sources=cpp_source,
    functions=["leaky_relu_scalar"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, negative_slope):
        return _ext.leaky_relu_scalar(x, float(negative_slope))
