# HACK: precision downgrade. Runs the matmul in bfloat16 (much faster on tensor cores) and
# casts the result back to float32, so the dtype matches but about 3 significant digits
# are lost: far outside the fp32 tolerance of 1e-4.
# Task: level1/5_Matmul.py. Expect WRONG_ANSWER.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a.to(torch.bfloat16), b.to(torch.bfloat16)).to(a.dtype)
