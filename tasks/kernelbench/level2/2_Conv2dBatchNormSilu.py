import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d ('same' padding) -> BatchNorm2d in eval mode -> SiLU.

    The BatchNorm affine parameters and running statistics are drawn from the RNG right
    after the convolution is built (in the order below), so that the eval-mode BatchNorm is
    not the near-identity it would be with default statistics. A ModelNew that builds the
    same modules and draws the same tensors in the same order gets identical values.
    """

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bn = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            self.bn.weight.copy_(torch.rand(out_channels) + 0.5)
            self.bn.bias.copy_(torch.randn(out_channels) * 0.1)
            self.bn.running_mean.copy_(torch.randn(out_channels) * 0.2)
            self.bn.running_var.copy_(torch.rand(out_channels) + 0.5)

    def forward(self, x):
        return F.silu(self.bn(self.conv(x)))


batch_size = 8
in_channels = 3
out_channels = 16
kernel_size = 3
height = 32
width = 32


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
