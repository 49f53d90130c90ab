# HACK: returns a half-precision tensor for a float32 task (the values are within fp16's own
# tolerance of the answer, but the harness must demand the reference's exact dtype rather
# than loosen its tolerance to the candidate's dtype).
# Task: level1/3_Relu.py. Expect WRONG_ANSWER (dtype mismatch).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x).to(torch.float16)
