import torch
import torch.nn as nn


class Model(nn.Module):
    """out = (a @ b) * scale + a, with a: (M, K), b: (K, K)."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return torch.matmul(a, b) * self.scale + a


M = 128
K = 256
scale = 0.5


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, K)]


def get_init_inputs():
    return [scale]
