import torch
import torch.nn as nn


# Pure PyTorch rewrite (no custom kernel).
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(x, min=0.0)
