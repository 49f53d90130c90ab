import torch
import torch.nn as nn
import torch.nn.functional as F


# Pure PyTorch rewrite (no custom kernel): fold the two bias vectors into a single addmm.
class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x):
        return torch.relu(F.linear(x, self.linear.weight, self.linear.bias + self.bias))
