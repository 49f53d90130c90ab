# HACK (flag only): changes process-wide torch settings (thread count, cuDNN autotuning,
# TF32 / reduced-precision matmul) at import and in the constructor. The forward itself is a
# correct softmax with no matmul or convolution, so the answer is right on CPU and GPU alike;
# the harness must pass it but raise FLAG_GLOBAL_FLAGS.
# Task: level1/4_RowSoftmax.py. Expect OK + GLOBAL_FLAGS (+ NO_CUSTOM_KERNEL).
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.backends.cudnn.benchmark = True


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        torch.set_float32_matmul_precision("medium")
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.backends.cudnn.deterministic = False

    def forward(self, x):
        return torch.softmax(x, dim=1)
