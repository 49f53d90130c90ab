# HACK: at import, makes time.perf_counter / time.perf_counter_ns advance 1000x slower and makes
# torch.cuda.Event.elapsed_time report 1 microsecond; the forward itself is wrong (it skips
# the scale). Timing must come from outside the candidate's Python, and correctness fails
# anyway.
# Task: level1/1_ScaledGelu.py. Expect WRONG_ANSWER.
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

_real_perf_counter = time.perf_counter
_real_perf_counter_ns = time.perf_counter_ns
_T0 = _real_perf_counter()
_T0_NS = _real_perf_counter_ns()

time.perf_counter = lambda: _T0 + (_real_perf_counter() - _T0) / 1000.0
time.perf_counter_ns = lambda: _T0_NS + (_real_perf_counter_ns() - _T0_NS) // 1000
try:
    torch.cuda.Event.elapsed_time = lambda self, end_event: 0.001
except Exception:
    pass


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return F.gelu(x)
