import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Conv2d + eval-mode BatchNorm + SiLU in one pass: each output pixel is convolved (double
# accumulator), normalised with the running statistics, and passed through x * sigmoid(x).
cpp_source = r"""
#include <torch/extension.h>
#include <cmath>
#include <vector>

torch::Tensor conv_bn_silu(torch::Tensor x, torch::Tensor w, torch::Tensor conv_bias,
                           torch::Tensor gamma, torch::Tensor beta, torch::Tensor mean,
                           torch::Tensor var, double eps, int64_t pad) {
    TORCH_CHECK(x.device().is_cpu() && x.dim() == 4 && w.dim() == 4 && x.size(1) == w.size(1),
                "conv_bn_silu: bad shapes or device");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "conv_bn_silu: float32 expected");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    const int64_t N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3);
    const int64_t O = wc.size(0), KH = wc.size(2), KW = wc.size(3);
    const int64_t OH = H + 2 * pad - KH + 1, OW = W + 2 * pad - KW + 1;
    auto cb = conv_bias.contiguous();
    auto g = gamma.contiguous();
    auto bt = beta.contiguous();
    auto mu = mean.contiguous();
    auto vr = var.contiguous();
    // Per-channel affine form of the eval-mode BatchNorm: y = conv * a + c.
    std::vector<double> a(O), c(O);
    for (int64_t o = 0; o < O; ++o) {
        a[o] = g.data_ptr<float>()[o] / std::sqrt(static_cast<double>(vr.data_ptr<float>()[o]) + eps);
        c[o] = bt.data_ptr<float>()[o] - mu.data_ptr<float>()[o] * a[o];
    }
    auto out = torch::empty({N, O, OH, OW}, xc.options());
    const float* X = xc.data_ptr<float>();
    const float* Wt = wc.data_ptr<float>();
    const float* CB = cb.data_ptr<float>();
    float* Y = out.data_ptr<float>();
    for (int64_t n = 0; n < N; ++n)
        for (int64_t o = 0; o < O; ++o)
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                    double acc = CB[o];
                    for (int64_t ci = 0; ci < C; ++ci)
                        for (int64_t kh = 0; kh < KH; ++kh) {
                            const int64_t ih = oh + kh - pad;
                            if (ih < 0 || ih >= H) continue;
                            for (int64_t kw = 0; kw < KW; ++kw) {
                                const int64_t iw = ow + kw - pad;
                                if (iw < 0 || iw >= W) continue;
                                acc += static_cast<double>(X[((n * C + ci) * H + ih) * W + iw]) *
                                       Wt[((o * C + ci) * KH + kh) * KW + kw];
                            }
                        }
                    const double z = acc * a[o] + c[o];
                    Y[((n * O + o) * OH + oh) * OW + ow] = static_cast<float>(z / (1.0 + std::exp(-z)));
                }
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l2p2s0_conv_bn_silu",
    cpp_sources=cpp_source,
    functions=["conv_bn_silu"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        # Built and initialised in exactly the reference's order (same RNG draws).
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bn = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            self.bn.weight.copy_(torch.rand(out_channels) + 0.5)
            self.bn.bias.copy_(torch.randn(out_channels) * 0.1)
            self.bn.running_mean.copy_(torch.randn(out_channels) * 0.2)
            self.bn.running_var.copy_(torch.rand(out_channels) + 0.5)

    def forward(self, x):
        return _ext.conv_bn_silu(x, self.conv.weight, self.conv.bias, self.bn.weight, self.bn.bias,
                                 self.bn.running_mean, self.bn.running_var, self.bn.eps,
                                 self.conv.padding[0])
