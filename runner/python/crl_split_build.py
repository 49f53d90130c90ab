"""Builds a load_inline extension with its CUDA source split in two
(crl_cu_split.py): the host part with g++ and a precompiled torch/types.h
(torch/extension.h when it needs Python), the device part with nvcc without
torch's headers, beside load_inline's own main.cpp.

A file that would include torch/extension.h (main.cpp always; a host part
that needs Python) is compiled first against a precompiled torch/python.h,
the header's Python half (crl_cu_split.python_half), and as it stands only
when that fails: the candidate's compile error is always the one the file as
written gives.

The commands are torch's own: load_inline is run once with a `ninja` that
only answers --version, which leaves the build.ninja it would have run; its
variables and rules compile the three files and link them into the .so that
load_inline would have made. Anything unexpected raises Refused or Failed, and
the caller builds with load_inline as it stands.
"""
import os
import re
import shlex
import subprocess
import threading
import time

import crl_cu_split

_perf = time.perf_counter


class Failed(Exception):
    """The split build did not compile or link; the message holds the log."""


class MainFailed(Failed):
    """load_inline's own main.cpp did not compile. The split compiles it with
    the command and file a whole build would use, so a whole build fails the
    same way: this is the candidate's compile error, with no whole build
    after it."""


def fake_ninja_dir(root):
    """A directory whose `ninja` answers --version and fails otherwise: torch
    writes build.ninja and stops."""
    d = os.path.join(root, "crl-fake-ninja")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "ninja")
    if not os.path.exists(path):
        with open(path + ".tmp", "w") as f:
            f.write('#!/bin/sh\n[ "$1" = --version ] && echo 1.11.1 && exit 0\nexit 1\n')
        os.chmod(path + ".tmp", 0o755)
        os.rename(path + ".tmp", path)
    return d


def probe_ninja(load_inline, kwargs, build_directory, fake_dir):
    """The build.ninja torch's load_inline writes for these arguments."""
    real_path = os.environ.get("PATH", "/usr/bin:/bin")
    os.environ["PATH"] = fake_dir + ":" + real_path
    try:
        load_inline(build_directory=build_directory, **kwargs)
    except Exception:  # noqa: BLE001 — expected: the fake ninja fails
        pass
    finally:
        os.environ["PATH"] = real_path
    path = os.path.join(build_directory, "build.ninja")
    if not os.path.exists(path):
        raise crl_cu_split.Refused("torch wrote no build.ninja")
    with open(path) as f:
        return f.read()


class Ninja:
    """The variables, rules and build lines of torch's build.ninja."""

    def __init__(self, text):
        self.vars, self.rules, self.builds = {}, {}, []
        rule = None
        for line in text.splitlines():
            if not line.strip():
                continue
            if line.startswith("rule "):
                rule = line[5:].strip()
                self.rules[rule] = {}
            elif line.startswith("  ") and rule is not None:
                k, _, v = line.strip().partition(" = ")
                self.rules[rule][k] = v
            elif line.startswith("build "):
                rule = None
                outs, _, rest = line[6:].partition(": ")
                parts = rest.split()
                self.builds.append((outs.strip(), parts[0], parts[1:]))
            elif " = " in line and not line.startswith(" "):
                rule = None
                k, _, v = line.partition(" = ")
                self.vars[k.strip()] = v.strip()

    def command(self, rule, ins, out, **overrides):
        if rule not in self.rules or "command" not in self.rules[rule]:
            raise crl_cu_split.Refused("build.ninja has no rule %s" % rule)
        values = dict(self.vars, **overrides)
        values["in"] = " ".join(shlex.quote(i) for i in ins)
        values["out"] = shlex.quote(out)

        def expand(m):
            if m.group(0) == "$$":
                return "$"
            name = m.group(1) or m.group(2)
            return values.get(name, "")
        return re.sub(r"\$\$|\$\{(\w+)\}|\$(\w+)", expand, self.rules[rule]["command"])

    def extension_name(self):
        """TORCH_EXTENSION_NAME in cflags (the module's name), or None."""
        return next((f.split("=", 1)[1] for f in shlex.split(self.vars.get("cflags", ""))
                     if f.startswith("-DTORCH_EXTENSION_NAME=")), None)

    def target(self, rule):
        for outs, r, ins in self.builds:
            if r == rule:
                return outs, ins
        raise crl_cu_split.Refused("build.ninja has no %s build" % rule)


