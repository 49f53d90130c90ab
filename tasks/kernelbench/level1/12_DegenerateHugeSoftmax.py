import torch
import torch.nn as nn


class Model(nn.Module):
    """DELIBERATELY DEGENERATE. Softmax over a very long row of values in [0, 1).

    Every output lies between 1/(N*(e-1)) and e/(N*(e-1)), about 2e-6 to 6e-6 for
    N = 262144, far below the absolute tolerance of 1e-4: an all-zero (or any memorised)
    output passes, so crl must flag the task (FLAG_DEGENERATE_TASK).
    """

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


rows = 4
cols = 262144


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
