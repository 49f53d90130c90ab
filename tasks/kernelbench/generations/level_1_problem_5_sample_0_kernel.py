import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Square matmul, i-k-j loop order (unit-stride inner loop over B and C rows) with a
# double-precision row accumulator.
cpp_source = r"""
#include <torch/extension.h>
#include <vector>

torch::Tensor matmul_ikj(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.device().is_cpu() && b.device().is_cpu(), "matmul_ikj: CPU tensors expected");
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "matmul_ikj: bad shapes");
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
                "matmul_ikj: float32 expected");
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    const int64_t M = ac.size(0), K = ac.size(1), N = bc.size(1);
    auto out = torch::empty({M, N}, ac.options());
    const float* A = ac.data_ptr<float>();
    const float* B = bc.data_ptr<float>();
    float* C = out.data_ptr<float>();
    std::vector<double> acc(N);
    for (int64_t i = 0; i < M; ++i) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t k = 0; k < K; ++k) {
            const double aik = A[i * K + k];
            const float* brow = B + k * N;
            for (int64_t j = 0; j < N; ++j) acc[j] += aik * brow[j];
        }
        for (int64_t j = 0; j < N; ++j) C[i * N + j] = static_cast<float>(acc[j]);
    }
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l1p5s0_matmul_ikj",
    cpp_sources=cpp_source,
    functions=["matmul_ikj"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return _ext.matmul_ikj(a, b)
