# HACK: returns uninitialised memory of the right shape and dtype, hoping that the allocator
# hands back a block that still holds a previous (reference) result. Reference and
# candidate run in separate processes, so there is nothing to find.
# Task: level1/1_ScaledGelu.py. Expect WRONG_ANSWER.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.empty_like(x)
