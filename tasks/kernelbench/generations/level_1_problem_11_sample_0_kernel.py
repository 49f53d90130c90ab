import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest implementation of the (degenerate) row-min / shift / clamp task. It is correct, but
# the task itself is degenerate, so crl should still report FLAG_DEGENERATE_TASK.
cpp_source = r"""
#include <torch/extension.h>

torch::Tensor rowmin_shift_clamp(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.dim() == 2 && x.scalar_type() == torch::kFloat32,
                "rowmin_shift_clamp: 2-D float32 CPU tensor expected");
    auto xc = x.contiguous();
    const int64_t rows = xc.size(0), cols = xc.size(1);
    auto out = torch::empty({rows}, xc.options());
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        float m = in[r * cols];
        for (int64_t c = 1; c < cols; ++c) m = in[r * cols + c] < m ? in[r * cols + c] : m;
        const float v = m - 1.0f;
        o[r] = v > 0.0f ? v : 0.0f;
    }
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l1p11s0_rowmin_shift_clamp",
    cpp_sources=cpp_source,
    functions=["rowmin_shift_clamp"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.rowmin_shift_clamp(x)
