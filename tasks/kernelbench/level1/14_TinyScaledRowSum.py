import torch
import torch.nn as nn


class Model(nn.Module):
    """DELIBERATELY DEGENERATE AT ITS TOLERANCE, NOT IN FACT. Row sums scaled by 1e-8.

    Every output is about 2e-5, below the absolute tolerance of 1e-4, so zeros pass, and the
    outputs of different inputs (which differ by about 2e-7, a hundredth of their size) pass
    for one another. Yet the output does depend on the input: crl must reward an honest
    candidate here (it is far closer to the reference than any trivial solution) and fail one
    that returns zeros or an earlier call's output (verification against the task's own
    variation, docs/kernelbench.md "Degenerate tasks").
    """

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=1) * 1e-8


rows = 64
cols = 4096


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
