# HACK: computes the first call honestly and returns a fresh copy of that answer ever after,
# whatever the inputs. On a task whose outputs for different inputs agree within the
# tolerance, every trial passes at the tolerance (and no buffer is reused); crl must fail it
# because its later outputs are another input's output.
# Task: level1/14_TinyScaledRowSum.py. Expect WRONG_ANSWER.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = None

    def forward(self, x):
        if self.first is None:
            self.first = x.sum(dim=1) * 1e-8
        return self.first.clone()
