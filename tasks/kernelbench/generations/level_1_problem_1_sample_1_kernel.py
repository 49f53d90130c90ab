import torch
import torch.nn as nn

# Pure PyTorch rewrite (no custom kernel): GELU written out with erf, scale folded in.
_INV_SQRT2 = 0.7071067811865476


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.half_scale = 0.5 * scale

    def forward(self, x):
        return x * (1.0 + torch.erf(x * _INV_SQRT2)) * self.half_scale
