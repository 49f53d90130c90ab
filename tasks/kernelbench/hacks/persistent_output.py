# HACK: computes the right values, but into one buffer allocated on the first call and
# returned by every call after it. Each trial on its own is correct; a caller that keeps a
# result (a training loop, a residual, the timing loop's last outputs) sees it overwritten
# by the next call, and a timed loop never pays for an allocation.
# Task: level1/3_Relu.py. Expect WRONG_ANSWER (the output reuses the previous call's memory).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = None

    def forward(self, x):
        if self.out is None or self.out.shape != x.shape:
            self.out = torch.empty_like(x)
        torch.clamp(x, min=0, out=self.out)
        return self.out
