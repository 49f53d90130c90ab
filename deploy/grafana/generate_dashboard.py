#!/usr/bin/env python3
"""Writes deploy/grafana/crl-dashboard.json (the crl Grafana dashboard).

The dashboard is generated so that its PromQL lives in one readable place;
edit this file and re-run it:

    python3 deploy/grafana/generate_dashboard.py          # rewrite the JSON
    python3 deploy/grafana/generate_dashboard.py --check  # fail if it is stale

Metric facts the queries rely on (checked against a running crl-worker):
  * crl_rpc_requests_total{method, code}: method is the full gRPC path
    ("/crl.v1.EvalService/Evaluate"), code the numeric gRPC status ("0" = OK).
  * crl_build_info{component, version}: component is the binary name
    ("crl-worker", "crl-timing", ...); crl_ready has no labels of its own, so
    per-component views join on `instance`.
"""
import json
import os
import re
import sys

DS = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'namespace=~"$namespace"'
RI = "$__rate_interval"


def target(expr, legend, ref):
    return {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref,
            "range": True}


def panel(pid, title, kind, x, y, w, h, targets, unit="short", description="",
          stack=False, minv=None, maxv=None, thresholds=None, decimals=None,
          legend_calcs=("mean", "max", "lastNotNull")):
    p = {
        "id": pid,
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DS,
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "targets": [target(e, l, chr(ord("A") + i)) for i, (e, l) in enumerate(targets)],
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {},
    }
    d = p["fieldConfig"]["defaults"]
    if minv is not None:
        d["min"] = minv
    if maxv is not None:
        d["max"] = maxv
    if decimals is not None:
        d["decimals"] = decimals
    if thresholds:
        d["thresholds"] = {"mode": "absolute", "steps": thresholds}
    if kind == "timeseries":
        d["custom"] = {
            "drawStyle": "line",
            "lineWidth": 1,
            "fillOpacity": 20 if stack else 0,
            "showPoints": "never",
            "spanNulls": False,
            "stacking": {"mode": "normal" if stack else "none", "group": "A"},
        }
        if thresholds:
            d["custom"]["thresholdsStyle"] = {"mode": "dashed"}
        p["options"] = {
            "legend": {"displayMode": "table", "placement": "right", "showLegend": True,
                       "calcs": list(legend_calcs)},
            "tooltip": {"mode": "multi", "sort": "desc"},
        }
    elif kind == "stat":
        p["options"] = {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "background" if thresholds else "value",
            "graphMode": "area",
            "textMode": "auto",
            "justifyMode": "auto",
            "orientation": "auto",
        }
    return p


def row(pid, title, y):
    return {"id": pid, "type": "row", "title": title, "collapsed": False,
            "gridPos": {"x": 0, "y": y, "w": 24, "h": 1}, "panels": []}


GREEN = {"color": "green", "value": None}


