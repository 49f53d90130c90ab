"""A notebook-sized study: submit a run spec, follow it with a progress line,
then plot the mean reward and the share of verified candidates per round,
and the trainer's curve (loss and KL per policy step, from the run's
"training" events).

    python3 study.py SPEC.yaml [--key KEY] [--out DIR]

The orchestrator comes from the environment (CRL_ORCHESTRATOR, CRL_TOKEN_FILE,
CRL_TLS, CRL_TLS_CA_FILE) or, with CRL_CLUSTER=DIR, a local `crl up` cluster.
The plot needs matplotlib (apt-get install python3-matplotlib); without it
the curves are printed. The report is exported to DIR.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from typing import Dict, List, Tuple

from crl.v1 import common_pb2, timing_pb2
from crl_client import CrlClient, pb


def client() -> CrlClient:
    cluster = os.environ.get("CRL_CLUSTER")
    return CrlClient.for_local_cluster(cluster) if cluster else CrlClient.from_environment()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec")
    parser.add_argument("--key", default="")
    parser.add_argument("--out", default="study-report")
    args = parser.parse_args()

    c = client()
    run = c.submit(args.spec, key=args.key)
    print(f"run {run.run_id}: {run.spec.name or args.spec}")
    # (stage, round) -> rewards of rewarded candidates, and verified / scored.
    rewards: Dict[Tuple[str, int], List[float]] = defaultdict(list)
    verified: Dict[Tuple[str, int], List[bool]] = defaultdict(list)
    training: Dict[int, Tuple[float, float]] = {}  # policy step -> (loss, KL)
    for event in c.watch(run.run_id):
        r = event.run
        if event.kind == "training":
            training[event.policy_step] = (event.training.loss, event.training.kl)
        if event.kind == "variant":
            v = event.variant
            at = (v.stage, v.round)
            verified[at].append(v.verdict == common_pb2.VERDICT_OK)
            if v.reward.status == timing_pb2.REWARD_STATUS_OK and not v.infra_failure:
                rewards[at].append(v.reward.reward)
        sys.stdout.write(f"\r{r.rounds_done} rounds done, {r.candidates} candidates, {r.variants_correct} verified, "
                         f"best {r.best_speedup:.2f}x   ")
        sys.stdout.flush()
    final = c.get(run.run_id)
    print(f"\n{run.run_id}: {pb.RunState.Name(final.state)}, best {final.best_speedup:.2f}x")

    rounds = sorted(verified)
    labels = [f"{stage} {rnd}" for stage, rnd in rounds]
    mean_reward = [sum(rewards[k]) / len(rewards[k]) if rewards[k] else 0.0 for k in rounds]
    share = [sum(verified[k]) / len(verified[k]) for k in rounds]
    for label, m, s in zip(labels, mean_reward, share):
        print(f"  {label:24s} mean reward {m:+.3f}  verified {s:5.0%}")
    steps = sorted(training)
    for step in steps:
        print(f"  policy step {step:4d}  loss {training[step][0]:+.4f}  KL {training[step][1]:.4f}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no plot)")
    else:
        fig, (ax, tx) = plt.subplots(1, 2, figsize=(11, 3.5))
        ax.plot(labels, mean_reward, marker="o", label="mean reward")
        ax.plot(labels, share, marker="s", label="verified")
        ax.set_xlabel("round")
        ax.legend()
        tx.plot(steps, [training[s][0] for s in steps], marker="o", label="loss")
        tx.plot(steps, [training[s][1] for s in steps], marker="s", label="KL")
        tx.set_xlabel("policy step")
        tx.legend()
        fig.autofmt_xdate()
        os.makedirs(args.out, exist_ok=True)
        fig.savefig(os.path.join(args.out, "curves.png"), dpi=120, bbox_inches="tight")
        print(f"plot: {os.path.join(args.out, 'curves.png')}")
    written = c.export(run.run_id, "report", args.out)
    print(f"report: {len(written)} files in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
