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
                       "cache, GPU lanes and queues. Generated by deploy/grafana/generate_dashboard.py.",
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


if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crl-dashboard.json")
    text = json.dumps(build(), indent=2) + "\n"
    if "--check" in sys.argv[1:]:
        with open(out) as f:
            if f.read() != text:
                sys.exit(out + " is stale: run python3 " + __file__)
        print("up to date:", out)
    else:
        with open(out, "w") as f:
            f.write(text)
        print("wrote", out)
