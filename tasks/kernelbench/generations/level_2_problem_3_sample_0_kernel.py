import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# out = (a @ b) * scale + a, fused: i-k-j matmul into a double row accumulator, then the
# scale and the residual are applied while writing the row out.
cpp_source = r"""
#include <torch/extension.h>
#include <vector>

torch::Tensor matmul_scale_residual(torch::Tensor a, torch::Tensor b, double scale) {
    TORCH_CHECK(a.device().is_cpu() && a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0) &&
                b.size(0) == b.size(1), "matmul_scale_residual: a (M,K), b (K,K) CPU tensors expected");
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
                "matmul_scale_residual: float32 expected");
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    const int64_t M = ac.size(0), K = ac.size(1);
    auto out = torch::empty({M, K}, ac.options());
    const float* A = ac.data_ptr<float>();
    const float* B = bc.data_ptr<float>();
    float* C = out.data_ptr<float>();
    const float s = static_cast<float>(scale);
    std::vector<double> acc(K);
    for (int64_t i = 0; i < M; ++i) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t k = 0; k < K; ++k) {
            const double aik = A[i * K + k];
            const float* brow = B + k * K;
            for (int64_t j = 0; j < K; ++j) acc[j] += aik * brow[j];
        }
        for (int64_t j = 0; j < K; ++j) C[i * K + j] = static_cast<float>(acc[j]) * s + A[i * K + j];
    }
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l2p3s0_matmul_scale_residual",
    cpp_sources=cpp_source,
    functions=["matmul_scale_residual"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return _ext.matmul_scale_residual(a, b, self.scale)
