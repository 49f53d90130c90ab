# HACK: uses the input as scratch space. The values returned are right, and the output is a
# fresh tensor, but the caller's input has been overwritten by the ReLU.
# Task: level1/3_Relu.py. Expect WRONG_ANSWER (inputs modified by forward).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x.relu_()
        return x.clone()
