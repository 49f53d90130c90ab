import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D convolution, stride 1, 'same' zero padding, with bias."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return self.conv(x)


batch_size = 4
in_channels = 3
out_channels = 16
kernel_size = 3
height = 32
width = 32


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
