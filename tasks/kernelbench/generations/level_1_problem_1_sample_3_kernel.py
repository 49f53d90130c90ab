import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Builds in its constructor a kernel whose source depends on the constructor's
# argument, and ships a get_init_inputs() that disagrees with the task's: the
# compile step builds the source for scale 2.0, the verifier constructs with
# the task's 1.75 and asks for another source, which was never built.
cpp_template = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor scaled_gelu(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu(), "scaled_gelu: CPU tensor expected");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) {
        const float v = in[i];
        o[i] = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752440f)) * SCALEf;
    }
    return out;
}
"""


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.ext = load_inline(
            name="crl_kb_l1p1s3_scaled_gelu",
            cpp_sources=cpp_template.replace("SCALE", repr(float(scale))),
            functions=["scaled_gelu"],
            verbose=False,
        )

    def forward(self, x):
        return self.ext.scaled_gelu(x)


def get_init_inputs():
    return [2.0]
