# HACK: returns zeros for a task whose outputs all lie within the tolerance of zero but still
# depend on the input. Passes every trial at the tolerance; crl must fail it because it is
# the trivial solution, far from the reference compared with an honest candidate.
# Task: level1/14_TinyScaledRowSum.py. Expect WRONG_ANSWER.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.new_zeros(x.shape[0])
