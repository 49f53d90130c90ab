"""load_inline inside crl's KernelBench harness (crl_kb_harness.py): while a
candidate runs, torch.utils.cpp_extension.load_inline is Extensions'.

In the build step (`crl_kb_harness.py build`, the CPU compile tier) it
compiles into the build directory, with a precompiled header
(crl_pch.py) and CUDA sources split in two where they can be
(crl_cu_split.py, crl_split_build.py), and records each build in the
manifest. When a side is served it imports what the build made, for the same
request only, and never compiles.

Imported before any candidate code, like the harness: the functions bound
here are the ones it relies on.
"""
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import time
import traceback

_perf = time.perf_counter
_listdir = os.listdir


def _ext_signature(cpp_sources, cuda_sources, functions, extra_cflags, extra_cuda_cflags,
                   extra_ldflags, extra_include_paths, with_cuda, is_python_module):
    """What a load_inline call asks to be built, hashed: serve mode loads a
    build only for the same request."""
    request = [cpp_sources, cuda_sources, functions, extra_cflags, extra_cuda_cflags,
               extra_ldflags, extra_include_paths, with_cuda, bool(is_python_module)]
    return hashlib.sha256(json.dumps(request, sort_keys=True, default=repr).encode()).hexdigest()


def _ext_key(index, name):
    return "%d_%s" % (index, "".join(c if c.isalnum() or c == "_" else "_" for c in str(name)))


