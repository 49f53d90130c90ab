#!/usr/bin/env python3
"""tools/gpu/cuda_l1_run.py on a small synthetic copy of the shared data: which
rows are eligible, the hash split (recomputed here from its stated rule), the
tasks written from each row's ref_code, every variant answered as a ModelNew,
and the specs' step count. Exits non-zero on the first failed check."""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(ROOT, "tools", "gpu", "cuda_l1_run.py")

REF = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return x * {k}

N = {n}

def get_inputs():
    return [torch.randn(N)]

def get_init_inputs():
    return []
"""
KERNEL = 'import torch\nsrc = "__global__ void k(float* x) {}"\nclass ModelNew(torch.nn.Module):\n    pass\n'


def check(cond, what):
    if not cond:
        sys.exit("FAILED: " + what)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        data, rows = os.path.join(tmp, "data"), []
        for level in (1, 2, 3):
            os.makedirs(os.path.join(data, "kernelbench", "KernelBench", f"level{level}"))
        os.makedirs(os.path.join(data, "cuda-l1"))

        def row(level, task, custom=KERNEL, graph=None, ref_size=16):
            name = f"{task}_Task{level}x{task}.py"
            # The KernelBench file has grown since the row was written.
            with open(os.path.join(data, "kernelbench", "KernelBench", f"level{level}", name), "w") as f:
                f.write(REF.format(k=2, n=ref_size * 1000))
            rows.append({"level_id": level, "task_id": task, "ref_code": REF.format(k=2, n=ref_size),
                         "custom_code": custom, "cudnn_code": REF.format(k=2, n=ref_size).replace("* 2", "* 2.0"),
                         "cuda_graph_code": graph or REF.format(k=3, n=ref_size)})

        for t in range(1, 41):
            row(1 + t % 2, t)
        row(3, 99)                                          # level 3: not eligible
        row(1, 101, custom="None")                          # a missing variant
        row(2, 102, custom="class ModelNew: pass\n")        # no kernel of its own
        row(1, 103, graph="x" * 9000)                       # too long
        with open(os.path.join(data, "cuda-l1", "h100.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")

        out = os.path.join(tmp, "run")
        args = [sys.executable, TOOL, "--data", data, "--out", out, "--train", "5", "--heldout", "8",
                "--sft_rounds", "10"]
        p = subprocess.run(args, capture_output=True, text=True)
        check(p.returncode == 0, "the tool failed: " + p.stderr)
        split = json.load(open(os.path.join(out, "split.json")))
        check(split["eligible"] == 40, f"40 eligible rows, not {split['eligible']}")

        # The split, from the stated rule: sha256("crl-split/" + name), held out below 64.
        names = sorted(f"{t}_Task{1 + t % 2}x{t}" for t in range(1, 41))
        keyed = sorted((hashlib.sha256(("crl-split/" + n).encode()).hexdigest(), n) for n in names)
        want_train = [n for h, n in keyed if int(h[:2], 16) >= 64][:5]
        want_held = [n for h, n in keyed if int(h[:2], 16) < 64][:8]
        check([t["name"] for t in split["train"]] == want_train, f"train {split['train']} != {want_train}")
        check([t["name"] for t in split["heldout"]] == want_held, f"heldout {split['heldout']} != {want_held}")

        # Tasks are the rows' ref_code, under their KernelBench names.
        for split_name, want in (("train", want_train), ("heldout", want_held)):
            files = sorted(os.listdir(os.path.join(out, "tasks", split_name)))
            check(files == sorted(n + ".py" for n in want), f"{split_name} files {files}")
            text = open(os.path.join(out, "tasks", split_name, files[0])).read()
            check("N = 16\n" in text, "a task is its row's ref_code, not the grown KernelBench file")

        # Four examples per training task, all as ModelNew; none from held-out tasks.
        ex = [json.loads(l) for l in open(os.path.join(out, "sft.jsonl"))]
        check(len(ex) == 20, f"20 examples, not {len(ex)}")
        check({e["task"] for e in ex} == set(want_train), "examples only of training tasks")
        for e in ex:
            check("class ModelNew(" in e["source"] and "class Model(" not in e["source"], e["origin"])
            check("super(Model," not in e["source"], e["origin"])
        check(sum(e["origin"].endswith(": the reference") for e in ex) == 5, "one reference per task")

        sft = open(os.path.join(out, "sft.yaml")).read()
        check("total_steps: 50," in sft, "10 rounds of half the 20 examples, 2 a step: 50 steps")
        check("  - tasks/train\n" in sft and "sft_examples: sft.jsonl" in sft, "sft.yaml: tasks and examples")
        check("  - tasks/train\n" in open(os.path.join(out, "rl.yaml")).read(), "rl.yaml trains on train only")
        held = open(os.path.join(out, "heldout.yaml")).read()
        check("  - tasks/heldout\n" in held and "training: none" in held, "heldout.yaml samples only")
        check(json.load(open(os.path.join(out, "config.json")))["max_position_embeddings"] == 8192, "config")

        # Asking for more tasks than are eligible is an error, not a smaller run.
        p = subprocess.run(args[:-4] + ["--train", "60"], capture_output=True, text=True)
        check(p.returncode != 0 and "eligible" in (p.stderr + p.stdout), "too few eligible rows must fail")
    print("cuda_l1_run: all checks passed")


if __name__ == "__main__":
    main()
