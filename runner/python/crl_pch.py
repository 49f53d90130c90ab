"""Precompiled torch headers for KernelBench builds (crl_kb_harness.py pch,
once per worker cache; docs/kernelbench.md, "Fast builds").

load_inline's main.cpp includes torch/extension.h; a split build's host part
(crl_split_build.py) includes torch/types.h, or torch/extension.h when it
needs Python; a split build tries files that include torch/extension.h
against its Python half, torch/python.h, first. Each header is precompiled
with exactly the flags of the files that include it, read from the
build.ninja torch writes, so g++ accepts it (-Winvalid-pch says when it
does not).
"""
import hashlib
import os
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import crl_cu_split
import crl_split_build

_perf = time.perf_counter

# The flag sets candidates use most; others build without a PCH.
PCH_FLAG_SETS = ([], ["-O3"])
EXTENSION_H = crl_cu_split.EXTENSION_H
TYPES_H = crl_cu_split.TYPES_H
PYTHON_H = crl_cu_split.PYTHON_H


def _pch_name(cflags, header):
    key = header + "\n" + " ".join(cflags)
    return "torch_" + hashlib.sha256(key.encode()).hexdigest()[:16] + ".h"


def pch_for(pch_dir, cflags, header=EXTENSION_H):
    """The PCH include of `header` for these flags, or None."""
    if not pch_dir:
        return None
    path = os.path.join(pch_dir, _pch_name(cflags, header))
    if os.path.exists(path + ".gch"):
        return path
    return None


def _pch_jobs(cpp_ext, probe, fake_dir):
    """(header, key flags, compile flags) of each precompiled header, with exactly the flags
    torch's own extension build uses: a probe build whose `ninja` only
    answers --version writes build.ninja and stops (crl_split_build.py).
    torch/extension.h and torch/python.h for load_inline's main.cpp at each
    of PCH_FLAG_SETS; where CUDA builds, also torch/types.h,
    torch/extension.h and torch/python.h with torch's -D__CUDA_NO_* flags
    for split builds' host parts (crl_split_build.py)."""
    jobs = []
    for cflags in PCH_FLAG_SETS:
        d = os.path.join(probe, str(len(os.listdir(probe))))
        os.makedirs(d)
        kwargs = dict(name="crl_pch_probe", cpp_sources="int crl_probe() { return 0; }",
                      extra_cflags=cflags, is_python_module=False)
        ninja = crl_split_build.Ninja(crl_split_build.probe_ninja(cpp_ext.load_inline, kwargs, d, fake_dir))
        flags = [f for f in shlex.split(ninja.vars.get("cflags", "")) +
                 shlex.split(ninja.vars.get("post_cflags", ""))
                 if not f.startswith("-DTORCH_EXTENSION_NAME=")]
        jobs += [(header, cflags, flags) for header in (EXTENSION_H, PYTHON_H)]
        if cpp_ext.CUDA_HOME is None:
            continue
        d = os.path.join(probe, str(len(os.listdir(probe))))
        os.makedirs(d)
        # Only the probe's -D flags are read. torch picks CUDA architectures
        # from the visible GPUs, and the compile sandbox shows none: without
        # a list it writes no build.ninja (found on the GPU machine).
        arch = os.environ.get("TORCH_CUDA_ARCH_LIST")
        os.environ["TORCH_CUDA_ARCH_LIST"] = arch or "8.0"
        try:
            ninja = crl_split_build.Ninja(crl_split_build.probe_ninja(
                cpp_ext.load_inline, dict(kwargs, cuda_sources="__global__ void crl_probe_k() {}"),
                d, fake_dir))
        except Exception as e:  # noqa: BLE001 — host PCHs are an optimisation
            print("pch: no CUDA probe (%s); host parts build without a PCH" % e, file=sys.stderr)
            continue
        finally:
            if arch is None:
                del os.environ["TORCH_CUDA_ARCH_LIST"]
            else:
                os.environ["TORCH_CUDA_ARCH_LIST"] = arch
        defines = crl_split_build.cuda_defines(ninja.vars.get("cuda_cflags", ""))
        for header in (TYPES_H, EXTENSION_H, PYTHON_H):
            jobs.append((header, cflags + defines, flags + defines))
    return jobs


def build_pch(out_dir):
    """Compiles the precompiled headers of _pch_jobs, as many at once as
    there are CPUs (each g++ holds 1.5–2 GB while it runs)."""
    import torch.utils.cpp_extension as cpp_ext
    probe = os.path.join(out_dir, "probe")
    os.makedirs(probe, exist_ok=True)
    real_cxx = os.environ.get("CXX", "c++")
    fake_dir = crl_split_build.fake_ninja_dir(probe)
    jobs = []
    for header, key_flags, flags in _pch_jobs(cpp_ext, probe, fake_dir):
        path = os.path.join(out_dir, _pch_name(key_flags, header))
        with open(path, "w") as f:
            f.write("#include <%s>\n" % header)
        jobs.append((path, [real_cxx] + flags + ["-x", "c++-header", path, "-o", path + ".tmp.gch"]))

    def compile_one(job):
        path, cmd = job
        if subprocess.run(cmd).returncode != 0:
            return False
        os.rename(path + ".tmp.gch", path + ".gch")
        return True
    start = _perf()
    with ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        built = sum(pool.map(compile_one, jobs))
    print("pch: %d headers in %.1f s" % (built, _perf() - start), file=sys.stderr)
    return 0 if built == len(jobs) else 1