def _run(cmd, cwd, times, key):
    start = _perf()
    p = subprocess.run(cmd, shell=True, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, errors="replace")
    times[key] = round(_perf() - start, 3)
    if p.returncode != 0:
        raise Failed("%s failed (exit %d): %s\n%s" % (key, p.returncode, cmd[:500], p.stdout[-4000:]))
    return p.stdout


def cuda_defines(cuda_cflags):
    """torch's -D flags for .cu files (the __CUDA_NO_HALF... family), which
    nvcc's host pass saw too."""
    return [f for f in shlex.split(cuda_cflags) if f.startswith("-D__CUDA_NO_")]


# nvcc flags that reach the host compiler, and those that do not.
_DEVICE_ONLY_FLAGS = re.compile(
    r"^(--?use_fast_math|--expt-relaxed-constexpr|--expt-extended-lambda|--extended-lambda|"
    r"-lineinfo|--generate-line-info|--ptxas-options=.*|-Xptxas=.*|--maxrregcount=.*|"
    r"-maxrregcount=.*|-arch=.*|--gpu-architecture=.*|-gencode=.*|-std=c\+\+1[47]|"
    r"-std=c\+\+17|--std=c\+\+17|--extra-device-vectorization|-ftz=.*|-prec-div=.*|"
    r"-prec-sqrt=.*|-fmad=.*|--fmad=.*|--ftz=.*|--prec-div=.*|--prec-sqrt=.*|-res-usage|"
    r"--resource-usage|-Xcudafe=.*|--threads=.*|-t\d+|-restrict|--restrict|"
    r"-U__CUDA_NO_HALF\w*|-D__CUDA_NO_\w*|--use-fast-math)$")
_DEVICE_ONLY_WITH_VALUE = {"-Xptxas", "--ptxas-options", "-maxrregcount", "--maxrregcount",
                           "-arch", "-gencode", "--gpu-architecture", "-Xcudafe", "--threads",
                           "-t"}


def host_flags(extra_cuda_cflags):
    """The flags nvcc would give the host compiler for these extra_cuda_cflags
    (its -O level, -D/-U/-I, -Xcompiler values), or Refused for a flag it
    does not know."""
    flags = list(extra_cuda_cflags or [])
    out = []
    i = 0
    while i < len(flags):
        f = flags[i]
        if f in _DEVICE_ONLY_WITH_VALUE:
            i += 2
            continue
        if re.match(r"^-O[0-3s]?$", f):
            out.append(f if f != "-O" else "-O3")
        elif re.match(r"^-(D|U|I)", f):
            if f in ("-D", "-U", "-I"):
                if i + 1 >= len(flags):
                    raise crl_cu_split.Refused("flag %s without a value" % f)
                out += [f, flags[i + 1]]
                i += 1
            elif not re.match(r"^-D__CUDA_NO_", f) and not re.match(r"^-U__CUDA_NO_", f):
                out.append(f)
            else:
                raise crl_cu_split.Refused("flag %s changes the CUDA half types" % f)
        elif f in ("-Xcompiler", "--compiler-options"):
            if i + 1 >= len(flags):
                raise crl_cu_split.Refused("flag %s without a value" % f)
            out += [x for x in flags[i + 1].strip("'\"").split(",") if x]
            i += 1
        elif f.startswith(("-Xcompiler=", "--compiler-options=")):
            out += [x for x in f.split("=", 1)[1].strip("'\"").split(",") if x]
        elif not _DEVICE_ONLY_FLAGS.match(f):
            raise crl_cu_split.Refused("nvcc flag %s" % f)
        i += 1
    return out


