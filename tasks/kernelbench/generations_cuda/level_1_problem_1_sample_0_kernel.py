import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Fused exact GELU * scale: one read and one write per element (the reference launches a
# GELU kernel and then a multiply kernel, i.e. two reads and two writes). float4 path when
# the tensor is 16-byte aligned and its size a multiple of 4, scalar path otherwise.
cpp_source = "torch::Tensor scaled_gelu_cuda(torch::Tensor x, double scale);"

cuda_source = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__device__ __forceinline__ float gelu_scaled(float v, float s) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f)) * s;
}

__global__ void scaled_gelu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4, float s) {
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n4;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        float4 v = x[i];
        v.x = gelu_scaled(v.x, s);
        v.y = gelu_scaled(v.y, s);
        v.z = gelu_scaled(v.z, s);
        v.w = gelu_scaled(v.w, s);
        y[i] = v;
    }
}

__global__ void scaled_gelu_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t n, float s) {
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        y[i] = gelu_scaled(x[i], s);
    }
}

torch::Tensor scaled_gelu_cuda(torch::Tensor x, double scale) {
    TORCH_CHECK(x.is_cuda(), "scaled_gelu_cuda: CUDA tensor expected");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "scaled_gelu_cuda: float32 expected");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return out;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const int threads = 256;
    const float s = static_cast<float>(scale);
    const bool vec = (n % 4 == 0) && (reinterpret_cast<uintptr_t>(xc.data_ptr<float>()) % 16 == 0) &&
                     (reinterpret_cast<uintptr_t>(out.data_ptr<float>()) % 16 == 0);
    if (vec) {
        const int64_t n4 = n / 4;
        const int blocks = static_cast<int>(std::min<int64_t>((n4 + threads - 1) / threads, 65535));
        scaled_gelu_vec4<<<blocks, threads, 0, stream>>>(reinterpret_cast<const float4*>(xc.data_ptr<float>()),
                                                         reinterpret_cast<float4*>(out.data_ptr<float>()), n4, s);
    } else {
        const int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 65535));
        scaled_gelu_scalar<<<blocks, threads, 0, stream>>>(xc.data_ptr<float>(), out.data_ptr<float>(), n, s);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_cuda_l1p1s0_scaled_gelu",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["scaled_gelu_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return _ext.scaled_gelu_cuda(x, self.scale)
