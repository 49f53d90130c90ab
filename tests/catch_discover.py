#!/usr/bin/env python3
"""Writes a ctest file with one test per Catch2 case of a test binary.

  catch_discover.py BINARY GROUP TIMEOUT OUT [--spec=SPEC] [--lock=RESOURCE]

Each case becomes the test "GROUP/<case name>", which runs BINARY with that
one case, under TIMEOUT seconds and, with --lock, the ctest RESOURCE_LOCK.
Names are passed through whole: commas and brackets are escaped for Catch's
test-spec parser, and every CMake argument is a bracket argument, so a
semicolon or quote in a name stays in it (Catch2's own catch_discover_tests
splits names at ',' and ';'). A binary that lists no case is an error.
"""
import os
import subprocess
import sys


def bracket(text):
    """`text` as one CMake bracket argument, whatever it contains."""
    eq = ""
    while f"]{eq}]" in text:
        eq += "="
    return f"[{eq}[{text}]{eq}]"


def catch_escape(name):
    for c in "\\,[]":
        name = name.replace(c, "\\" + c)
    return name


def main(argv):
    positional = [a for a in argv if not a.startswith("--")]
    options = dict(a[2:].split("=", 1) for a in argv if a.startswith("--"))
    binary, group, timeout, out = positional
    command = [binary] + ([options["spec"]] if options.get("spec") else []) + ["--list-test-names-only"]
    listed = subprocess.run(command, capture_output=True, text=True)
    names = [line for line in listed.stdout.splitlines() if line.strip()]
    if listed.returncode < 0 or not names:
        sys.exit(f"catch_discover: {' '.join(command)} listed no test cases "
                 f"(exit {listed.returncode}): {listed.stderr.strip()[:500]}")
    odd = [n for n in names if n[0] in "-~*" or n.startswith("exclude:")]
    if odd:
        sys.exit(f"catch_discover: {binary}: a case name that Catch would read as an option "
                 f"or a pattern cannot be run alone; rename it: {odd[0]!r}")
    if len(set(names)) != len(names):
        sys.exit(f"catch_discover: {binary} lists a test case name twice")
    lines = []
    for name in names:
        test = bracket(f"{group}/{name}")
        lines.append(f"add_test({test} {bracket(binary)} {bracket(catch_escape(name))})")
        props = f"TIMEOUT {timeout}"
        if options.get("lock"):
            props += f" RESOURCE_LOCK {options['lock']}"
        lines.append(f"set_tests_properties({test} PROPERTIES {props})")
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, out)


if __name__ == "__main__":
    main(sys.argv[1:])
