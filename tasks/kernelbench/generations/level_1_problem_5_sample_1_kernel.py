import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Blocked matmul. DOES NOT COMPILE (deliberate, for crl's tests): the tensors are used
# as if they were raw float pointers (no data_ptr<float>()), and the block size constant
# is misspelt. Expect COMPILE_ERROR.
cpp_source = r"""
#include <torch/extension.h>

torch::Tensor matmul_blocked(torch::Tensor a, torch::Tensor b) {
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    auto out = torch::zeros({M, N}, a.options());
    const float* A = a;
    const float* B = b;
    float* C = out;
    constexpr int64_t BLOCK = 64;
    for (int64_t i0 = 0; i0 < M; i0 += BLOK)
        for (int64_t k = 0; k < K; ++k)
            for (int64_t i = i0; i < i0 + BLOCK && i < M; ++i)
                for (int64_t j = 0; j < N; ++j) C[i * N + j] += A[i * K + k] * B[k * N + j];
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l1p5s1_matmul_blocked",
    cpp_sources=cpp_source,
    functions=["matmul_blocked"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return _ext.matmul_blocked(a, b)
