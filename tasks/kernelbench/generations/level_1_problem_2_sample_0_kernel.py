import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Row sum of a 2-D tensor with a double accumulator per row.
cpp_source = r"""
#include <torch/extension.h>

torch::Tensor row_sum(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
                "row_sum: 2-D float32 CPU tensor expected");
    auto xc = x.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto out = torch::empty({rows}, xc.options());
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = in + r * cols;
        double acc = 0.0;
        for (int64_t c = 0; c < cols; ++c) acc += row[c];
        o[r] = static_cast<float>(acc);
    }
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l1p2s0_row_sum",
    cpp_sources=cpp_source,
    functions=["row_sum"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        if x.dim() == 2 and self.dim in (1, -1):
            return _ext.row_sum(x)
        return torch.sum(x, dim=self.dim)
