# HACK (GPU only): does the work on a private CUDA stream and returns without making the
# caller's stream wait for it. Events recorded on the current stream then time almost
# nothing; torch.cuda._sleep adds ~1 ms of hidden GPU time so the difference is unmistakable.
# The side stream first waits for the current stream, so the inputs are ready, and a harness
# that synchronises the whole device before reading the output sees the right answer.
# Task: level1/5_Matmul.py. Expect OK (+ NO_CUSTOM_KERNEL) with timing flag SIDE_STREAM.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._stream = None

    def forward(self, a, b):
        if not a.is_cuda:
            return torch.matmul(a, b)
        if self._stream is None:
            self._stream = torch.cuda.Stream(device=a.device)
        s = self._stream
        s.wait_stream(torch.cuda.current_stream(a.device))
        with torch.cuda.stream(s):
            torch.cuda._sleep(2_000_000)
            out = torch.matmul(a, b)
        return out
