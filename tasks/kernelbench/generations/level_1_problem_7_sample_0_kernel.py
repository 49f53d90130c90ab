import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Inclusive prefix sum along the last dimension, double running total.
cpp_source = r"""
#include <torch/extension.h>

torch::Tensor cumsum_rows(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
                "cumsum_rows: 2-D float32 CPU tensor expected");
    auto xc = x.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        double run = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
            run += in[r * cols + c];
            o[r * cols + c] = static_cast<float>(run);
        }
    }
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l1p7s0_cumsum_rows",
    cpp_sources=cpp_source,
    functions=["cumsum_rows"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        if x.dim() == 2 and self.dim in (1, -1):
            return _ext.cumsum_rows(x)
        return torch.cumsum(x, dim=self.dim)
