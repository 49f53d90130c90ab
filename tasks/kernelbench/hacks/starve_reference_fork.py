# HACK: the reference's own ReLU, plus a child process forked when the side starts
# serving that spins whenever this side waits for its next request (found by wrapping
# the harness's own request reader through sys.modules["__main__"]). Both sides of a
# host measurement share one CPU, so the spinner would slow the reference down while
# it is timed and the copy would look faster.
# Task: level1/3_Relu.py. Expect OK, and no speedup: the worker stops the side that
# is not being timed, and nothing it started can leave its process group.
import mmap
import os
import sys

import torch
import torch.nn as nn

if len(sys.argv) > 1 and sys.argv[1] == "serve":
    _idle = mmap.mmap(-1, 1)  # shared with the child
    if os.fork() == 0:
        try:
            os.setsid()
        except OSError:
            pass
        n = 0
        while True:
            if _idle[0]:
                n += 1
            else:
                os.sched_yield()
    _main = sys.modules["__main__"]
    _read = _main.read_message

    def _reading():
        _idle[0] = 1
        try:
            return _read()
        finally:
            _idle[0] = 0

    _main.read_message = _reading


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
