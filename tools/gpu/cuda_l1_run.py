#!/usr/bin/env python3
"""Prepares the GPU learning run of docs/benchmarks.md ("Learning on a GPU").

Reads CUDA-L1's published H100 rows and the KernelBench tasks from the shared
data (never from the project), and writes into OUT (git-ignored, carried to
the GPU machine):

  tasks/train/*.py, tasks/heldout/*.py   the tasks: each row's ref_code, named
                 as its KernelBench file
  sft.jsonl      per training task, every variant CUDA-L1 published for it
                 (custom_code, cudnn_code, cuda_graph_code; their `Model`
                 renamed ModelNew) and the reference itself as a ModelNew;
                 crl verifies and times each before SFT
                 trains on it, and trains on all that verify alike (blind to
                 which is faster: nothing here reads CUDA-L1's scores)
  sft.yaml, rl.yaml, heldout.yaml        the run specs
  corpus/        the text the tokenizer is trained on (tasks, examples, prompt)
  split.json     which task went where, and the hash that decided it
  config.json    the policy's shape (a Llama of 5.3 M parameters, 8192
                 positions: a contrastive prompt with one exemplar and its
                 answer fit)
  overlay.yaml   the cluster overlay for one GPU machine (crl quickstart
                 --overlay): policy and trainer on cuda (scripts/gpu-run.sh
                 adds the worker's line there: its interpreter and GPUs)

The split is decided by a hash of the task's name before anything runs:
sha256("crl-split/" + name), held out when its first byte is below 64 (a
quarter). Rows are eligible when every variant is present and short enough for
the policy's context (--max_chars), at levels 1 and 2, and their custom_code
defines a CUDA kernel (CUDA-L1's custom_code of many short rows is PyTorch
only; crl flags those NO_CUSTOM_KERNEL, and no reward follows). The first --train and
--heldout eligible tasks in hash order are taken.

  python3 tools/gpu/cuda_l1_run.py --data ../shared/data --out .gpu-run
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import sys

VARIANTS = ("custom_code", "cudnn_code", "cuda_graph_code")


def task_files(kb_root, level):
    """KernelBench's files of one level, by task id."""
    d = os.path.join(kb_root, f"level{level}")
    out = {}
    for f in sorted(os.listdir(d)):
        m = re.match(r"(\d+)_.*\.py$", f)
        if m:
            out.setdefault(int(m.group(1)), os.path.join(d, f))
    return out


def as_model_new(ref):
    """A program defining `Model` (the reference; CUDA-L1's cudnn_code and
    cuda_graph_code are written that way too), answered as a ModelNew."""
    out = re.sub(r"\bclass Model\(", "class ModelNew(", ref)
    return re.sub(r"super\(Model, self\)", "super(ModelNew, self)", out)


