#!/usr/bin/env python3
"""An independent reference for crl's policy model, written from the published
model equations (Llama / Qwen2 / Qwen3 / Mistral) in plain PyTorch, with no
code shared with crl and no Hugging Face library.

    reference_model.py MODEL_DIR INPUT.json OUTPUT.json

INPUT.json: {"ids": [[...], ...], "mask": [[1, 0, ...]] (optional),
             "lora": ADAPTER_DIR (optional), "grpo": {...} (optional)}
OUTPUT.json: {"logits": [B][T][V]} and, with "grpo", {"loss": x, "grads": {name: [...]}}.
"""
import json
import math
import struct
import sys

import torch

DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16, "F64": torch.float64}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[base + begin:base + end]), dtype=DTYPES[info["dtype"]])
        out[name] = t.reshape(info["shape"]).to(torch.float64)
    return out


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps))


def inv_freq(cfg, head_dim):
    theta = cfg.get("rope_theta", 10000.0)
    freqs = [1.0 / theta ** (2 * i / head_dim) for i in range(head_dim // 2)]
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type", "default"))
    if kind == "linear":
        freqs = [f / rs["factor"] for f in freqs]
    elif kind == "llama3":
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        scaled = []
        for f in freqs:
            wavelen = 2 * math.pi / f
            if wavelen < old / hi:
                scaled.append(f)
            elif wavelen > old / lo:
                scaled.append(f / factor)
            else:
                s = (old / wavelen - lo) / (hi - lo)
                scaled.append((1 - s) * f / factor + s * f)
        freqs = scaled
    return torch.tensor(freqs, dtype=torch.float64)


def rotate(x, pos, freqs):
    # pairs (i, i + d/2) rotate by pos * freq_i
    ang = pos[:, :, None].to(torch.float64) * freqs[None, None, :]
    cos, sin = torch.cos(ang), torch.sin(ang)
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    cos, sin = cos[:, None], sin[:, None]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def forward(cfg, w, ids, mask, lora=None):
    kind = cfg["model_type"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", H)
    D = cfg.get("head_dim") or cfg["hidden_size"] // H
    eps = cfg.get("rms_norm_eps", 1e-6)
    window = cfg.get("sliding_window") if kind == "mistral" else None
    B, T = ids.shape
    pos = (mask.cumsum(1) - 1).clamp(min=0)
    freqs = inv_freq(cfg, D)

    def lin(x, name, bias=False):
        y = x @ w[name + ".weight"].T
        if bias:
            y = y + w[name + ".bias"]
        if lora and (name + ".lora_A.weight") in lora["w"]:
            y = y + (x @ lora["w"][name + ".lora_A.weight"].T @ lora["w"][name + ".lora_B.weight"].T) * lora["scale"]
        return y

    x = w["model.embed_tokens.weight"][ids]
    qi = torch.arange(T)[:, None]
    kj = torch.arange(T)[None, :]
    allowed = (kj <= qi)
    if window:
        allowed = allowed & (kj > qi - window)
    allowed = allowed[None] & mask.bool()[:, None, :]
    allowed = allowed | (kj == qi)[None]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        bias = kind == "qwen2" or cfg.get("attention_bias", False)
        q = lin(h, p + "self_attn.q_proj", bias).view(B, T, H, D)
        k = lin(h, p + "self_attn.k_proj", bias).view(B, T, KV, D)
        v = lin(h, p + "self_attn.v_proj", bias).view(B, T, KV, D)
        if kind == "qwen3":
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q, k = rotate(q, pos, freqs), rotate(k, pos, freqs)
        rep = H // KV
        k = k[:, :, None].expand(B, KV, rep, T, D).reshape(B, H, T, D)
        v = v[:, :, None].expand(B, KV, rep, T, D).reshape(B, H, T, D)
        scores = q @ k.transpose(-1, -2) / math.sqrt(D)
        scores = scores.masked_fill(~allowed[:, None], float("-inf"))
        att = torch.softmax(scores, -1) @ v
        x = x + lin(att.transpose(1, 2).reshape(B, T, H * D), p + "self_attn.o_proj")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = lin(h, p + "mlp.gate_proj")
        x = x + lin(g * torch.sigmoid(g) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    return x @ head.T


def grpo_loss(cfg, w, spec):
    """One GRPO objective, from the equations (PPO clip, group advantages)."""
    ids = torch.tensor(spec["ids"])
    mask = torch.ones_like(ids)
    logits = forward(cfg, w, ids, mask)
    logp = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]
    comp = torch.tensor(spec["completion_mask"], dtype=torch.float64)[:, 1:]
    old = torch.tensor(spec["old_logprobs"], dtype=torch.float64)[:, 1:]
    rewards = torch.tensor(spec["rewards"], dtype=torch.float64)
    adv = rewards - rewards.mean()
    if spec.get("scale_by_std", True):
        adv = adv / (rewards.std(unbiased=False) + 1e-6)
    adv = adv.clamp(-spec["advantage_clip"], spec["advantage_clip"])
    ratio = torch.exp(logp - old)
    lo, hi = spec["clip_low"], spec["clip_high"]
    obj = torch.minimum(ratio * adv[:, None], ratio.clamp(1 - lo, 1 + hi) * adv[:, None])
    per_token = -obj
    if spec.get("kl_coef", 0) > 0:
        ref = torch.tensor(spec["ref_logprobs"], dtype=torch.float64)[:, 1:]
        per_token = per_token + spec["kl_coef"] * (torch.exp(ref - logp) - (ref - logp) - 1)
    if spec.get("loss_mode", "token_mean") == "token_mean":
        return (per_token * comp).sum() / comp.sum()
    return ((per_token * comp).sum(1) / comp.sum(1)).mean()


def main():
    model_dir, inp, outp = sys.argv[1:4]
    cfg = json.load(open(f"{model_dir}/config.json"))
    w = read_safetensors(f"{model_dir}/model.safetensors")
    spec = json.load(open(inp))
    out = {}
    if "grpo" in spec:
        params = {k: v.clone().requires_grad_(True) for k, v in w.items()}
        loss = grpo_loss(cfg, params, spec["grpo"])
        loss.backward()
        out["loss"] = loss.item()
        out["grads"] = {k: p.grad.flatten().tolist() for k, p in params.items()
                        if k in spec["grpo"].get("grads", [])}
    else:
        ids = torch.tensor(spec["ids"])
        mask = torch.tensor(spec["mask"]) if "mask" in spec else torch.ones_like(ids)
        lora = None
        if spec.get("lora"):
            acfg = json.load(open(f"{spec['lora']}/adapter_config.json"))
            lw = read_safetensors(f"{spec['lora']}/adapter_model.safetensors")
            lora = {"scale": acfg["lora_alpha"] / acfg["r"],
                    "w": {k[len("base_model.model."):]: v for k, v in lw.items()}}
        with torch.no_grad():
            out["logits"] = forward(cfg, w, ids, mask, lora).tolist()
    json.dump(out, open(outp, "w"))


if __name__ == "__main__":
    main()
