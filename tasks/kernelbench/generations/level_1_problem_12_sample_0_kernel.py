import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest softmax over the last dimension for the (degenerate) huge-row task. Correct, but
# crl should still report FLAG_DEGENERATE_TASK for the task.
cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor softmax_last(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32,
                "softmax_last: float32 CPU tensor expected");
    auto xc = x.contiguous();
    const int64_t cols = xc.size(-1), rows = xc.numel() / cols;
    auto out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = in + r * cols;
        float* yr = o + r * cols;
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
        double sum = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
            yr[c] = std::exp(xr[c] - m);
            sum += yr[c];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t c = 0; c < cols; ++c) yr[c] *= inv;
    }
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l1p12s0_softmax_last",
    cpp_sources=cpp_source,
    functions=["softmax_last"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.softmax_last(x)
