import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Direct 2-D convolution (stride 1, symmetric zero padding) with bias; one output pixel at
# a time, double accumulator. The weights come from an nn.Conv2d built exactly as in the
# reference, so they are initialised identically.
cpp_source = r"""
#include <torch/extension.h>

torch::Tensor conv2d_direct(torch::Tensor x, torch::Tensor w, torch::Tensor bias, int64_t pad) {
    TORCH_CHECK(x.device().is_cpu() && x.dim() == 4 && w.dim() == 4, "conv2d_direct: 4-D CPU tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 &&
                bias.scalar_type() == torch::kFloat32, "conv2d_direct: float32 expected");
    TORCH_CHECK(x.size(1) == w.size(1), "conv2d_direct: channel mismatch");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    auto bc = bias.contiguous();
    const int64_t N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3);
    const int64_t O = wc.size(0), KH = wc.size(2), KW = wc.size(3);
    const int64_t OH = H + 2 * pad - KH + 1, OW = W + 2 * pad - KW + 1;
    auto out = torch::empty({N, O, OH, OW}, xc.options());
    const float* X = xc.data_ptr<float>();
    const float* Wt = wc.data_ptr<float>();
    const float* B = bc.data_ptr<float>();
    float* Y = out.data_ptr<float>();
    for (int64_t n = 0; n < N; ++n)
        for (int64_t o = 0; o < O; ++o)
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                    double acc = B[o];
                    for (int64_t c = 0; c < C; ++c)
                        for (int64_t kh = 0; kh < KH; ++kh) {
                            const int64_t ih = oh + kh - pad;
                            if (ih < 0 || ih >= H) continue;
                            for (int64_t kw = 0; kw < KW; ++kw) {
                                const int64_t iw = ow + kw - pad;
                                if (iw < 0 || iw >= W) continue;
                                acc += static_cast<double>(X[((n * C + c) * H + ih) * W + iw]) *
                                       Wt[((o * C + c) * KH + kh) * KW + kw];
                            }
                        }
                    Y[((n * O + o) * OH + oh) * OW + ow] = static_cast<float>(acc);
                }
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l1p6s0_conv2d_direct",
    cpp_sources=cpp_source,
    functions=["conv2d_direct"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return _ext.conv2d_direct(x, self.conv.weight, self.conv.bias, self.conv.padding[0])
