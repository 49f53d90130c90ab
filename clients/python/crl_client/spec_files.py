"""The files a run spec names, as the client sends them to ParseRunSpec.

The orchestrator parses the spec (one parser: lib/run/run_spec.cc); this
module only finds what it will read, by the spec's relative paths:

  * each entry of ``tasks``: a native task directory (its top-level files and
    its ``candidates/``, which ``sft_examples: shipped`` reads), a KernelBench
    ``.py`` file, or a directory of them;
  * ``sft_examples: FILE.jsonl``.

Paths are sent relative to the spec file's folder (``../`` kept); absolute
paths are the orchestrator's own and are not sent. A path that does not
exist is not sent either: the orchestrator's error then names it.
"""

from __future__ import annotations

import os
from typing import Any, Iterator, List, Tuple

import yaml

__all__ = ["MAX_BYTES", "spec_files"]

# What a spec's files may add up to (the orchestrator refuses more).
MAX_BYTES = 64 << 20


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _files_of(spec_dir: str, entry: str) -> Iterator[str]:
    full = os.path.join(spec_dir, entry)
    if os.path.isdir(full) and os.path.isfile(os.path.join(full, "task.yaml")):
        for sub in ("", "candidates"):
            folder = os.path.join(full, sub)
            if os.path.isdir(folder):
                for name in sorted(os.listdir(folder)):
                    if os.path.isfile(os.path.join(folder, name)):
                        yield os.path.join(entry, sub, name) if sub else os.path.join(entry, name)
    elif os.path.isfile(full):
        yield entry
    elif os.path.isdir(full):
        for name in sorted(os.listdir(full)):
            if name.endswith(".py") and os.path.isfile(os.path.join(full, name)):
                yield os.path.join(entry, name)


def spec_files(spec_path: str, text: str) -> List[Tuple[str, bytes]]:
    """(path relative to the spec's folder, content) of every file the spec
    at `spec_path` (whose text is `text`) names. ValueError when the text is
    not YAML, or when the files pass MAX_BYTES."""
    try:
        root: Any = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(f"{spec_path}: not YAML: {e}") from None
    if not isinstance(root, dict):
        return []  # the orchestrator says what is wrong with it
    spec_dir = os.path.dirname(os.path.abspath(spec_path))
    entries = [t for t in root.get("tasks") or [] if isinstance(t, str)]
    sft = root.get("sft_examples")
    if isinstance(sft, str) and sft != "shipped" and not sft.startswith("shipped:"):
        entries.append(sft)
    out: List[Tuple[str, bytes]] = []
    seen = set()
    total = 0
    for entry in entries:
        if os.path.isabs(entry):
            continue
        for rel in _files_of(spec_dir, entry):
            rel = os.path.normpath(rel)
            if rel in seen:
                continue
            seen.add(rel)
            content = _read(os.path.join(spec_dir, rel))
            total += len(content)
            if total > MAX_BYTES:
                raise ValueError(f"{spec_path}: the task files pass {MAX_BYTES >> 20} MiB at {rel}")
            out.append((rel, content))
    return out