class Extensions:
    """Replaces torch.utils.cpp_extension.load_inline while a candidate runs.

    build mode: compiles with the real load_inline into the build directory,
    with a precompiled header and the lane's CUDA architecture.
    serve mode: imports what the build made; never compiles.
    """

    def __init__(self, mode, out_dir=None, manifest=None, pch_dir=None, arch_list=None,
                 split_cuda=False):
        import torch.utils.cpp_extension as cpp_ext
        self.cpp_ext = cpp_ext
        self.real_load_inline = cpp_ext.load_inline
        self.mode = mode
        self.out_dir = out_dir
        self.manifest = manifest or {"extensions": []}
        self.pch_dir = pch_dir
        self.arch_list = arch_list
        self.calls = 0
        self.built = []
        self.failure = None
        # Within one process, a call asking for what an earlier call asked
        # for (same sources and flags) gets that call's module and .so:
        # torch would find it built in its cache; a model may build the
        # same kernel once per layer (CUDA-L1's 3/45: 18 times).
        self.by_signature = {}
        self.loaded = {}  # serve: .so path -> module
        # build: split CUDA sources in two (crl_cu_split.py) unless told not to
        self.split_cuda = split_cuda

    def _build_split(self, kwargs, ext_dir, user_cflags):
        """(module, report) of a split build (crl_split_build.py), or (None,
        report) when the source is built whole; the report says which and
        why, with the phase times. Raises RuntimeError, as load_inline would,
        when main.cpp does not compile (a whole build would fail the same
        way)."""
        import crl_cu_split
        import crl_pch
        import crl_split_build
        try:
            so, module_name, times = crl_split_build.build(
                self.real_load_inline, kwargs, ext_dir, user_cflags,
                lambda flags, header: crl_pch.pch_for(self.pch_dir, flags, header),
                crl_split_build.fake_ninja_dir(self.out_dir))
            module = _load_extension(module_name, so, kwargs["is_python_module"])
            return module, {"split": True, "phases": times}
        except crl_cu_split.Refused as e:
            return None, {"split": False, "refused": str(e)[:300]}
        except crl_split_build.MainFailed as e:
            raise RuntimeError("Error building extension '%s': %s" % (kwargs["name"], e)) from None
        except Exception as e:  # noqa: BLE001 — the whole build decides
            # One line: the compile log keeps its head, which should be the
            # whole build's errors when that fails too.
            text = str(e)
            first = next((line for line in text.splitlines() if "error" in line), text.split("\n", 1)[0])
            step = text.split(" failed", 1)[0] if " failed" in text[:40] else "split"
            print("crl: the split build failed (%s: %s), building whole" % (step, first.strip()[:240]),
                  file=sys.stderr)
            return None, {"split": False, "failed": text[-600:]}

    def install(self):
        import torch.utils.cpp_extension as cpp_ext
        cpp_ext.load_inline = self.load_inline
        cpp_ext.load = self.load

    def kernels_loaded(self):
        """How many built extensions this process has loaded (serve mode).
        Calls to load_inline are not kernels: a candidate can catch the
        error of a call that was never built and fall back to PyTorch."""
        return len(self.loaded)

    def load(self, *args, **kwargs):
        raise RuntimeError("crl: torch.utils.cpp_extension.load(sources=...) is not supported; "
                           "a candidate is one file: use load_inline")

    def load_inline(self, name, cpp_sources, cuda_sources=None, functions=None,
                    extra_cflags=None, extra_cuda_cflags=None, extra_ldflags=None,
                    extra_include_paths=None, build_directory=None, verbose=False,
                    with_cuda=None, is_python_module=True, with_pytorch_error_handling=True,
                    keep_intermediates=True, **unused):
        index = self.calls
        self.calls += 1
        key = _ext_key(index, name)
        signature = _ext_signature(cpp_sources, cuda_sources, functions, extra_cflags,
                                   extra_cuda_cflags, extra_ldflags, extra_include_paths,
                                   with_cuda, is_python_module)
        if self.mode == "build":
            if self.failure is not None:
                # The file is a compile error already; building again would
                # only cost the time of another failed build.
                raise RuntimeError("crl: load_inline(%r) (call #%d) not built: an earlier load_inline of "
                                   "this file failed to build" % (name, index))
            earlier = self.by_signature.get(signature)
            if earlier is not None:
                entry, module = earlier
                self.built.append(dict(entry, key=key, name=name, seconds=0.0))
                return module
            # Absolute: torch's extension versioning hashes the folder's name,
            # and the split build's probe and a whole build must agree.
            ext_dir = os.path.abspath(os.path.join(self.out_dir, "ext", key))
            os.makedirs(ext_dir, exist_ok=True)
            user_cflags = list(extra_cflags or [])
            import crl_pch
            pch = crl_pch.pch_for(self.pch_dir, user_cflags)
            cflags = (["-include", pch, "-Winvalid-pch"] if pch else []) + user_cflags
            start = _perf()
            kwargs = dict(name=name, cpp_sources=cpp_sources, cuda_sources=cuda_sources,
                          functions=functions, extra_cflags=cflags,
                          extra_cuda_cflags=extra_cuda_cflags, extra_ldflags=extra_ldflags,
                          extra_include_paths=extra_include_paths, verbose=verbose,
                          with_cuda=with_cuda, is_python_module=is_python_module,
                          with_pytorch_error_handling=with_pytorch_error_handling)
            module, split = None, None
            try:
                if cuda_sources and self.split_cuda:
                    module, split = self._build_split(kwargs, ext_dir, user_cflags)
                if module is None:
                    module = self.real_load_inline(build_directory=ext_dir, **kwargs)
            except BaseException:
                # A failed build (or a built module that will not import) is
                # the candidate's compile error, whatever the module does next.
                self.failure = traceback.format_exc()
                raise
            so = [f for f in _listdir(ext_dir) if f.endswith(".so")]
            entry = {"key": key, "name": name, "so": os.path.join("ext", key, so[0]),
                     "signature": signature,
                     "python_module": bool(is_python_module), "pch": bool(pch),
                     "cuda": bool(cuda_sources), "seconds": _perf() - start}
            module_name = _built_module_name(ext_dir)
            if module_name:
                entry["module"] = module_name  # torch may have versioned the name
            if split is not None:
                entry["split"] = split
                print("crl-build: load_inline(%r) %s" % (name, _describe_split(split, entry["seconds"])),
                      file=sys.stderr, flush=True)
            self.built.append(entry)
            self.by_signature[signature] = (entry, module)
            return module
        for ext in self.manifest.get("extensions", []):
            if ext["key"] == key:
                if ext.get("signature") != signature:
                    raise RuntimeError(
                        "crl: load_inline(%r) (call #%d) asks for other sources or flags than the "
                        "compile step built; builds must not depend on run-time state" % (name, index))
                path = os.path.join(self.manifest_dir, ext["so"])
                if path in self.loaded:
                    return self.loaded[path]
                self.loaded[path] = _load_extension(ext.get("module", name), path,
                                                    ext.get("python_module", True))
                return self.loaded[path]
        raise RuntimeError("crl: load_inline(%r) was not built by the compile step (call #%d); "
                           "builds must not depend on run-time state%s" % (
                               name, index, "; the build step's import failed: " +
                               self.manifest["import_error"] if self.manifest.get("import_error")
                               else ""))


def _built_module_name(ext_dir):
    """TORCH_EXTENSION_NAME of the build in ext_dir (name, or name_vN when
    torch versioned it), from its build.ninja; None without one."""
    import crl_split_build
    path = os.path.join(ext_dir, "build.ninja")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return crl_split_build.Ninja(f.read()).extension_name()


def _describe_split(split, seconds):
    if split["split"]:
        p = split["phases"]
        return ("built split in %.1f s (host %.1f s with %s, device %.1f s, main.cpp %.1f s with %s, "
                "link %.1f s)" % (seconds, p.get("host", 0), p.get("host_header", "?"), p.get("device", 0),
                                  p.get("main", 0), p.get("main_header", "?"), p.get("link", 0)))
    why = split.get("refused") or "the split failed to build: " + split.get("failed", "?")[-200:]
    return "built whole in %.1f s (%s)" % (seconds, why)


def _load_extension(module_name, path, python_module):
    """Imports a built extension as load_inline would return it."""
    if not python_module:
        import torch
        torch.ops.load_library(path)
        return path
    loader = importlib.machinery.ExtensionFileLoader(module_name, path)
    spec = importlib.util.spec_from_file_location(module_name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
