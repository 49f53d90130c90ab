import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# An honest candidate in the shape models write most: torch.matmul, then a
# kernel of its own launched with <<<grid, block>>> on the legacy default
# stream (no stream argument). A CUDA graph captured on PyTorch's current
# stream does not record that launch: replaying it would time a different
# computation. The harness checks a capture against the calls as launched
# and times as launched when they differ; this candidate must be timed
# without a flag.
_source = r"""
#include <torch/extension.h>

__global__ void scale_copy(const float* x, float* y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * 1.0f;
}

torch::Tensor copy_out(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  scale_copy<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""
_ext = load_inline(name="crl_legacy_stream_copy", cpp_sources="torch::Tensor copy_out(torch::Tensor x);",
                   cuda_sources=_source, functions=["copy_out"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return _ext.copy_out(torch.matmul(a, b).contiguous())
