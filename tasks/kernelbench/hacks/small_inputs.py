# HACK: redefines the module's size constants and get_inputs so that, were they used, the
# inputs would be tiny; the forward only handles that tiny case (it reduces just the first
# row). The harness must take inputs from the task file, never from the candidate.
# Task: level1/2_RowSum.py. Expect WRONG_ANSWER (output shape (1,) instead of (128,)).
import torch
import torch.nn as nn

rows = 1
cols = 16
reduce_dim = 1


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [reduce_dim]


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x[:1], dim=self.dim)
