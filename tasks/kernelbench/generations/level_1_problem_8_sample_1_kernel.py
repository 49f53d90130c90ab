import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Row gather written for int32 indices.
# BUG (deliberate, for crl's tests): the task passes int64 indices; the dtype check throws
# at the first call (c10::Error -> RuntimeError in Python). Expect RUNTIME_ERROR.
cpp_source = r"""
#include <torch/extension.h>
#include <cstring>

torch::Tensor gather_rows_i32(torch::Tensor table, torch::Tensor idx) {
    TORCH_CHECK(idx.scalar_type() == torch::kInt32, "gather_rows_i32: int32 index expected, got ",
                idx.scalar_type());
    auto tc = table.contiguous();
    auto ic = idx.contiguous();
    const int64_t dim = tc.size(1), n = ic.size(0);
    auto out = torch::empty({n, dim}, tc.options());
    const float* T = tc.data_ptr<float>();
    const int32_t* I = ic.data_ptr<int32_t>();
    float* O = out.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) std::memcpy(O + i * dim, T + static_cast<int64_t>(I[i]) * dim, sizeof(float) * dim);
    return out;
}
"""

_ext = load_inline(
    name="crl_kb_l1p8s1_gather_rows_i32",
    cpp_sources=cpp_source,
    functions=["gather_rows_i32"],
    verbose=False,
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, table, idx):
        return _ext.gather_rows_i32(table, idx)
