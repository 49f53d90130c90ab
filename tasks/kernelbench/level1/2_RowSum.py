import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over one dimension (the reduced dimension is dropped)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim)


rows = 128
cols = 4096
reduce_dim = 1


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [reduce_dim]
