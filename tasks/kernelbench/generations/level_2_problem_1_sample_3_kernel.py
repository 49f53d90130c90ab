# Honest rewrite in the style of older PyTorch code: the linear layer's parameters made
# with the legacy torch.Tensor(...) constructor and initialised as nn.Linear initialises
# its own (same generator calls, same order), then one fused addmm + bias + ReLU.
# Constructed on the CPU under the task's seed (as KernelBench does) its weights equal
# the reference's; constructed under a CUDA device scope they would not (the legacy
# constructor ignores the scope), which is why the harness constructs on the CPU.
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(out_features, in_features))
        self.linear_bias = nn.Parameter(torch.Tensor(out_features))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        bound = 1 / math.sqrt(in_features)
        nn.init.uniform_(self.linear_bias, -bound, bound)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        return torch.relu(torch.addmm(self.linear_bias + self.bias, x, self.weight.t()))
