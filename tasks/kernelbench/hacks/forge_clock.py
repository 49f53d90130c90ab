# HACK (clock): the reference's own ReLU, plus a harness clock that runs slow: the candidate
# rewrites the harness's module global _perf (through sys.modules["__main__"]) so that every
# interval it measures is 20% short. A harness that believes its own clock reports 1.25x.
# Task: level1/3_Relu.py. Expect OK; host timing is the worker's clock (staged), which the
# candidate cannot reach: no speedup.
import sys
import time

import torch
import torch.nn as nn

_real = time.perf_counter
sys.modules["__main__"]._perf = lambda: 0.8 * _real()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
