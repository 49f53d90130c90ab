#!/usr/bin/env python3
"""Writes the chart's values.schema.json from values.yaml.

helm checks every install, upgrade, lint and template against the schema, so
a misspelt key (`--set worker.replica=8`) or a value of the wrong kind is
refused with the key's path instead of rendering silently. The schema is made
from values.yaml itself, so a key added there is in the schema at once:

  * an object's keys are exactly those of values.yaml (additionalProperties:
    false), except under the free-form keys below (Kubernetes objects passed
    through as they are, and each component's `config`, which the binaries
    check themselves);
  * a value has the JSON type of its default (integers, strings, booleans,
    lists of strings);
  * RULES narrows or widens what inference cannot see: enums, port ranges,
    values that may be either an integer or a string.

  deploy/helm/schema.py          rewrite deploy/helm/crl/values.schema.json
  deploy/helm/schema.py --check  exit 1 when the file differs from what it would write
"""
import fnmatch
import json
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
VALUES = os.path.join(HERE, "crl", "values.yaml")
SCHEMA = os.path.join(HERE, "crl", "values.schema.json")

COMPONENTS = ["worker", "timing", "orchestrator", "prompt", "sampler", "trainer"]

# Keys whose values are Kubernetes API objects (or lists of them) or free
# option maps: their shape is Kubernetes' or the binary's business.
FREE_FORM = {
    "resources", "nodeSelector", "tolerations", "affinity", "topologySpreadConstraints",
    "podSecurityContext", "securityContext", "annotations", "podAnnotations", "podLabels",
    "labels", "env", "extraVolumes", "extraVolumeMounts", "extraIngress", "extraEgress",
    "config", "volume", "namespaceSelector", "podSelector", "matchLabels", "pullSecrets",
    "rollingUpdate", "to",
}

INT_OR_STRING = {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": "^[0-9]+%$"}]}
PORT = {"type": "integer", "minimum": 1, "maximum": 65535}

# dotted path (fnmatch patterns: * is one key) -> schema fragment merged over
# the inferred one.
RULES = {
    "server.logLevel": {"enum": ["debug", "info", "warning", "error"]},
    "server.metricsPort": PORT,
    "*.grpcPort": PORT,
    "*.replicas": {"minimum": 0},
    "*.pdb.maxUnavailable": INT_OR_STRING,
    "*.networkPolicy.egress": {"enum": ["none", "restricted", "all"]},
    "*.networkPolicy.egressTo": {"items": {"enum": COMPONENTS}},
    "*.networkPolicy.ingressFrom": {"items": {"enum": COMPONENTS}},
    "*.service.type": {"enum": ["ClusterIP", "NodePort", "LoadBalancer"]},
    "*.strategy.type": {"enum": ["RollingUpdate", "Recreate"]},
    "images.pullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
    "images.*.tag": {"type": ["string", "integer", "number"]},
    "*.image": {"enum": ["services", "worker", "trainer"]},
    "policy.embedded.image": {"enum": ["services", "worker", "trainer"]},
    "sampler.backend": {"enum": ["policy", "endpoints"]},
    "worker.cache.type": {"enum": ["emptyDir", "ephemeral"]},
    "worker.sandbox.profile": {"enum": ["restricted-userns", "privileged-userns", "privileged", "custom"]},
    "worker.hostUsers": {"type": ["boolean", "null"]},
    "worker.config.*": {},
    "tests.smoke.backend": {"enum": ["auto", "host", "cuda"]},
    "orchestrator.ingress.pathType": {"enum": ["Prefix", "Exact", "ImplementationSpecific"]},
    "orchestrator.judge.timeoutSeconds": {"minimum": 1},
    "orchestrator.judge.rejudgeEverySeconds": {"minimum": 0},
    "*.gpu.count": {"minimum": 1},
    "trainer.distributed.worldSize": {"minimum": 1},
    "trainer.distributed.backend": {"enum": ["gloo", "nccl"]},
    "trainer.distributed.port": PORT,
    "trainer.distributed.peerTimeoutSeconds": {"minimum": 0},
    "*.probes.*.*": {"minimum": 1},
}


def rule_for(path):
    merged = {}
    for pattern, rule in RULES.items():
        if len(pattern.split(".")) == len(path.split(".")) and fnmatch.fnmatchcase(path, pattern):
            merged.update(rule)
    return merged


def infer(value, path, key):
    if key in FREE_FORM:
        node = {"type": "object"} if isinstance(value, dict) else {"type": "array"} if isinstance(value, list) else {}
    elif isinstance(value, dict):
        node = {
            "type": "object",
            "additionalProperties": False,
            "properties": {k: infer(v, f"{path}.{k}" if path else k, k) for k, v in value.items()},
        }
    elif isinstance(value, list):
        node = {"type": "array"}
        if value and all(isinstance(v, str) for v in value):
            node["items"] = {"type": "string"}
    elif isinstance(value, bool):
        node = {"type": "boolean"}
    elif isinstance(value, int):
        node = {"type": "integer"}
    elif isinstance(value, float):
        node = {"type": "number"}
    elif isinstance(value, str):
        node = {"type": "string"}
    else:
        node = {}
    rule = rule_for(path)
    if "anyOf" in rule or "enum" in rule:
        node.pop("type", None)
    node.update(rule)
    return node


def schema():
    with open(VALUES) as f:
        values = yaml.safe_load(f)
    root = infer(values, "", "")
    root["properties"]["global"] = {"type": "object"}  # helm's, for parent charts
    return {
        "$schema": "https://json-schema.org/draft-07/schema#",
        "title": "crl chart values (generated from values.yaml by deploy/helm/schema.py)",
        **root,
    }


def main():
    text = json.dumps(schema(), indent=2) + "\n"
    if sys.argv[1:] == ["--check"]:
        with open(SCHEMA) as f:
            if f.read() != text:
                print("FAIL: deploy/helm/crl/values.schema.json is stale: run deploy/helm/schema.py")
                return 1
        print("OK: values.schema.json matches values.yaml")
        return 0
    with open(SCHEMA, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