def _run_first(attempts, cwd, times, key):
    """Runs the first of attempts, [(command, header, precompiled header or
    None)], and the next only when one fails to compile; the last one's
    failure is raised. times[key] is the time of them all, times[key +
    "_header"] says which header compiled (and the headers that failed)."""
    start, failed = _perf(), []
    for i, (cmd, header, pch) in enumerate(attempts):
        try:
            log = _run(cmd, cwd, times, key)
        except Failed:
            if i + 1 == len(attempts):
                times[key] = round(_perf() - start, 3)
                raise
            failed.append(header)
            continue
        note = "" if pch else " (no precompiled header)"
        if pch and "not used because" in log:
            # -Winvalid-pch: g++ parsed the header instead (slow, not wrong)
            note = " (precompiled header not used)"
        times[key] = round(_perf() - start, 3)
        times[key + "_header"] = header + note + "".join(
            "; %s did not compile" % h for h in failed)
        return log


def _compile_command(ninja, src, out, common, pch, flags):
    """torch's compile rule for src: torch's `common` flags, the precompiled
    header (if any), then `flags`, as load_inline orders its own."""
    cflags = common + (["-include", pch, "-Winvalid-pch"] if pch else []) + flags
    return ninja.command("compile", [src], out, cflags=" ".join(shlex.quote(f) for f in cflags))


def python_half_attempt(ninja, text, path, out, common, flags, pch_for):
    """The (command, header, pch) that compiles text, written to path,
    against torch/python.h instead of torch/extension.h
    (crl_cu_split.python_half), precompiled for `flags`; None when the text
    asks for the C++ frontend or there is no such header
    (tools/bench/kb_header_halves.py compiles the same command)."""
    pch = pch_for(flags, crl_cu_split.PYTHON_H)
    half = crl_cu_split.python_half(text) if pch else None
    if half is None:
        return None
    with open(path, "w") as f:
        f.write(half)
    return _compile_command(ninja, path, out, common, pch, flags), crl_cu_split.PYTHON_H, pch


