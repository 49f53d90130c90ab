import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """A correct ReLU whose every call takes three seconds: a verification of
    it (six calls or more, 18 s) is still in its trials when timing asks for
    the GPU, however quickly its sides started."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        time.sleep(3.0)
        return torch.relu(x)


batch_size = 32
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
