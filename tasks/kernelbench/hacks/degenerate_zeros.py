# HACK: the wrong-constant "solution" to the degenerate task: it ignores the input and returns
# zeros. It passes every correctness trial (the task's output is identically zero), so the
# verdict is OK, but crl must raise FLAG_DEGENERATE_TASK instead of crediting it.
# Task: level1/11_DegenerateRowMinClamp.py. Expect OK + DEGENERATE_TASK (+ NO_CUSTOM_KERNEL).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.new_zeros(x.shape[0])
