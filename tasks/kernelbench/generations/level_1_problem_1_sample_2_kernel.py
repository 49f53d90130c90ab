import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The fused host GELU * scale of sample 0, built the way CUDA-L1's kernels
# often are: load_inline called in the constructor, not at import.
cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor scaled_gelu(torch::Tensor x, double scale) {
    TORCH_CHECK(x.device().is_cpu(), "scaled_gelu: CPU tensor expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "scaled_gelu: float32 expected");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const int64_t n = xc.numel();
    const float s = static_cast<float>(scale);
    const float inv_sqrt2 = 0.70710678118654752440f;
    for (int64_t i = 0; i < n; ++i) {
        const float v = in[i];
        o[i] = 0.5f * v * (1.0f + std::erf(v * inv_sqrt2)) * s;
    }
    return out;
}
"""


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.ext = load_inline(
            name="crl_kb_l1p1s2_scaled_gelu",
            cpp_sources=cpp_source,
            functions=["scaled_gelu"],
            verbose=False,
            extra_cflags=["-O3"],
        )

    def forward(self, x):
        return self.ext.scaled_gelu(x, self.scale)


batch_size = 64
dim = 4096
scale = 1.75


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scale]
