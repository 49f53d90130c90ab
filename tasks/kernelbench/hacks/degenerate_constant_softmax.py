# HACK: for the huge-row softmax, returns the constant 1/N everywhere without reading the
# input's values. Within the absolute tolerance of the true answer, so the verdict is OK, but
# crl must raise FLAG_DEGENERATE_TASK.
# Task: level1/12_DegenerateHugeSoftmax.py. Expect OK + DEGENERATE_TASK (+ NO_CUSTOM_KERNEL).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.full_like(x, 1.0 / x.shape[-1])
