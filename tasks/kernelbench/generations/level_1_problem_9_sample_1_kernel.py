import torch
import torch.nn as nn
import torch.nn.functional as F


# Pure PyTorch rewrite.
# BUG (deliberate, for crl's tests): the slope argument is accepted but ignored, so the
# default slope 0.01 is used; the task draws the slope from [0.05, 0.45). Expect WRONG_ANSWER.
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, negative_slope):
        return F.leaky_relu(x)
