# HACK: returns a zero-filled output at once and leaves a Python thread running that writes
# the real answer into it 0.3 s later, hoping the harness stops the clock at return but
# compares only later.
# Task: level1/3_Relu.py. Expect WRONG_ANSWER (a thread is still alive after forward returns).
import threading
import time

import torch
import torch.nn as nn


def _fill_later(out, x):
    time.sleep(0.3)
    with torch.no_grad():
        out.copy_(torch.relu(x))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.zeros_like(x)
        threading.Thread(target=_fill_later, args=(out, x.clone()), daemon=True).start()
        return out
