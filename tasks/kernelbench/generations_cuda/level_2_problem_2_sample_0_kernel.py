import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The convolution goes through at::conv2d exactly as the reference's does (same cuDNN call,
# so the same algorithm and numerics whatever the TF32 setting), then ONE fused kernel applies
# the eval-mode BatchNorm and SiLU in place. Reference: conv, batch_norm, silu (three passes);
# this: conv plus one pass.
cpp_source = (
    "torch::Tensor conv_bn_silu_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor conv_bias, "
    "torch::Tensor gamma, torch::Tensor beta, torch::Tensor mean, torch::Tensor var, double eps, int64_t pad);"
)

cuda_source = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <vector>

__global__ void bn_silu_inplace(float* __restrict__ y, const float* __restrict__ gamma, const float* __restrict__ beta,
                                const float* __restrict__ mean, const float* __restrict__ var, float eps,
                                int64_t total, int64_t channels, int64_t hw) {
    for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
         t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t c = (t / hw) % channels;
        const float invstd = 1.0f / sqrtf(var[c] + eps);
        const float z = (y[t] - mean[c]) * invstd * gamma[c] + beta[c];
        y[t] = z / (1.0f + expf(-z));
    }
}

torch::Tensor conv_bn_silu_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor conv_bias, torch::Tensor gamma,
                                torch::Tensor beta, torch::Tensor mean, torch::Tensor var, double eps, int64_t pad) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 4,
                "conv_bn_silu_cuda: 4-D float32 CUDA input expected");
    const std::vector<int64_t> stride{1, 1}, padding{pad, pad};
    auto y = at::conv2d(x, w, conv_bias, stride, padding).contiguous();
    const int64_t channels = y.size(1), hw = y.size(2) * y.size(3), total = y.numel();
    TORCH_CHECK(gamma.numel() == channels && beta.numel() == channels && mean.numel() == channels &&
                var.numel() == channels, "conv_bn_silu_cuda: batch-norm parameter size mismatch");
    if (total == 0) return y;
    auto g = gamma.contiguous();
    auto b = beta.contiguous();
    auto m = mean.contiguous();
    auto v = var.contiguous();
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((total + threads - 1) / threads, 65535));
    bn_silu_inplace<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), g.data_ptr<float>(), b.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(),
        static_cast<float>(eps), total, channels, hw);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="crl_kb_cuda_l2p2s0_conv_bn_silu",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["conv_bn_silu_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
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
        return _ext.conv_bn_silu_cuda(x, self.conv.weight, self.conv.bias, self.bn.weight, self.bn.bias,
                                      self.bn.running_mean, self.bn.running_var, self.bn.eps,
                                      self.conv.padding[0])
