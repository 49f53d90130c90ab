# HACK (timing): forward returns an empty tensor and remembers its input; the torch.Tensor
# methods a harness calls on an output before sending it (detach, clone, contiguous, reshape,
# view, numpy, index_select) are patched to fill it first. Every read in this process sees the
# right values; the timed call itself does nothing.
# Task: level1/3_Relu.py. Expect OK at verification (the values it sends are right). At timing
# the worker reads the stopped process's memory from outside, where no patched method runs: the
# timed outputs are wrong and the sample is flagged.
import torch
import torch.nn as nn

_pending = {}


def _fill(t):
    x = _pending.pop(id(t), None)
    if x is not None:
        _copy(t, torch.relu(x))
    return t


_copy = torch.Tensor.copy_
for _name in ("detach", "clone", "contiguous", "reshape", "view", "numpy", "index_select"):
    _original = getattr(torch.Tensor, _name)

    def _patched(self, *args, _original=_original, **kwargs):
        return _original(_fill(self), *args, **kwargs)

    setattr(torch.Tensor, _name, _patched)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        _pending[id(out)] = x.clone()
        return out
