import torch
import torch.nn as nn


class Model(nn.Module):
    """DELIBERATELY DEGENERATE. Row minimum, shifted by -1, clamped at 0.

    The inputs come from torch.rand, i.e. lie in [0, 1), so min - 1 < 0 and the output is
    exactly zero for every input. A candidate that returns zeros passes; crl must flag the
    task (FLAG_DEGENERATE_TASK) rather than credit such a candidate.
    """

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(torch.min(x, dim=1).values - 1.0, min=0.0)


rows = 256
cols = 1024


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
