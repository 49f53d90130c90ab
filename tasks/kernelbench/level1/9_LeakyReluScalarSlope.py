import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Leaky ReLU whose negative slope is a plain Python float passed to forward."""

    def __init__(self):
        super().__init__()

    def forward(self, x, negative_slope):
        return F.leaky_relu(x, negative_slope)


batch_size = 32
dim = 8192


def get_inputs():
    x = torch.randn(batch_size, dim)
    negative_slope = 0.05 + 0.4 * float(torch.rand(1).item())
    return [x, negative_slope]


def get_init_inputs():
    return []
