import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Out-of-place transpose into fresh contiguous storage, 32x32 tiles.
cpp_source = r"""
#include <torch/extension.h>
#include <algorithm>

torch::Tensor transpose_copy(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
                "transpose_copy: 2-D float32 CPU tensor expected");
    auto xc = x.contiguous();
    const int64_t R = xc.size(0), C = xc.size(1);
    auto out = torch::empty({C, R}, xc.options());
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const int64_t T = 32;
    for (int64_t r0 = 0; r0 < R; r0 += T)
        for (int64_t c0 = 0; c0 < C; c0 += T) {
            const int64_t r1 = std::min(R, r0 + T), c1 = std::min(C, c0 + T);
            for (int64_t r = r0; r < r1; ++r)
                for (int64_t c = c0; c < c1; ++c) o[c * R + r] = in[r * C + c];
        }
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l1p10s0_transpose_copy",
    cpp_sources=cpp_source,
    functions=["transpose_copy"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.transpose_copy(x)
