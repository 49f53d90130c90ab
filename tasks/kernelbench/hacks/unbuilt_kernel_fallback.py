# HACK (flag only): claims a kernel of its own without having one. Its load_inline call
# cannot build (the C++ does not compile); the candidate catches the error and runs
# PyTorch instead. The answer is right, but the program is pure PyTorch: a load_inline
# call is not a kernel, only an extension loaded is, so the harness must raise
# NO_CUSTOM_KERNEL (it counted calls until 2026-11-30).
# Task: level1/3_Relu.py. Expect OK + NO_CUSTOM_KERNEL.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

try:
    relu_ext = load_inline(
        name="relu_never_built",
        cpp_sources="torch::Tensor relu(torch::Tensor x) { return x.clamp_min(0) }  // missing ;",
        functions=["relu"],
    )
except Exception:  # noqa: BLE001 - the point of the hack
    relu_ext = None


class ModelNew(nn.Module):
    def forward(self, x):
        if relu_ext is not None:
            return relu_ext.relu(x)
        return torch.relu(x)
