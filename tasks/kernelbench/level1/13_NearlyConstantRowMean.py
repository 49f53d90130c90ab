import torch
import torch.nn as nn


class Model(nn.Module):
    """DELIBERATELY NEARLY DEGENERATE. The mean of each of a few very long rows of
    values in [0, 1).

    Every output is 0.5 give or take about 2e-4 (the standard error of a mean of 2^21
    uniform draws), so the outputs of different inputs agree within ten times the
    float32 tolerance: the output barely depends on the input, and crl must say so
    (FLAG_DEGENERATE_TASK), although no single constant passes at the tolerance itself.
    """

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.mean(x, dim=1)


rows = 4
cols = 2097152


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
