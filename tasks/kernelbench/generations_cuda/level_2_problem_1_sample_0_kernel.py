import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# GEMM through cuBLAS (torch::mm, fp32), then ONE fused epilogue kernel that adds both bias
# vectors and applies ReLU in place. The reference runs addmm, then an add kernel, then a
# ReLU kernel; this runs the GEMM plus one elementwise pass.
cpp_source = (
    "torch::Tensor linear_bias_relu_cuda(torch::Tensor x, torch::Tensor w, "
    "torch::Tensor b_lin, torch::Tensor b_extra);"
)

cuda_source = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void bias2_relu_inplace(float* __restrict__ y, const float* __restrict__ b1,
                                   const float* __restrict__ b2, int64_t rows, int64_t cols) {
    const int64_t total = rows * cols;
    for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
         t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t c = t % cols;
        const float v = (y[t] + b1[c]) + b2[c];
        y[t] = fmaxf(v, 0.0f);
    }
}

torch::Tensor linear_bias_relu_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b_lin, torch::Tensor b_extra) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && b_lin.is_cuda() && b_extra.is_cuda(),
                "linear_bias_relu_cuda: CUDA tensors expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32,
                "linear_bias_relu_cuda: float32 expected");
    TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1), "linear_bias_relu_cuda: bad shapes");
    auto y = torch::mm(x.contiguous(), w.t()).contiguous();  // (B, O), fresh storage
    auto b1 = b_lin.contiguous();
    auto b2 = b_extra.contiguous();
    const int64_t rows = y.size(0), cols = y.size(1);
    TORCH_CHECK(b1.numel() == cols && b2.numel() == cols, "linear_bias_relu_cuda: bias size mismatch");
    const int64_t total = rows * cols;
    if (total == 0) return y;
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<int64_t>((total + threads - 1) / threads, 65535));
    bias2_relu_inplace<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), b1.data_ptr<float>(), b2.data_ptr<float>(), rows, cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(
    name="crl_kb_cuda_l2p1s0_linear_bias_relu",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["linear_bias_relu_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        # Same construction order as the reference, so the parameters get the same values.
        self.linear = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        return _ext.linear_bias_relu_cuda(x, self.linear.weight, self.linear.bias, self.bias)