def build():
    panels = []
    pid = iter(range(1, 1000))
    worker_join = 'on (instance) group_left (component) crl_build_info{component="crl-worker", %s}' % SEL
    y = 0

    # -- Overview ------------------------------------------------------------
    panels.append(row(next(pid), "Overview", y)); y += 1
    panels.append(panel(
        next(pid), "Workers ready", "stat", 0, y, 4, 4,
        [("sum(crl_ready * %s)" % worker_join, "ready")],
        description="Workers whose readiness (crl.v1.EvalService) is SERVING. One worker = one GPU lane.",
        decimals=0))
    panels.append(panel(
        next(pid), "Workers scraped", "stat", 4, y, 4, 4,
        [('count(crl_build_info{component="crl-worker", %s})' % SEL, "scraped")],
        description="Worker targets Prometheus currently scrapes.", decimals=0))
    panels.append(panel(
        next(pid), "Evaluations / s", "stat", 8, y, 4, 4,
        [("sum(rate(crl_worker_evaluations_total{%s}[%s]))" % (SEL, RI), "evals/s")],
        unit="reqps"))
    panels.append(panel(
        next(pid), "Infra error ratio", "stat", 12, y, 4, 4,
        [('sum(rate(crl_worker_evaluations_total{verdict="infra_error", %s}[%s])) / '
          'sum(rate(crl_worker_evaluations_total{%s}[%s]))' % (SEL, RI, SEL, RI), "infra_error")],
        unit="percentunit", decimals=2,
        description="Alert CrlInfraErrorRatioHigh fires above 5% for 10 minutes. Infra errors are "
                    "retried and never rewarded, but they burn GPU time.",
        thresholds=[GREEN, {"color": "orange", "value": 0.01}, {"color": "red", "value": 0.05}]))
    panels.append(panel(
        next(pid), "Cache hit ratio", "stat", 16, y, 4, 4,
        [('sum(rate(crl_worker_build_cache_total{result="hit", %s}[%s])) / '
          'sum(rate(crl_worker_build_cache_total{%s}[%s]))' % (SEL, RI, SEL, RI), "hit ratio")],
        unit="percentunit", decimals=1))
    panels.append(panel(
        next(pid), "Versions", "stat", 20, y, 4, 4,
        [("count by (component, version) (crl_build_info{%s})" % SEL, "{{component}} {{version}}")],
        description="Running binaries by component and version (more than one version per "
                    "component = a rollout in progress).", decimals=0))
    y += 4

    # -- RPC -------------------------------------------------------------------
    panels.append(row(next(pid), "RPC (all crl services)", y)); y += 1
    method_sel = '%s, method=~"$method"' % SEL
    panels.append(panel(
        next(pid), "Requests / s by method", "timeseries", 0, y, 12, 8,
        [("sum by (method) (rate(crl_rpc_requests_total{%s}[%s]))" % (method_sel, RI), "{{method}}")],
        unit="reqps"))
    panels.append(panel(
        next(pid), "Error ratio by method", "timeseries", 12, y, 12, 8,
        [('sum by (method) (rate(crl_rpc_requests_total{code!="0", %s}[%s])) / '
          'sum by (method) (rate(crl_rpc_requests_total{%s}[%s]))' % (method_sel, RI, method_sel, RI),
          "{{method}}")],
        unit="percentunit", minv=0,
        description="Share of calls with a non-OK gRPC status (any code: client errors included; "
                    "the CrlRpcErrorRatioHigh alert counts server-side codes only).",
        thresholds=[GREEN, {"color": "red", "value": 0.05}]))
    y += 8
    for i, q in enumerate(("0.5", "0.95", "0.99")):
        panels.append(panel(
            next(pid), "Latency p%s by method" % str(int(float(q) * 100)), "timeseries", 8 * i, y, 8, 8,
            [("histogram_quantile(%s, sum by (method, le) (rate(crl_rpc_duration_seconds_bucket{%s}[%s])))"
              % (q, method_sel, RI), "{{method}}")],
            unit="s", legend_calcs=("mean", "max")))
    y += 8
    panels.append(panel(
        next(pid), "Status codes / s", "timeseries", 0, y, 12, 7,
        [("sum by (code) (rate(crl_rpc_requests_total{%s}[%s]))" % (method_sel, RI), "code {{code}}")],
        unit="reqps", stack=True,
        description="gRPC status codes: 0 OK, 1 CANCELLED, 3 INVALID_ARGUMENT, 4 DEADLINE_EXCEEDED, "
                    "5 NOT_FOUND, 8 RESOURCE_EXHAUSTED, 13 INTERNAL, 14 UNAVAILABLE, 16 UNAUTHENTICATED."))
    panels.append(panel(
        next(pid), "In-flight calls by pod", "timeseries", 12, y, 12, 7,
        [("sum by (pod) (crl_rpc_in_flight{%s})" % SEL, "{{pod}}")]))
    y += 7

    # -- Evaluations -------------------------------------------------------------
    panels.append(row(next(pid), "Evaluations (workers)", y)); y += 1
    panels.append(panel(
        next(pid), "Verdict mix", "timeseries", 0, y, 12, 8,
        [("sum by (verdict) (rate(crl_worker_evaluations_total{%s}[%s]))" % (SEL, RI), "{{verdict}}")],
        unit="reqps", stack=True,
        description="ok, compile_error, runtime_error, wrong_answer, timeout, resource_limit, "
                    "sandbox_violation, infra_error."))
    panels.append(panel(
        next(pid), "Infra error ratio by worker", "timeseries", 12, y, 12, 8,
        [('sum by (pod) (rate(crl_worker_evaluations_total{verdict="infra_error", %s}[%s])) / '
          'sum by (pod) (rate(crl_worker_evaluations_total{%s}[%s]))' % (SEL, RI, SEL, RI), "{{pod}}")],
        unit="percentunit", minv=0,
        thresholds=[GREEN, {"color": "red", "value": 0.05}],
        description="Alert-worthy above 5% (CrlInfraErrorRatioHigh / CrlWorkerInfraErrorRatioHigh)."))
    y += 8
    panels.append(panel(
        next(pid), "Sandbox kills by reason", "timeseries", 0, y, 12, 7,
        [("sum by (reason) (rate(crl_worker_sandbox_kills_total{%s}[%s]))" % (SEL, RI), "{{reason}}")],
        unit="ops", stack=True))
    panels.append(panel(
        next(pid), "Runner starts by backend", "timeseries", 12, y, 12, 7,
        [("sum by (backend) (rate(crl_worker_runner_starts_total{%s}[%s]))" % (SEL, RI), "{{backend}}")],
        unit="ops"))
    y += 7

    # -- Compile -------------------------------------------------------------------
    panels.append(row(next(pid), "Compile", y)); y += 1
    panels.append(panel(
        next(pid), "Compile time p50 / p95 by backend", "timeseries", 0, y, 12, 8,
        [("histogram_quantile(0.95, sum by (backend, le) (rate(crl_worker_compile_seconds_bucket{%s}[%s])))"
          % (SEL, RI), "p95 {{backend}}"),
         ("histogram_quantile(0.5, sum by (backend, le) (rate(crl_worker_compile_seconds_bucket{%s}[%s])))"
          % (SEL, RI), "p50 {{backend}}")],
        unit="s", thresholds=[GREEN, {"color": "red", "value": 20}],
        description="CrlCompileP95High fires above 20 s for 15 minutes."))
    panels.append(panel(
        next(pid), "Build cache hit ratio", "timeseries", 12, y, 12, 8,
        [('sum by (pod) (rate(crl_worker_build_cache_total{result="hit", %s}[%s])) / '
          'sum by (pod) (rate(crl_worker_build_cache_total{%s}[%s]))' % (SEL, RI, SEL, RI), "{{pod}}"),
         ('sum(rate(crl_worker_build_cache_total{result="hit", %s}[%s])) / '
          'sum(rate(crl_worker_build_cache_total{%s}[%s]))' % (SEL, RI, SEL, RI), "all workers")],
        unit="percentunit", minv=0, maxv=1))
    y += 8

    # -- Lanes ----------------------------------------------------------------------
    panels.append(row(next(pid), "Lanes and queue", y)); y += 1
    panels.append(panel(
        next(pid), "Lane utilisation", "timeseries", 0, y, 12, 8,
        [("sum by (pod, lane) (rate(crl_worker_lane_busy_seconds_total{%s}[%s]))" % (SEL, RI),
          "{{pod}} {{lane}}")],
        unit="percentunit", minv=0, maxv=1,
        description="Busy seconds per second of each lane (1 = always running a candidate or "
                    "reference). Idle lanes with a non-empty queue fire CrlWorkerLaneIdleWithQueue."))
    panels.append(panel(
        next(pid), "Queue depth by worker", "timeseries", 12, y, 12, 8,
        [("sum by (pod) (crl_worker_queue_depth{%s})" % SEL, "{{pod}}")],
        thresholds=[GREEN, {"color": "orange", "value": 32}],
        description="Evaluations waiting for a compile slot or a lane. CrlWorkerQueueDepthHigh "
                    "fires above 32 for 15 minutes."))
    y += 8

    # -- Runs and rewards (crl-orchestrator) -----------------------------------
    panels.append(row(next(pid), "Runs and rewards (orchestrator)", y)); y += 1
    panels.append(panel(
        next(pid), "Runs by state", "stat", 0, y, 6, 8,
        [("sum by (state) (crl_orchestrator_runs{%s})" % SEL, "{{state}}")], decimals=0,
        description="Runs the orchestrator holds, by state (CrlRunFailed fires on a new failure)."))
    panels.append(panel(
        next(pid), "Candidates / s by outcome", "timeseries", 6, y, 10, 8,
        [("sum by (outcome) (rate(crl_orchestrator_candidates_total{%s}[%s]))" % (SEL, RI), "{{outcome}}")],
        unit="ops", stack=True,
        description="What became of the scored candidates: rejected by the parser, compile error, wrong "
                    "answer, crashed or timed out, verified (flagged / not faster / faster), or an "
                    "infrastructure failure (never a reward)."))
    panels.append(panel(
        next(pid), "Mean reward and best speedup", "timeseries", 16, y, 8, 8,
        [("sum(rate(crl_orchestrator_reward_sum{%s}[%s])) / sum(rate(crl_orchestrator_reward_count{%s}[%s]))"
          % (SEL, RI, SEL, RI), "mean reward"),
         ("max(crl_orchestrator_best_speedup{%s})" % SEL, "best trusted speedup")],
        description="Rewards given (withheld and infrastructure failures are none) and the best speedup "
                    "of a verified candidate with a trusted timing."))
    y += 8
    panels.append(panel(
        next(pid), "Speedups of trusted candidates (p50 / p90)", "timeseries", 0, y, 8, 7,
        [("histogram_quantile(0.5, sum by (le) (rate(crl_orchestrator_speedup_bucket{%s}[%s])))" % (SEL, RI), "p50"),
         ("histogram_quantile(0.9, sum by (le) (rate(crl_orchestrator_speedup_bucket{%s}[%s])))" % (SEL, RI), "p90")]))
    panels.append(panel(
        next(pid), "Groups in flight, copies scored once", "timeseries", 8, y, 8, 7,
        [("sum by (pod) (crl_orchestrator_groups_in_flight{%s})" % SEL, "{{pod}} groups"),
         ("sum(rate(crl_orchestrator_copies_scored_total{%s}[%s]))" % (SEL, RI), "copies / s")],
        description="Groups being sampled or scored (the orchestrator's queue), and candidates that took "
                    "the evaluation and timing of an earlier copy of the same program in their group."))
    panels.append(panel(
        next(pid), "Dispatch and store latency p95", "timeseries", 16, y, 8, 7,
        [("histogram_quantile(0.95, sum by (le) (rate(crl_orchestrator_dispatch_seconds_bucket{%s}[%s])))"
          % (SEL, RI), "dispatch to a worker"),
         ("histogram_quantile(0.95, sum by (le) (rate(crl_orchestrator_store_write_seconds_bucket{%s}[%s])))"
          % (SEL, RI), "store write")], unit="s"))
    y += 7
    panels.append(panel(
        next(pid), "Hacks caught / s by kind", "timeseries", 0, y, 12, 7,
        [("sum by (kind) (rate(crl_orchestrator_hacks_total{%s}[%s]))" % (SEL, RI), "{{kind}}")],
        unit="ops", stack=True,
        description="Candidates recorded in the hack database, by what caught them (docs/hacks.md): trust "
                    "flags, cheating reasons, sandbox violations, the judge."))
    panels.append(panel(
        next(pid), "Judge decisions / s", "timeseries", 12, y, 12, 7,
        [("sum by (decision) (rate(crl_orchestrator_judgements_total{%s}[%s]))" % (SEL, RI), "{{decision}}")],
        unit="ops", stack=True,
        description="Suspicious rewards judged: honest (kept), cheat (withheld), undecided (held: the judge "
                    "was down, late or gave no verdict)."))
    y += 7

    # -- Sampler ------------------------------------------------------------------
    panels.append(row(next(pid), "Sampler", y)); y += 1
    panels.append(panel(
        next(pid), "Tokens / s", "timeseries", 0, y, 8, 7,
        [("sum by (pod) (rate(crl_sampler_completion_tokens_total{%s}[%s]))" % (SEL, RI), "{{pod}} out"),
         ("sum by (pod) (rate(crl_sampler_prompt_tokens_total{%s}[%s]))" % (SEL, RI), "{{pod}} in")]))
    panels.append(panel(
        next(pid), "Queue depth and time to first token p95", "timeseries", 8, y, 8, 7,
        [("sum by (pod) (crl_sampler_queue_depth{%s})" % SEL, "{{pod}} queue"),
         ("histogram_quantile(0.95, sum by (le) (rate(crl_sampler_time_to_first_token_seconds_bucket{%s}[%s])))"
          % (SEL, RI), "TTFT p95 (s)")]))
    panels.append(panel(
        next(pid), "Retries and endpoint errors / s", "timeseries", 16, y, 8, 7,
        [("sum by (cause) (rate(crl_sampler_retries_total{%s}[%s]))" % (SEL, RI), "retry: {{cause}}"),
         ("sum by (code) (rate(crl_sampler_endpoint_errors_total{%s}[%s]))" % (SEL, RI), "error {{code}}")],
        unit="ops", description="CrlSamplerEndpointErrors fires above 0.1/s for 10 minutes."))
    y += 7
    panels.append(panel(
        next(pid), "Requests / s by code, request time p95", "timeseries", 0, y, 8, 7,
        [("sum by (backend, code) (rate(crl_sampler_requests_total{%s}[%s]))" % (SEL, RI), "{{backend}} {{code}}"),
         ("histogram_quantile(0.95, sum by (le) (rate(crl_sampler_request_seconds_bucket{%s}[%s])))" % (SEL, RI),
          "p95 (s)")]))
    panels.append(panel(
        next(pid), "Completions / s, sequences decoding, last request's tokens / s", "timeseries", 8, y, 8, 7,
        [("sum by (pod) (rate(crl_sampler_completions_total{%s}[%s]))" % (SEL, RI), "{{pod}} completions/s"),
         ("sum by (pod) (crl_sampler_active_sequences{%s})" % SEL, "{{pod}} decoding"),
         ("max by (pod) (crl_sampler_tokens_per_second{%s})" % SEL, "{{pod}} tokens/s")]))
    panels.append(panel(
        next(pid), "Policy version served against the trainer's", "timeseries", 16, y, 8, 7,
        [("max by (pod) (crl_sampler_policy_version{%s})" % SEL, "{{pod}} serves"),
         ("max (crl_trainer_policy_version{%s})" % SEL, "trainer"),
         ("sum by (result) (increase(crl_sampler_policy_updates_total{%s}[%s]))" % (SEL, RI), "updates {{result}}")],
        decimals=0, description="A sampler that stays behind the trainer samples from an old policy "
                                "(the trainer drops what is too stale: crl_trainer_stale_samples_total)."))
    y += 7

    # -- Trainer ------------------------------------------------------------------
    panels.append(row(next(pid), "Trainer", y)); y += 1
    panels.append(panel(
        next(pid), "Loss and KL", "timeseries", 0, y, 8, 7,
        [("max by (pod) (crl_trainer_loss{%s})" % SEL, "{{pod}} loss"),
         ("max by (pod) (crl_trainer_kl{%s})" % SEL, "{{pod}} KL")]))
    panels.append(panel(
        next(pid), "Policy version, reward mean, clip fraction", "timeseries", 8, y, 8, 7,
        [("max by (pod) (crl_trainer_policy_version{%s})" % SEL, "{{pod}} version"),
         ("max by (pod) (crl_trainer_reward_mean{%s})" % SEL, "{{pod}} reward mean"),
         ("max by (pod) (crl_trainer_clip_fraction{%s})" % SEL, "{{pod}} clip fraction")]))
    panels.append(panel(
        next(pid), "Queued data, tokens / s", "timeseries", 16, y, 8, 7,
        [("sum by (pod) (crl_trainer_queued_groups{%s})" % SEL, "{{pod}} groups queued"),
         ("sum by (pod) (crl_trainer_queued_examples{%s})" % SEL, "{{pod}} examples queued"),
         ("max by (pod) (crl_trainer_tokens_per_second{%s})" % SEL, "{{pod}} tokens/s")],
        description="CrlTrainerStalled fires when data stays queued with no step for 30 minutes."))
    y += 7
    panels.append(panel(
        next(pid), "Entropy, gradient norm, reward std", "timeseries", 0, y, 8, 7,
        [("max by (pod) (crl_trainer_entropy{%s})" % SEL, "{{pod}} entropy (nats)"),
         ("max by (pod) (crl_trainer_grad_norm{%s})" % SEL, "{{pod}} grad norm"),
         ("max by (pod) (crl_trainer_reward_std{%s})" % SEL, "{{pod}} reward std")],
        description="Entropy falling to ~0 is a collapsed policy; a reward std of 0 gives GRPO no signal."))
    panels.append(panel(
        next(pid), "Learning rate, step time p95", "timeseries", 8, y, 8, 7,
        [("max by (pod) (crl_trainer_learning_rate{%s})" % SEL, "{{pod}} lr"),
         ("histogram_quantile(0.95, sum by (objective, le) (rate(crl_trainer_step_seconds_bucket{%s}[%s])))"
          % (SEL, RI), "{{objective}} step p95 (s)")]))
    panels.append(panel(
        next(pid), "Data in / s: groups, examples, tokens; drops", "timeseries", 16, y, 8, 7,
        [("sum by (outcome) (rate(crl_trainer_groups_total{%s}[%s]))" % (SEL, RI), "groups {{outcome}}"),
         ("sum (rate(crl_trainer_examples_total{%s}[%s]))" % (SEL, RI), "examples"),
         ("sum (rate(crl_trainer_tokens_total{%s}[%s]))" % (SEL, RI), "tokens"),
         ("sum (rate(crl_trainer_stale_samples_total{%s}[%s]))" % (SEL, RI), "stale completions dropped"),
         ("sum (rate(crl_trainer_rejected_total{%s}[%s]))" % (SEL, RI), "requests rejected"),
         ("sum (increase(crl_trainer_checkpoints_total{%s}[%s]))" % (SEL, RI), "checkpoints")], unit="ops"))
    y += 7

    # -- Timing -------------------------------------------------------------------
    panels.append(row(next(pid), "Timing oracle", y)); y += 1
    panels.append(panel(
        next(pid), "Results / s by verdict and trust flags / s", "timeseries", 0, y, 12, 7,
        [("sum by (verdict) (rate(crl_timing_results_total{%s}[%s]))" % (SEL, RI), "{{verdict}}"),
         ("sum by (flag) (rate(crl_timing_flags_total{%s}[%s]))" % (SEL, RI), "flag {{flag}}")], unit="ops"))
    panels.append(panel(
        next(pid), "Measured speedup p50 / p90", "timeseries", 12, y, 12, 7,
        [("histogram_quantile(0.5, sum by (le) (rate(crl_timing_speedup_bucket{%s}[%s])))" % (SEL, RI), "p50"),
         ("histogram_quantile(0.9, sum by (le) (rate(crl_timing_speedup_bucket{%s}[%s])))" % (SEL, RI), "p90")]))
    y += 7
    panels.append(panel(
        next(pid), "Why measurements stopped / s", "timeseries", 0, y, 12, 7,
        [("sum by (reason) (rate(crl_timing_stop_reasons_total{%s}[%s]))" % (SEL, RI), "{{reason}}")],
        unit="ops", stack=True, description="converged is the norm; budget means noisy timings (NOISY flags)."))
    panels.append(panel(
        next(pid), "Remeasurements / s", "timeseries", 12, y, 12, 7,
        [("sum by (cause) (rate(crl_timing_remeasurements_total{%s}[%s]))" % (SEL, RI), "{{cause}}")],
        unit="ops", description="Speedups measured again because they were noisy or jumped past the run's best."))
    y += 7

    # -- Worker disk and process starts -------------------------------------------
    panels.append(row(next(pid), "Worker disk, caches and process starts", y)); y += 1
    panels.append(panel(
        next(pid), "Disk held against its budget", "timeseries", 0, y, 8, 7,
        [("max by (pod, dir) (crl_worker_disk_bytes{%s})" % SEL, "{{pod}} {{dir}}"),
         ("max by (dir) (crl_worker_disk_budget_bytes{%s})" % SEL, "budget {{dir}}"),
         ("sum by (dir) (increase(crl_worker_disk_evictions_total{%s}[%s]))" % (SEL, RI), "evicted {{dir}}")],
        unit="bytes", description="CrlWorkerDiskOverBudget fires at 105% of the budget for 10 minutes: "
                                  "the kubelet evicts the pod at the volume's size limit."))
    panels.append(panel(
        next(pid), "Lanes held, reference cache hit ratio", "timeseries", 8, y, 8, 7,
        [("sum by (pod) (crl_worker_lanes_busy{%s})" % SEL, "{{pod}} lanes held"),
         ("sum (rate(crl_worker_reference_cache_total{result=\"hit\", %s}[%s])) / "
          "sum (rate(crl_worker_reference_cache_total{%s}[%s]))" % (SEL, RI, SEL, RI), "reference cache hits")]))
    panels.append(panel(
        next(pid), "Sides started / s, warm and cold", "timeseries", 16, y, 8, 7,
        [("sum by (start) (rate(crl_worker_side_starts_total{%s}[%s]))" % (SEL, RI), "{{start}}")],
        unit="ops", stack=True, description="warm: from a pool of started harness or runner processes."))
    y += 7

    # -- Prompt -------------------------------------------------------------------
    panels.append(row(next(pid), "Prompt", y)); y += 1
    panels.append(panel(
        next(pid), "Prompts built and completions parsed / s", "timeseries", 0, y, 8, 7,
        [("sum (rate(crl_prompt_builds_total{%s}[%s]))" % (SEL, RI), "built"),
         ("sum by (result) (rate(crl_prompt_parses_total{%s}[%s]))" % (SEL, RI), "parsed: {{result}}")],
        unit="ops", description="Parses other than ok are completions the model got wrong in form (no reward)."))
    panels.append(panel(
        next(pid), "Exemplars shown and dropped / s", "timeseries", 8, y, 8, 7,
        [("sum (rate(crl_prompt_exemplars_shown_total{%s}[%s]))" % (SEL, RI), "shown"),
         ("sum (rate(crl_prompt_exemplars_dropped_total{%s}[%s]))" % (SEL, RI), "dropped for the token budget")],
        unit="ops"))
    panels.append(panel(
        next(pid), "Prompt tokens p50 / p95", "timeseries", 16, y, 8, 7,
        [("histogram_quantile(0.5, sum by (le) (rate(crl_prompt_tokens_bucket{%s}[%s])))" % (SEL, RI), "p50"),
         ("histogram_quantile(0.95, sum by (le) (rate(crl_prompt_tokens_bucket{%s}[%s])))" % (SEL, RI), "p95")]))
    y += 7

    templating = [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Data source",
         "current": {}, "hide": 0, "refresh": 1, "regex": "", "options": []},
        {"name": "namespace", "type": "query", "label": "Namespace", "datasource": DS,
         "query": {"query": "label_values(crl_build_info, namespace)", "refId": "ns"},
         "definition": "label_values(crl_build_info, namespace)",
         "includeAll": True, "allValue": ".*", "multi": True, "refresh": 2, "sort": 1,
         "current": {"selected": True, "text": ["All"], "value": ["$__all"]}, "hide": 0,
         "regex": "", "options": []},
        {"name": "method", "type": "query", "label": "gRPC method", "datasource": DS,
         "query": {"query": 'label_values(crl_rpc_requests_total{namespace=~"$namespace"}, method)',
                   "refId": "method"},
         "definition": 'label_values(crl_rpc_requests_total{namespace=~"$namespace"}, method)',
         "includeAll": True, "allValue": ".*", "multi": True, "refresh": 2, "sort": 1,
         "current": {"selected": True, "text": ["All"], "value": ["$__all"]}, "hide": 0,
         "regex": "", "options": []},
    ]
    return {
        "__inputs": [],
        "__requires": [
            {"type": "grafana", "id": "grafana", "name": "Grafana", "version": "10.0.0"},
            {"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"},
            {"type": "panel", "id": "timeseries", "name": "Time series", "version": ""},
            {"type": "panel", "id": "stat", "name": "Stat", "version": ""},
        ],
        "uid": "crl-overview",
        "title": "crl",
        "description": "crl cluster: RPCs, evaluations and verdicts, compiles and the build "
                       "cache, GPU lanes and queues, runs and rewards, the sampler, the trainer and "
                       "the timing oracle. Generated by deploy/grafana/generate_dashboard.py.",
        "tags": ["crl", "gpu", "grpc"],
        "editable": True,
        "graphTooltip": 1,
        "timezone": "",
        "refresh": "30s",
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts", "type": "dashboard"}]},
        "links": [],
        "templating": {"list": templating},
        "panels": panels,
    }


