import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Row sum, unrolled by 4 with a scalar tail.
# BUG (deliberate, for crl's tests): the tail loop stops one element early, so when the
# row length is a multiple of 4 the last element of every row is dropped. Expect WRONG_ANSWER.
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
        double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
        int64_t c = 0;
        for (; c + 4 < cols; c += 4) {
            a0 += row[c];
            a1 += row[c + 1];
            a2 += row[c + 2];
            a3 += row[c + 3];
        }
        for (; c < cols - 1; ++c) a0 += row[c];
        o[r] = static_cast<float>((a0 + a1) + (a2 + a3));
    }
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l1p2s1_row_sum_unrolled",
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
        return _ext.row_sum(x)
