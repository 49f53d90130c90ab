"""The KernelBench harness's build step (crl_kb_extensions.py) without a compiler: load_inline
calls that ask for what an earlier call of the same file asked for reuse
its build (a model may build one kernel once per layer), and after a failed
build no call builds again. torch's real load_inline is replaced by a fake
that counts builds and writes a stand-in .so. Run by ctest with Debian's
python3-torch; real builds are covered by crl_kb_tests."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runner", "python"))
import crl_kb_extensions  # noqa: E402
from checks import Checks  # noqa: E402


def extensions(out_dir, fail=False):
    exts = crl_kb_extensions.Extensions("build", out_dir=out_dir)
    builds = []

    def fake_load_inline(name, build_directory, **kwargs):
        builds.append((name, kwargs["cpp_sources"]))
        if fail:
            raise RuntimeError("Error building extension '%s'" % name)
        with open(os.path.join(build_directory, name + ".so"), "w") as f:
            f.write("stand-in")
        return object()
    exts.real_load_inline = fake_load_inline
    return exts, builds


def main():
    checks = Checks()
    expect = checks.expect

    with tempfile.TemporaryDirectory() as out:
        exts, builds = extensions(out)
        a = exts.load_inline("fused", cpp_sources="int f() { return 1; }", functions=["f"])
        b = exts.load_inline("fused", cpp_sources="int f() { return 1; }", functions=["f"])
        c = exts.load_inline("fused", cpp_sources="int f() { return 2; }", functions=["f"])
        expect("three calls, two builds (the repeat reuses the first)", len(builds) == 2)
        expect("the repeat returns the first call's module", a is b and c is not a)
        expect("every call has its manifest entry", [e["key"] for e in exts.built] ==
               [crl_kb_extensions._ext_key(i, "fused") for i in range(3)])
        expect("the repeat's entry names the first build's .so",
               exts.built[1]["so"] == exts.built[0]["so"] and exts.built[2]["so"] != exts.built[0]["so"])
        expect("... with the same signature", exts.built[1]["signature"] == exts.built[0]["signature"])

    with tempfile.TemporaryDirectory() as out:
        exts, builds = extensions(out, fail=True)
        raised = []
        for _ in range(3):
            try:
                exts.load_inline("broken", cpp_sources="int f() {", functions=["f"])
            except RuntimeError as e:
                raised.append(str(e))
        expect("a failed build is tried once", len(builds) == 1)
        expect("every call raises", len(raised) == 3)
        expect("later calls say an earlier build failed", "earlier load_inline" in raised[1])
        expect("the failure is kept for the compile log", exts.failure is not None and
               "Error building extension" in exts.failure)
    pch_jobs(expect)
    # serve: a kernel of its own is an extension loaded, not a call made. A
    # call the compile step never built raises, and a candidate that catches
    # it runs as PyTorch.
    args = dict(cpp_sources="", cuda_sources="__global__ void k() {}", functions=["k"])
    unbuilt = crl_kb_extensions.Extensions("serve", manifest={"extensions": []})
    try:
        unbuilt.load_inline("never_built", **args)
        raised = False
    except RuntimeError:
        raised = True
    expect("serve: an unbuilt call raises", raised)
    expect("serve: ... and loads no kernel", unbuilt.calls == 1 and unbuilt.kernels_loaded() == 0)
    with tempfile.TemporaryDirectory() as out:
        exts, _ = extensions(out)
        exts.load_inline("built", **args)
        served = crl_kb_extensions.Extensions("serve", manifest={"extensions": exts.built})
        served.manifest_dir = out
        real_load = crl_kb_extensions._load_extension
        crl_kb_extensions._load_extension = lambda module, path, python_module: object()
        try:
            served.load_inline("built", **args)
        finally:
            crl_kb_extensions._load_extension = real_load
        expect("serve: a built call loads its kernel", served.kernels_loaded() == 1)
    return checks.exit_code()


def pch_jobs(expect):
    """The precompiled headers' flags come from torch's own build.ninja, for
    main.cpp and, where CUDA builds, for split host parts, also where no GPU
    is visible (the compile sandbox shows none; torch then needs an
    architecture list to write build.ninja at all)."""
    import crl_pch
    import crl_split_build
    import torch.utils.cpp_extension as cpp_ext
    saved = os.environ.pop("TORCH_CUDA_ARCH_LIST", None)
    try:
        with tempfile.TemporaryDirectory() as d:
            jobs = crl_pch._pch_jobs(cpp_ext, d, crl_split_build.fake_ninja_dir(d))
        for header in (crl_pch.EXTENSION_H, crl_pch.PYTHON_H):
            expect("pch: %s for main.cpp at each flag set" % header,
                   [k for h, k, f in jobs if h == header and "-fPIC" in f and
                    not any(x.startswith("-D__CUDA_NO_") for x in k)] == list(crl_pch.PCH_FLAG_SETS))
        if cpp_ext.CUDA_HOME is None:
            print("skip   pch: host-part headers (no CUDA here)")
        else:
            host = sorted((h, " ".join(k)) for h, k, f in jobs if "-D__CUDA_NO_HALF_OPERATORS__" in k)
            expect("pch: torch/types.h, torch/extension.h and torch/python.h for host parts, with "
                   "torch's CUDA defines, at each flag set, with no GPU visible: %s" % host,
                   all([h for h, _ in host].count(header) == len(crl_pch.PCH_FLAG_SETS)
                       for header in (crl_pch.TYPES_H, crl_pch.EXTENSION_H, crl_pch.PYTHON_H)))
            expect("pch: the probe leaves TORCH_CUDA_ARCH_LIST as it was",
                   "TORCH_CUDA_ARCH_LIST" not in os.environ)
    finally:
        if saved is not None:
            os.environ["TORCH_CUDA_ARCH_LIST"] = saved


if __name__ == "__main__":
    sys.exit(main())
