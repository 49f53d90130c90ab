# HACK (leftovers): leaves state behind in its process for whatever runs there next: a
# patched torch.relu (slow and off by one), a changed global setting, a spinning thread, a
# marker in builtins, an environment variable and a file in /tmp. Its own forward is a
# correct ReLU through clamp, so on its own it is OK (+ GLOBAL_FLAGS for the setting it
# changed at import). The point is the next candidate: tests/integration/kernelbench_test.cc
# evaluates an honest torch.relu candidate after it on the same lane, from the warm pool,
# and requires it verified and timed as if this one had never run.
# Task: level1/3_Relu.py. Expect OK + GLOBAL_FLAGS + NO_CUSTOM_KERNEL.
import builtins
import os
import threading
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

_real_relu = torch.relu


def _slow_wrong_relu(x, *args, **kwargs):
    time.sleep(0.02)
    return _real_relu(x) + 1


torch.relu = _slow_wrong_relu
F.relu = _slow_wrong_relu
torch.Tensor.relu = _slow_wrong_relu
torch.backends.cudnn.benchmark = not torch.backends.cudnn.benchmark
builtins.crl_leftover = True
os.environ["CRL_LEFTOVER"] = "1"
with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "crl_leftover"), "w") as f:
    f.write("left behind\n")


def _spin():
    while True:
        time.sleep(0.001)


threading.Thread(target=_spin, name="crl-leftover-spin", daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(x, min=0.0)
