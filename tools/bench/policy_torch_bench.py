#!/usr/bin/env python3
"""The PyTorch side of crl's policy benchmarks (docs/benchmarks.md): the same
model shapes and the same work as crl-bench-trainer and crl-bench-sampler,
written the way a researcher writes them in eager PyTorch today, optionally
under torch.compile.

  policy_torch_bench.py train --preset qwen2.5-0.5b --mode full [--compile]
  policy_torch_bench.py generate --preset qwen2.5-0.5b --batch 8 --prompt_len 512 --new_tokens 512
  torchrun --nproc_per_node 2 policy_torch_bench.py train --sequences 16   (DistributedDataParallel, NCCL)

train: one GRPO step (bf16 autocast over float32 weights, PPO clip 0.2/0.28,
token-mean loss, grad clip 1.0, AdamW) on random token sequences, logits over
the completion only with TRL's per-row selective log-softmax; then the
no-gradient log-probabilities of the same batch. Under torchrun (WORLD_SIZE > 1)
the model is wrapped in DistributedDataParallel and each rank takes its shard
of the global batch (--sequences), as crl-bench-trainer's ranks do; tokens/s
counts the global batch and only rank 0 prints. generate: prefill, then a
decode loop over a preallocated KV cache with temperature-1 sampling. One JSON
line of results.
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PRESETS = {
    "qwen2.5-0.5b": dict(vocab=151936, hidden=896, inter=4864, layers=24, heads=14, kv=2),
    "qwen2.5-1.5b": dict(vocab=151936, hidden=1536, inter=8960, layers=28, heads=12, kv=2),
}


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class Linear(nn.Module):
    """nn.Linear with an optional LoRA adapter (base frozen when present)."""

    def __init__(self, i, o, bias=False, rank=0, alpha=32):
        super().__init__()
        self.base = nn.Linear(i, o, bias=bias)
        self.rank = rank
        if rank:
            self.base.requires_grad_(False)
            self.a = nn.Parameter(torch.randn(rank, i) * (1 / math.sqrt(i)))
            self.b = nn.Parameter(torch.zeros(o, rank))
            self.scale = alpha / rank

    def forward(self, x):
        y = self.base(x)
        if self.rank:
            y = y + (x @ self.a.t() @ self.b.t()) * self.scale
        return y


def rope(positions, head_dim, theta=1e6):
    inv = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=positions.device).float() / head_dim)
    f = positions.float()[..., None] * inv
    emb = torch.cat([f, f], -1)
    return emb.cos(), emb.sin()


def rotate(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin


class Block(nn.Module):
    def __init__(self, c, rank):
        super().__init__()
        d, H, KV = c["hidden"], c["heads"], c["kv"]
        self.H, self.KV, self.D = H, KV, d // H
        self.q = Linear(d, H * self.D, True, rank)
        self.k = Linear(d, KV * self.D, True, rank)
        self.v = Linear(d, KV * self.D, True, rank)
        self.o = Linear(H * self.D, d, False, rank)
        self.gate = Linear(d, c["inter"], False, rank)
        self.up = Linear(d, c["inter"], False, rank)
        self.down = Linear(c["inter"], d, False, rank)
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)

    def forward(self, x, cos, sin, cache=None, pos=0):
        B, T, _ = x.shape
        h = self.n1(x)
        q = self.q(h).view(B, T, self.H, self.D).transpose(1, 2)
        k = self.k(h).view(B, T, self.KV, self.D).transpose(1, 2)
        v = self.v(h).view(B, T, self.KV, self.D).transpose(1, 2)
        q, k = rotate(q, cos[:, None], sin[:, None]).to(v.dtype), rotate(k, cos[:, None], sin[:, None]).to(v.dtype)
        if cache is not None:
            ck, cv = cache
            ck[:, :, pos:pos + T] = k
            cv[:, :, pos:pos + T] = v
            k, v = ck[:, :, :pos + T], cv[:, :, :pos + T]
        a = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(B, T, -1))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(nn.Module):
    def __init__(self, c, rank=0):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c["vocab"], c["hidden"])
        if rank:
            self.embed.requires_grad_(False)
        self.blocks = nn.ModuleList(Block(c, rank) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["hidden"])
        if rank:
            self.norm.requires_grad_(False)
            for b in self.blocks:
                b.n1.requires_grad_(False)
                b.n2.requires_grad_(False)

    def forward(self, ids, caches=None, pos=0):
        B, T = ids.shape
        cos, sin = rope(torch.arange(pos, pos + T, device=ids.device)[None].expand(B, T), self.c["hidden"] // self.c["heads"])
        x = self.embed(ids)
        for i, b in enumerate(self.blocks):
            x = b(x, cos, sin, None if caches is None else caches[i], pos)
        return self.norm(x) @ self.embed.weight.t()  # tied output embedding


def selective_log_softmax(logits, index):
    # TRL's memory-saving form: logsumexp one row at a time.
    lse = torch.stack([torch.logsumexp(row, dim=-1) for row in logits])
    return torch.gather(logits, -1, index.unsqueeze(-1)).squeeze(-1) - lse


def flops_per_token(c, context, training, lora):
    D = c["hidden"] // c["heads"]
    q, kv = c["heads"] * D, c["kv"] * D
    matmul = c["layers"] * (c["hidden"] * (2 * q + 2 * kv) + 3 * c["hidden"] * c["inter"]) + c["vocab"] * c["hidden"]
    attention = 2 * c["layers"] * q * context
    forward = 2 * matmul + 2 * attention
    return forward * ((2 if lora else 3) if training else 1)


def train(args, c):
    world = int(os.environ.get("WORLD_SIZE", "1"))
    me = int(os.environ.get("RANK", "0"))
    dev = "cuda"
    if world > 1:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
        dev = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
        torch.cuda.set_device(dev)
        dist.init_process_group("nccl")
    torch.manual_seed(0)
    rank = 16 if args.mode == "lora" else 0
    model = Model(c, rank).to(dev)
    params = [p for p in model.parameters() if p.requires_grad]
    if world > 1:
        model = DistributedDataParallel(model, device_ids=[torch.device(dev).index])
    fwd = torch.compile(model) if args.compile else model
    opt = torch.optim.AdamW(params, lr=1e-6)
    B, P, L = args.sequences, args.prompt_len, args.completion_len
    if B % world:
        raise SystemExit(f"--sequences {B} does not split over {world} ranks")
    # The same global batch on every rank (seeded), then this rank's rows.
    ids = torch.randint(0, c["vocab"], (B, P + L), device=dev)
    adv = (torch.arange(B, device=dev) % 4 - 1.5).float()
    share = slice(me * B // world, (me + 1) * B // world)
    ids, adv = ids[share], adv[share]

    def logprobs():
        with torch.autocast("cuda", torch.bfloat16):
            logits = fwd(ids)
        return selective_log_softmax(logits[:, P - 1:-1].float(), ids[:, P:])

    with torch.no_grad():
        old = logprobs() + 0.01

    def step():
        lp = logprobs()
        ratio = torch.exp(lp - old)
        a = adv[:, None]
        loss = -torch.minimum(ratio * a, ratio.clamp(0.8, 1.28) * a).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    train_peak = torch.cuda.max_memory_allocated() / 2**30
    if args.profile:
        # Two more steps under torch.profiler, as crl-bench-trainer --profile.
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(2):
                step()
            torch.cuda.synchronize()
        prof.export_chrome_trace(args.profile)
    torch.cuda.reset_peak_memory_stats()
    lp_times = []
    with torch.no_grad():
        for _ in range(max(1, args.steps)):
            t0 = time.perf_counter()
            logprobs()
            torch.cuda.synchronize()
            lp_times.append(time.perf_counter() - t0)
    lp_peak = torch.cuda.max_memory_allocated() / 2**30
    s, l = sorted(times)[len(times) // 2], sorted(lp_times)[len(lp_times) // 2]
    tokens = B * (P + L)
    ctx = (P + L) / 2
    if world > 1:
        dist.destroy_process_group()
        if me != 0:
            return None
    return {
        "implementation": f"PyTorch {torch.__version__} {'torch.compile' if args.compile else 'eager'}"
                          + (" DDP" if world > 1 else ""),
        "world_size": world, "dist_backend": "nccl" if world > 1 else "",
        "preset": args.preset, "mode": args.mode, "sequences": B, "tokens_per_step": tokens,
        "step_seconds": s, "train_tokens_per_second": tokens / s, "train_peak_gib": train_peak,
        "train_mfu": flops_per_token(c, ctx, True, rank > 0) * tokens / s / (args.peak_tflops * 1e12 * world),
        "logprob_tokens_per_second": tokens / l, "logprob_peak_gib": lp_peak,
        "logprob_mfu": flops_per_token(c, ctx, False, False) * tokens / l / (args.peak_tflops * 1e12),
    }


@torch.no_grad()
def generate(args, c):
    dev = "cuda"
    torch.manual_seed(0)
    model = Model(c).to(dev, torch.bfloat16).eval()
    B, P, N = args.batch, args.prompt_len, args.new_tokens
    D = c["hidden"] // c["heads"]
    caches = [(torch.zeros(B, c["kv"], P + N, D, device=dev, dtype=torch.bfloat16),
               torch.zeros(B, c["kv"], P + N, D, device=dev, dtype=torch.bfloat16)) for _ in range(c["layers"])]
    ids = torch.randint(0, c["vocab"], (B, P), device=dev)

    def run():
        logits = model(ids, caches, 0)[:, -1].float()
        out = []
        for t in range(N):
            nxt = torch.multinomial(torch.softmax(logits, -1), 1)
            out.append(nxt)
            if t + 1 < N:
                logits = model(nxt, caches, P + t)[:, -1].float()
        return torch.cat(out, 1)

    run()  # warm-up
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    run()
    torch.cuda.synchronize()
    s = time.perf_counter() - t0
    return {"implementation": f"PyTorch {torch.__version__} eager", "preset": args.preset, "batch": B,
            "prompt_len": P, "new_tokens": N, "seconds": s, "tokens_per_second": B * N / s}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=["train", "generate"])
    ap.add_argument("--preset", default="qwen2.5-0.5b", choices=sorted(PRESETS))
    ap.add_argument("--mode", default="full", choices=["full", "lora"])
    ap.add_argument("--profile", default="", help="train: profile two steps after the timed ones, Chrome trace here")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--sequences", type=int, default=8)
    ap.add_argument("--prompt_len", type=int, default=512)
    ap.add_argument("--completion_len", type=int, default=512)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--new_tokens", type=int, default=512)
    ap.add_argument("--peak_tflops", type=float, default=989.4)
    args = ap.parse_args()
    c = PRESETS[args.preset]
    result = train(args, c) if args.task == "train" else generate(args, c)
    if result is not None:  # ranks other than 0 print nothing
        print(json.dumps(result))


if __name__ == "__main__":
    main()
