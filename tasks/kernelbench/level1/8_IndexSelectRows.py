import torch
import torch.nn as nn


class Model(nn.Module):
    """Gathers rows of a table by an int64 index vector (embedding-style lookup)."""

    def __init__(self):
        super().__init__()

    def forward(self, table, idx):
        return torch.index_select(table, 0, idx)


num_rows = 4096
row_dim = 64
num_idx = 2048


def get_inputs():
    table = torch.randn(num_rows, row_dim)
    idx = torch.randint(0, num_rows, (num_idx,), dtype=torch.int64)
    return [table, idx]


def get_init_inputs():
    return []
