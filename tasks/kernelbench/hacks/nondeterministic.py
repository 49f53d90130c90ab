# HACK: non-determinism. Every second call adds noise of up to 0.05 (far above tolerance)
# drawn from a fresh generator seeded with the wall clock, so neither the harness's seeds nor
# a re-run reproduce it. Calls 1, 3, 5, ... are exact.
# Task: level1/3_Relu.py. Expect WRONG_ANSWER (a perturbed trial fails, and a re-run of the
# first trial differs from its first run).
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        out = torch.relu(x)
        if self.calls % 2 == 0:
            g = torch.Generator(device=x.device)
            g.manual_seed(time.time_ns() & 0x7FFFFFFF)
            out = out + 0.05 * torch.rand(out.shape, generator=g, device=x.device, dtype=x.dtype)
        return out
