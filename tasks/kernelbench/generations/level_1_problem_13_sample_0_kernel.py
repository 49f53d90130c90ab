# Honest pure-PyTorch rewrite: row sums in float64, divided by the row length.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return (x.sum(dim=1, dtype=torch.float64) / x.shape[1]).to(x.dtype)
