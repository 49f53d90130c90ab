#!/usr/bin/env python3
"""An independent reference for crl's policy model, written from the published
model equations (Llama / Qwen2 / Qwen3 / Mistral) in plain PyTorch, with no
code shared with crl and no Hugging Face library.

    reference_model.py MODEL_DIR INPUT.json OUTPUT.json

INPUT.json: {"ids": [[...], ...], "mask": [[1, 0, ...]] (optional),
             "lora": ADAPTER_DIR (optional), "grpo": {...} (optional: see grpo_loss)}
OUTPUT.json: {"logits": [B][T][V]}, or with "grpo" {"loss": x, "grads": {name: [...]}}
(gradients of the LoRA factors when an adapter is given, else of every weight).
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


def load_lora(adapter_dir):
    acfg = json.load(open(f"{adapter_dir}/adapter_config.json"))
    lw = read_safetensors(f"{adapter_dir}/adapter_model.safetensors")
    return {"scale": acfg["lora_alpha"] / acfg["r"],
            "w": {k[len("base_model.model."):]: v for k, v in lw.items()}}


def completion_logprobs(cfg, w, prompt, completion, lora):
    ids = torch.tensor([prompt + completion])
    logits = forward(cfg, w, ids, torch.ones_like(ids), lora)[0]
    logp = torch.log_softmax(logits, -1)
    P = len(prompt)
    return torch.stack([logp[P - 1 + j, t] for j, t in enumerate(completion)])


def grpo_loss(cfg, w, spec, lora):
    """The policy-gradient objective from its equations: group advantages
    (sample std, as TRL / veRL), PPO clip with separate bounds, k3 KL to the
    base model (LoRA bypassed), token- or sequence-mean."""
    seqs = spec["sequences"]
    adv = {}
    for g in sorted({s["group"] for s in seqs}):
        idx = [i for i, s in enumerate(seqs) if s["group"] == g]
        r = torch.tensor([seqs[i]["reward"] for i in idx], dtype=torch.float64)
        a = r - r.mean()
        if spec["normalize_std"]:
            a = a / (r.std(unbiased=True) + 1e-6)
        if spec["advantage_clip"] > 0:
            a = a.clamp(-spec["advantage_clip"], spec["advantage_clip"])
        for k, i in enumerate(idx):
            adv[i] = a[k]
    lo, hi = spec["clip_low"], spec["clip_high"]
    total_tokens = sum(len(s["completion"]) for s in seqs)
    loss = 0
    for i, s in enumerate(seqs):
        logp = completion_logprobs(cfg, w, s["prompt"], s["completion"], lora)
        old = torch.tensor(s["old"], dtype=torch.float64)
        ratio = torch.exp(logp - old)
        per_token = -torch.minimum(ratio * adv[i], ratio.clamp(1 - lo, 1 + hi) * adv[i])
        if spec["kl_coef"] > 0:
            with torch.no_grad():
                ref = completion_logprobs(cfg, w, s["prompt"], s["completion"], None)
            per_token = per_token + spec["kl_coef"] * (torch.exp(ref - logp) - (ref - logp) - 1)
        if spec["aggregation"] == "token-mean":
            loss = loss + per_token.sum() / total_tokens
        else:
            loss = loss + per_token.mean() / len(seqs)
    return loss


def main():
    model_dir, inp, outp = sys.argv[1:4]
    cfg = json.load(open(f"{model_dir}/config.json"))
    w = read_safetensors(f"{model_dir}/model.safetensors")
    spec = json.load(open(inp))
    lora = load_lora(spec["lora"]) if spec.get("lora") else None
    out = {}
    if "grpo" in spec:
        # Gradients of the trainable tensors: the LoRA factors, or the weights.
        trainable = lora["w"] if lora else w
        for k in trainable:
            trainable[k] = trainable[k].clone().requires_grad_(True)
        loss = grpo_loss(cfg, w, spec["grpo"], lora)
        loss.backward()
        out["loss"] = loss.item()
        out["grads"] = {k: p.grad.flatten().tolist() for k, p in trainable.items()
                        if p.grad is not None}
    else:
        ids = torch.tensor(spec["ids"])
        mask = torch.tensor(spec["mask"]) if "mask" in spec else torch.ones_like(ids)
        with torch.no_grad():
            out["logits"] = forward(cfg, w, ids, mask, lora).tolist()
    json.dump(out, open(outp, "w"))


if __name__ == "__main__":
    main()
