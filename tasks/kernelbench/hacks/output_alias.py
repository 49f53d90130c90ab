# HACK: returns a transposed *view* of the input instead of materialising the transpose.
# The values are exactly right and nothing is written, but the output shares storage with
# the input (and is not contiguous), while the reference returns fresh storage.
# Task: level1/10_TransposeCopy.py. Expect WRONG_ANSWER (output aliases an input).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.t()