def split_key(name):
    return hashlib.sha256(("crl-split/" + name).encode()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--out", default=".gpu-run")
    ap.add_argument("--train", type=int, default=4)
    ap.add_argument("--heldout", type=int, default=2)
    ap.add_argument("--max_chars", type=int, default=8000, help="longest variant or reference kept")
    ap.add_argument("--sft_rounds", type=int, default=600)
    ap.add_argument("--rl_rounds", type=int, default=3)
    ap.add_argument("--group_size", type=int, default=8)
    ap.add_argument("--max_tokens", type=int, default=2000, help="the longest answer is about 1800 tokens")
    args = ap.parse_args()

    kb_root = os.path.join(args.data, "kernelbench", "KernelBench")
    rows = [json.loads(l) for l in open(os.path.join(args.data, "cuda-l1", "h100.jsonl"))]
    files = {level: task_files(kb_root, level) for level in (1, 2)}
    eligible = []
    for r in rows:
        if r["level_id"] not in (1, 2) or not all(r.get(v) and r[v] != "None" for v in VARIANTS):
            continue
        path = files[r["level_id"]].get(r["task_id"])
        if path is None:
            continue
        # The task is the row's ref_code, the program CUDA-L1's variants were
        # written against; the KernelBench file of the same task names it (its
        # sizes have grown since: level 1's ReLU makes 4096 x 393216 inputs
        # where ref_code makes 16 x 16384, and generating them outlasts a call).
        ref = r["ref_code"]
        if max(len(ref), *(len(r[v]) for v in VARIANTS)) > args.max_chars:
            continue
        if "__global__" not in r["custom_code"]:  # a rewrite without a kernel of its own
            continue
        name = os.path.basename(path)[:-3]
        eligible.append((split_key(name), name, path, ref, r))
    eligible.sort()
    train = [e for e in eligible if int(e[0][:2], 16) >= 64][: args.train]
    held = [e for e in eligible if int(e[0][:2], 16) < 64][: args.heldout]
    if len(train) < args.train or len(held) < args.heldout:
        sys.exit(f"only {len(train)} training and {len(held)} held-out tasks are eligible")

    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    for d in ("tasks/train", "tasks/heldout", "corpus"):
        os.makedirs(os.path.join(args.out, d))
    examples = []
    for split, chosen in (("train", train), ("heldout", held)):
        for _, name, path, ref, r in chosen:
            for to in (os.path.join("tasks", split, os.path.basename(path)), os.path.join("corpus", f"task_{name}.py")):
                with open(os.path.join(args.out, to), "w") as f:
                    f.write(ref)
            if split != "train":
                continue
            origin = f"cuda-l1 h100 level {r['level_id']} task {r['task_id']}"
            examples.append({"task": name, "source": as_model_new(ref), "origin": origin + ": the reference"})
            for v in VARIANTS:
                examples.append({"task": name, "source": as_model_new(r[v]), "origin": f"{origin}: {v}"})
    with open(os.path.join(args.out, "sft.jsonl"), "w") as f:
        for e in examples:
            f.write(json.dumps(e) + "\n")
    for i, e in enumerate(examples):
        with open(os.path.join(args.out, "corpus", f"answer_{i}.py"), "w") as f:
            f.write(e["source"])
    with open(os.path.join(args.out, "split.json"), "w") as f:
        json.dump({"rule": "sha256('crl-split/' + name): held out when the first byte < 64",
                   "train": [{"name": e[1], "hash": e[0][:16]} for e in train],
                   "heldout": [{"name": e[1], "hash": e[0][:16]} for e in held],
                   "eligible": len(eligible), "max_chars": args.max_chars}, f, indent=2)

    model = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 4096,
             "hidden_size": 256, "intermediate_size": 704, "num_hidden_layers": 6, "num_attention_heads": 8,
             "num_key_value_heads": 2, "head_dim": 32, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
             "max_position_embeddings": 8192, "tie_word_embeddings": True, "hidden_act": "silu",
             "torch_dtype": "float32"}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(model, f, indent=2)
    with open(os.path.join(args.out, "overlay.yaml"), "w") as f:
        f.write("# Written by tools/gpu/cuda_l1_run.py: one GPU machine, after models/embedded/cluster.yaml.\n"
                "sampler: {device: cuda, max_len: 8192}\n"
                "trainer: {device: cuda, max_seq_len: 8192, micro_batch_tokens: 16384}\n")
    # 2 examples a step (models/embedded/cluster.yaml). The cosine schedule is
    # as long as the steps of half the examples: only those that verify are
    # trained on (11 of 16 on an H200), and a schedule set for all of them was
    # cut at 69 % with the rate still high (loss 0.02-0.35 at the end); set
    # for half, it reaches its floor whenever at least half verify, and the
    # steps beyond train at the floor.
    sft_steps = (len(examples) // 2 + 1) // 2 * args.sft_rounds
    common = ("backend: cuda\ntemplate: kernelbench\nreward: cuda-l1\ntiming_budget_seconds: 1\n"
              "exemplars: {strategy: buckets, count: 1, buckets: 4, temperature: 1.0}\nseed: 1\n")
    with open(os.path.join(args.out, "sft.yaml"), "w") as f:
        f.write("# Written by tools/gpu/cuda_l1_run.py: SFT on CUDA-L1's published variants of the\n"
                "# training tasks and the reference as a ModelNew, each verified and timed first.\n"
                f"name: cuda-l1-sft\ntasks:\n  - tasks/train\nsft_examples: sft.jsonl\n{common}"
                f"stages:\n  - {{kind: sft, rounds: {args.sft_rounds}, optimizer: "
                f"{{lr: 0.003, warmup_steps: 5, total_steps: {sft_steps}, min_lr_ratio: 0.1}}}}\n")
    sampling = f"group_size: {args.group_size}\nsampling: {{temperature: 0.5, max_tokens: {args.max_tokens}}}\n"
    with open(os.path.join(args.out, "rl.yaml"), "w") as f:
        f.write("# Written by tools/gpu/cuda_l1_run.py: contrastive RL on the training tasks\n"
                "# (crl quickstart runs it as twin, trained side and negative control).\n"
                f"name: cuda-l1-rl\ntasks:\n  - tasks/train\n{common}{sampling}"
                f"stages:\n  - {{kind: contrastive-rl, rounds: {args.rl_rounds}, optimizer: "
                "{lr: 0.00003, warmup_steps: 0, total_steps: 0}}\n")
    with open(os.path.join(args.out, "heldout.yaml"), "w") as f:
        f.write("# Written by tools/gpu/cuda_l1_run.py: the held-out tasks, sampled only.\n"
                f"name: cuda-l1-heldout\ntasks:\n  - tasks/heldout\n{common}{sampling}training: none\n"
                "rounds: 1\n")
    prompt = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "prompts", "kernelbench.tmpl")
    shutil.copy(prompt, os.path.join(args.out, "corpus", "kernelbench.tmpl"))
    print(f"{len(eligible)} eligible rows; train {[e[1] for e in train]}; held out {[e[1] for e in held]}; "
          f"{len(examples)} SFT examples -> {args.out}")


if __name__ == "__main__":
    main()
