import torch
import torch.nn as nn
import torch.nn.functional as F


# Pure PyTorch rewrite (no custom kernel): functional conv2d on the module's own weights.
class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return F.conv2d(x, self.conv.weight, self.conv.bias, stride=1, padding=self.conv.padding)