def build(load_inline, kwargs, build_directory, user_cflags, pch_for, fake_dir):
    """Builds kwargs' load_inline call split; returns (path of the .so, the
    extension's module name, phase times). kwargs are load_inline's
    arguments without build_directory; user_cflags are the candidate's own
    extra_cflags (kwargs["extra_cflags"] may have a precompiled header in
    front of them); pch_for(flags, header) is the precompiled-header include
    of `header` for a flag list, or None.
    Raises crl_cu_split.Refused before compiling anything, Failed after."""
    times = {}
    start = _perf()
    build_directory = os.path.abspath(build_directory)
    cuda = kwargs.get("cuda_sources")
    text = "\n".join(cuda) if isinstance(cuda, (list, tuple)) else cuda
    if not text:
        raise crl_cu_split.Refused("no CUDA sources")
    parts = crl_cu_split.split(text)
    host_extra = host_flags(kwargs.get("extra_cuda_cflags"))
    times["split"] = round(_perf() - start, 3)
    ninja = Ninja(probe_ninja(load_inline, kwargs, build_directory, fake_dir))
    times["probe"] = round(_perf() - start - times["split"], 3)
    so, link_ins = ninja.target("link")
    main_out, main_in = None, None
    for outs, rule, ins in ninja.builds:
        if rule == "compile":
            main_out, main_in = outs, ins
    if main_out is None or [os.path.basename(i) for i in main_in] != ["main.cpp"] or \
            sorted(link_ins) != sorted([main_out, "cuda.cuda.o"]):
        raise crl_cu_split.Refused("build.ninja is not the expected main.cpp + cuda.cu build")
    cflags = shlex.split(ninja.vars.get("cflags", ""))
    extra_cflags = list(kwargs.get("extra_cflags") or [])
    user_cflags = list(user_cflags or [])
    n = len(extra_cflags)
    if (n and cflags[-n:] != extra_cflags) or extra_cflags[n - len(user_cflags):] != user_cflags:
        raise crl_cu_split.Refused("cflags do not end with extra_cflags")
    common = cflags[:len(cflags) - n]
    # The host part sees of torch what a whole build's .cu sees: load_inline's
    # torch/types.h, and torch/extension.h only where it includes or needs it
    # (its pybind11 part costs every file that includes it seconds of g++).
    defines = cuda_defines(ninja.vars.get("cuda_cflags", ""))
    pch = pch_for(host_extra + defines, parts.header)
    name = ninja.extension_name()
    if not name:
        raise crl_cu_split.Refused("no TORCH_EXTENSION_NAME in cflags")

    host_src = os.path.join(build_directory, "crl_host.cpp")
    dev_src = os.path.join(build_directory, "crl_dev.cu")
    with open(host_src, "w") as f:
        f.write(parts.host)
    with open(dev_src, "w") as f:
        f.write(parts.device)
    main_src = main_in[0] if os.path.isabs(main_in[0]) else os.path.join(build_directory, main_in[0])
    main_attempts = [(ninja.command("compile", main_in, main_out), crl_cu_split.EXTENSION_H,
                      pch_for(user_cflags, crl_cu_split.EXTENSION_H))]
    if os.path.exists(main_src):
        with open(main_src) as f:
            half = python_half_attempt(ninja, f.read(), os.path.join(build_directory, "crl_main.cpp"),
                                       main_out, common, user_cflags, pch_for)
        main_attempts[:0] = [half] if half else []
    host_attempts = [(_compile_command(ninja, host_src, "crl_host.o", common, pch, host_extra + defines),
                      parts.header, pch)]
    if parts.header == crl_cu_split.EXTENSION_H:
        half = python_half_attempt(ninja, parts.host, os.path.join(build_directory, "crl_host_py.cpp"),
                                   "crl_host.o", common, host_extra + defines, pch_for)
        host_attempts[:0] = [half] if half else []
    dev_cmd = ninja.command("cuda_compile", [dev_src], "crl_dev.cuda.o")
    errors = []

    def run_main():
        try:
            _run_first(main_attempts, build_directory, times, "main")
        except Failed as e:
            errors.append(MainFailed(str(e)))

    def run_host_then_device():
        try:
            _run_first(host_attempts, build_directory, times, "host")
            if parts.templated:
                t = _perf()
                out = subprocess.run(["nm", "-C", "-u", "crl_host.o"], cwd=build_directory,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                if out.returncode != 0:
                    raise Failed("nm crl_host.o: " + out.stdout[-2000:])
                with open(dev_src, "a") as f:
                    f.write(crl_cu_split.instantiations(out.stdout.splitlines()))
                times["instantiations"] = round(_perf() - t, 3)
                _run(dev_cmd, build_directory, times, "device")
        except (Failed, crl_cu_split.Refused) as e:
            errors.append(e)

    def run_device():
        try:
            _run(dev_cmd, build_directory, times, "device")
        except Failed as e:
            errors.append(e)

    threads = [threading.Thread(target=run_main), threading.Thread(target=run_host_then_device)]
    if not parts.templated:
        threads.append(threading.Thread(target=run_device))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    main_failed = [e for e in errors if isinstance(e, MainFailed)]
    if main_failed:
        raise main_failed[0]
    if errors:
        raise errors[0] if isinstance(errors[0], Failed) else Failed(str(errors[0]))
    _run(ninja.command("link", [main_out, "crl_host.o", "crl_dev.cuda.o"], so), build_directory,
         times, "link")
    times["total"] = round(_perf() - start, 3)
    return os.path.join(build_directory, so), name, times