def uncharted(dashboard_text):
    """Metrics the services register that neither a panel nor an alert reads."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    names = set()
    for top in ("common", "lib", "runner", "services"):
        for folder, _, files in os.walk(os.path.join(repo, top)):
            for name in files:
                if not name.endswith(".cc"):
                    continue
                with open(os.path.join(folder, name)) as f:
                    text = f.read()
                if "prometheus::Build" in text:
                    names.update(re.findall(r'"(crl_[a-z0-9_]+)"', text))
    with open(os.path.join(repo, "deploy", "helm", "crl", "files", "alerts.rules.yaml")) as f:
        read = dashboard_text + f.read()
    return sorted(n for n in names if not re.search(r"\b%s(_bucket|_count|_sum)?\b" % n, read))


if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crl-dashboard.json")
    text = json.dumps(build(), indent=2) + "\n"
    if "--check" in sys.argv[1:]:
        with open(out) as f:
            if f.read() != text:
                sys.exit(out + " is stale: run python3 " + __file__)
        print("up to date:", out)
        missing = uncharted(text)
        if missing:
            sys.exit("metrics in neither the dashboard nor the alert rules: " + " ".join(missing))
        print("every registered crl_* metric is on the dashboard or in an alert")
    else:
        with open(out, "w") as f:
            f.write(text)
        print("wrote", out)
