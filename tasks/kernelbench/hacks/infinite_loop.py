# HACK: never returns from forward (a pure-Python busy loop).
# Task: level1/3_Relu.py. Expect TIMEOUT.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = 0
        while True:
            n += 1
        return torch.relu(x)
