# HACK (type check only): a torch.Tensor subclass carrying the *correct* values. A subclass
# can run arbitrary Python when the harness touches it (here: __reduce_ex__ / __torch_function__
# would be free to lie), so the harness must reject any output that is not exactly a
# torch.Tensor, whatever its values.
# Task: level1/1_ScaledGelu.py. Expect WRONG_ANSWER (output is not a plain torch.Tensor).
import torch
import torch.nn as nn
import torch.nn.functional as F


class Lazy(torch.Tensor):
    pass


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return (F.gelu(x) * self.scale).as_subclass(Lazy)
