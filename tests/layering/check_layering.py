#!/usr/bin/env python3
"""The dependency rule of docs/architecture.md, checked on every #include.

Floors, lowest first; each may include its own floor and the ones below:
  runner/    the sandbox and runner: itself and include/crl/kernel.h only
  common/    runtime shared by services (gRPC lives only in the edge files)
  lib/       domain shared by services: no services/, no gRPC in headers
  services/  one folder per service: common/, lib/, runner/, protos, its own
             folder, and other services' client headers (<svc>_client.h,
             grpc_<svc>_client.h)
  tools/     benchmarks: any floor below, other services' client headers and
             the internals of one service per file; never tests/

Nothing below tools/ includes tools/ or tests/. A client interface
(services/<svc>/<svc>_client.h) and a fake (fake_*.h) are free of gRPC, with
everything they include: code that only uses a client compiles without it.

The folder map of docs/architecture.md is kept true the same way: every
folder of lib/, services/ and tools/, and every room of the worker, is named
there.

Prints every violation as FILE:LINE: what, and exits 1 when there is one.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
PROTOS = ("crl/v1/", "grpc/health/v1/")
# Includes naming a path of this repository; anything else is third-party.
PROJECT = ("common/", "lib/", "services/", "runner/", "tests/", "tools/", "crl/") + PROTOS
SOURCES = (".h", ".cc", ".cu")


def includes(path):
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield number, m.group(1), m.group(2)


def grpc(kind, target):
    return target.startswith("grpcpp/") or target.startswith("grpc/") and not target.startswith(
        "grpc/health/") or target.endswith(".grpc.pb.h")


def client_header(service, name):
    """Whether `name` is one of `service`'s client headers."""
    return re.fullmatch(rf"(grpc_)?{re.escape(service)}_client\.h", name) is not None


def check(path):
    rel = path.relative_to(ROOT).as_posix()
    floor = rel.split("/")[0]
    problems = []
    internals = set()  # the services whose internals a tools/ file includes
    for number, kind, target in includes(path):
        if not target.startswith(PROJECT) and not grpc(kind, target):
            continue  # system and third-party headers
        where = f"{rel}:{number}"
        if floor != "tests" and target.startswith("tests/") or floor not in (
                "tests", "tools") and target.startswith("tools/"):
            problems.append(f"{where}: {floor}/ may not include {target}")
        if floor == "tools":
            parts = target.split("/")
            if target.startswith("services/") and not client_header(parts[1], parts[-1]):
                internals.add(parts[1])
                if len(internals) > 1:
                    problems.append(f"{where}: a tool drives one service's internals, not "
                                    f"{' and '.join(sorted(internals))} ({target})")
        elif floor == "runner":
            if kind == '"' and not (target.startswith("runner/") or target == "crl/kernel.h"):
                problems.append(f"{where}: the runner includes only runner/ ({target})")
        elif floor == "common":
            if target.startswith(("lib/", "services/")):
                problems.append(f"{where}: common/ may not include {target}")
        elif floor == "lib":
            if target.startswith("services/"):
                problems.append(f"{where}: lib/ may not include a service ({target})")
            if rel.endswith(".h") and grpc(kind, target):
                problems.append(f"{where}: no gRPC in lib/ headers ({target})")
        elif floor == "services":
            service = rel.split("/")[1]
            if target.startswith("services/"):
                parts = target.split("/")
                other = parts[1]
                if other != service and not client_header(other, parts[-1]):
                    problems.append(f"{where}: services/{service} includes services/{other}'s "
                                    f"internals ({target}); use its client header")
            elif target.startswith(PROJECT) and not target.startswith(
                    ("common/", "lib/", "runner/", "crl/kernel.h") + PROTOS):
                problems.append(f"{where}: services include common/, lib/, runner/, protos "
                                f"and client headers only ({target})")
    return problems


def grpc_reached(path, seen):
    """The first gRPC include reached from `path` through project headers,
    as "file:line: target", or None."""
    for number, kind, target in includes(path):
        if grpc(kind, target):
            return f"{path.relative_to(ROOT).as_posix()}:{number}: {target}"
        header = ROOT / target
        if target.startswith(PROJECT) and header.is_file() and header not in seen:
            seen.add(header)
            found = grpc_reached(header, seen)
            if found:
                return found
    return None


def check_interfaces():
    problems = []
    for path in sorted((ROOT / "services").glob("*/*.h")):
        service = path.parent.name
        if path.name == f"{service}_client.h" or path.name.startswith("fake_"):
            found = grpc_reached(path, {path})
            if found:
                problems.append(f"{path.relative_to(ROOT).as_posix()}: a client interface or "
                                f"fake must not reach gRPC (via {found})")
    return problems


def folders(path):
    return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith((".", "__")))


def check_folder_map():
    doc_path = ROOT / "docs" / "architecture.md"
    doc = doc_path.read_text()
    problems = []

    def named(what, *forms):
        if not any(f in doc for f in forms):
            problems.append(f"docs/architecture.md: {what} is not in the folder map (as {' or '.join(forms)})")

    for floor in ("lib", "tools"):
        for d in folders(ROOT / floor):
            named(f"{floor}/{d.name}/", f"{floor}/{d.name}")
    for d in folders(ROOT / "services"):
        named(f"services/{d.name}/", f"services/{d.name}", f"crl-{d.name}")
    worker = ROOT / "services" / "worker"
    for room in folders(worker):
        named(f"the worker's room {room.name}/", f"`{room.name}/`")
        for sub in folders(room):
            named(f"the worker's room {room.name}/{sub.name}/", f"`{sub.name}/`", f"`{room.name}/{sub.name}/`")
    return problems


def main():
    problems = check_folder_map()
    for floor in ("runner", "common", "lib", "services", "tools"):
        for path in sorted((ROOT / floor).rglob("*")):
            if path.suffix in SOURCES and path.is_file():
                problems += check(path)
    problems += check_interfaces()
    for p in problems:
        print(p)
    print(f"layering: {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
