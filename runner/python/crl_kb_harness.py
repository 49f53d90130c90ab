#!/usr/bin/env python3
"""crl's KernelBench harness: one side of an evaluation, inside the sandbox.

The worker (services/worker/kb_*.cc) starts this script in the same sandbox as
crl-runner, one process per side:

  crl_kb_harness.py serve     the reference or a candidate, driven over fds 3/4:
                              imports torch, may be told to bring its device up
                              (KB_WARM: a warm pool's process waiting for work),
                              then loads one side from the files the worker
                              sends (KB_LOAD) and serves it until it is closed
  crl_kb_harness.py build     imports a candidate with load_inline compiling into
                              a build directory (the CPU compile tier;
                              crl_kb_extensions.py); CUDA sources are built split
                              in two where they can be (crl_cu_split.py,
                              crl_split_build.py)
  crl_kb_harness.py pch       builds the precompiled torch headers (crl_pch.py;
                              trusted: no candidate code)

Frames are runner/wire.h's ("CRL1", type, length); a KB payload is a JSON
header (u64 length + bytes) followed by a vector of binary blobs (u64 count,
then u64 length + bytes each). Message types are in runner/protocol.h.

TRUST: once a candidate module is imported, everything in this process is the
candidate's to rewrite. Nothing reported here decides a verdict by itself:
outputs are compared by the worker against another process's, and the
worker's own clock checks the times. The checks made here (input mutation,
aliasing, threads, global flags) are the cheap first line; functions they rely
on are bound before the candidate is imported so casual monkeypatching of
torch or time does not reach them.
"""

import importlib.util
import json
import os
import struct
import sys
import threading
import time
import traceback

import crl_kb_extensions

MAGIC = 0x314C5243
REQUEST_FD, RESPONSE_FD = 3, 4
KB_LOAD, KB_LOADED, KB_CALL, KB_CALL_RESULT, KB_FETCH, KB_OUTPUTS = 20, 21, 22, 23, 24, 25
KB_WARM, KB_WARMED = 26, 27
SHUTDOWN = 7
CUDA_ERROR_EXIT = 3
TOOLCHAIN_READY = "crl-harness: toolchain ready"
TRIAL_BUFFER_MAX_BYTES = 256 << 20
# The dtypes the worker reads and writes in a stopped process (runner/dtype.cc's
# names); a sample with an input of another is timed unstaged.
STAGED_DTYPES = frozenset(("float32", "float64", "float16", "bfloat16", "int32", "int64", "int8", "uint8", "bool"))
MAX_CALLS_PER_SAMPLE = 4096  # the worker asks for far fewer (eval.proto)

# Bound before any candidate code runs.
_perf = time.perf_counter
_write = os.write
_read = os.read
_pack = struct.pack
_unpack = struct.unpack
_dumps = json.dumps
_loads = json.loads
_active_count = threading.active_count
_makedirs = os.makedirs
_join = os.path.join


# ----------------------------------------------------------------------------
# framing

def _read_exact(n):
    chunks, got = [], 0
    while got < n:
        b = _read(REQUEST_FD, min(n - got, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def read_message():
    head = _read_exact(16)
    if head is None:
        return None, None, None
    magic, mtype, length = _unpack("<IIQ", head)
    if magic != MAGIC:
        raise RuntimeError("bad frame magic from the worker")
    payload = _read_exact(length) if length else b""
    if mtype == SHUTDOWN:
        return mtype, {}, []
    (jlen,) = _unpack("<Q", payload[:8])
    header = _loads(payload[8:8 + jlen].decode())
    pos = 8 + jlen
    (count,) = _unpack("<Q", payload[pos:pos + 8])
    pos += 8
    blobs = []
    for _ in range(count):
        (blen,) = _unpack("<Q", payload[pos:pos + 8])
        pos += 8
        blobs.append(payload[pos:pos + blen])
        pos += blen
    return mtype, header, blobs


def _write_all(data):
    view = memoryview(data)
    while view:
        n = _write(RESPONSE_FD, view)
        view = view[n:]


def write_message(mtype, header, blobs=()):
    # Blobs go out as they are (outputs can be GBs): no joined copy.
    j = _dumps(header).encode()
    length = 8 + len(j) + 8 + sum(8 + len(b) for b in blobs)
    _write_all(_pack("<IIQ", MAGIC, mtype, length) + _pack("<Q", len(j)) + j + _pack("<Q", len(blobs)))
    for b in blobs:
        _write_all(_pack("<Q", len(b)))
        _write_all(b)


# ----------------------------------------------------------------------------
# files sent with a load

def unpack_files(role, header, blobs):
    """Writes the files the worker sent (the task, the candidate, its build
    manifest and extensions) under a new directory of this process's private
    /tmp (a process serves one load), and returns that directory. The worker
    chose the names; they are checked anyway, since nothing here may write
    outside the directory."""
    names = header.get("files", [])
    if not isinstance(names, list) or len(names) != len(blobs):
        raise RuntimeError("load: %d file name(s) for %d file(s)" % (len(names), len(blobs)))
    root = _join(os.environ.get("TMPDIR", "/tmp"), "crl-" + role)
    _makedirs(root)
    for name, data in zip(names, blobs):
        parts = str(name).split("/")
        if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise RuntimeError("load: refusing file name %r" % (name,))
        path = _join(root, *parts)
        _makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    return root


def _in(root, name):
    return _join(root, name) if name else ""


# ----------------------------------------------------------------------------
# modules

def load_module(path, name):
    """Imports `path` under a private name that is not left in sys.modules.
    A source Python cannot compile raises SyntaxError, whatever the reason
    (a NUL byte raises ValueError on Python < 3.12): a compile error, never a
    runtime one."""
    with open(path, "rb") as f:
        source = f.read()
    try:
        compile(source, path, "exec")
    except ValueError as e:
        raise SyntaxError("%s: %s" % (path, e)) from None
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


# torch.manual_seed before get_init_inputs() and before the model, unless the
# worker says otherwise (KbOptions::init_seed).
INIT_SEED = 42


def derived_seed(seed, i):
    """The seed of call i of a timed sample (call 0: the sample's own)."""
    if i == 0:
        return seed
    return (seed * 6364136223846793005 + i * 1442695040888963407) % (1 << 63)


def construct_for_build(module, exts):
    """Constructs the candidate's ModelNew once, as serving will (the same
    seed, on the CPU; the compile sandbox allows more memory than a side), so
    that load_inline calls made in its constructor are built too (CUDA-L1's
    kernels often build there). The arguments come from the candidate's own
    get_init_inputs(): the task is not part of a build. A constructor that
    fails here for any other reason than a failed build is judged when the
    candidate runs; without ModelNew or get_init_inputs() nothing is
    constructed."""
    import torch
    cls = getattr(module, "ModelNew", None)
    init_inputs = getattr(module, "get_init_inputs", None)
    if not isinstance(cls, type) or not callable(init_inputs):
        return
    try:
        torch.manual_seed(INIT_SEED)
        init = init_inputs()
        torch.manual_seed(INIT_SEED)
        cls(*init)
    except Exception:  # noqa: BLE001 — see above
        if exts.failure:
            raise


def build_main(candidate, out_dir, pch_dir, arch_list, split_cuda=True):
    os.environ.setdefault("MAX_JOBS", "4")  # host and device translation units at once
    if arch_list:
        os.environ["TORCH_CUDA_ARCH_LIST"] = arch_list
    exts = crl_kb_extensions.Extensions("build", out_dir=out_dir, pch_dir=pch_dir,
                                        arch_list=arch_list, split_cuda=split_cuda)
    exts.install()  # imports torch: a failure here is the machine's, not the candidate's
    # The worker counts a failed build without this line (logs keep their head,
    # and no candidate code has run yet) as an infrastructure error.
    print(TOOLCHAIN_READY, file=sys.stderr, flush=True)
    import_error = None
    try:
        module = load_module(candidate, "crl_candidate")
        construct_for_build(module, exts)
    except SyntaxError:
        traceback.print_exc()
        return 1
    except BaseException as e:  # noqa: BLE001 — reported, judged by the worker
        if exts.failure:
            print(exts.failure[-6000:], file=sys.stderr)
            return 1
        # Import-time failures unrelated to building show up again when the
        # candidate runs, where they become RUNTIME_ERROR.
        import_error = "".join(traceback.format_exception_only(type(e), e))[-2000:]
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump({"extensions": exts.built, "custom_kernel": bool(exts.built),
                   "import_error": import_error}, f)
    return 0


# ----------------------------------------------------------------------------
# serving one side

def _global_flags(torch):
    flags = {}

    def get(name, fn):
        try:
            flags[name] = fn()
        except Exception:  # noqa: BLE001 — absent in this torch version
            pass

    get("cudnn.benchmark", lambda: bool(torch.backends.cudnn.benchmark))
    get("cudnn.deterministic", lambda: bool(torch.backends.cudnn.deterministic))
    get("cudnn.allow_tf32", lambda: bool(torch.backends.cudnn.allow_tf32))
    get("cudnn.enabled", lambda: bool(torch.backends.cudnn.enabled))
    get("cuda.matmul.allow_tf32", lambda: bool(torch.backends.cuda.matmul.allow_tf32))
    get("cuda.matmul.allow_fp16_reduced_precision_reduction",
        lambda: bool(torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction))
    get("cuda.matmul.allow_bf16_reduced_precision_reduction",
        lambda: bool(torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction))
    get("float32_matmul_precision", torch.get_float32_matmul_precision)
    get("deterministic_algorithms", torch.are_deterministic_algorithms_enabled)
    get("num_threads", torch.get_num_threads)
    get("num_interop_threads", torch.get_num_interop_threads)
    get("default_dtype", lambda: str(torch.get_default_dtype()))
    get("grad_enabled", torch.is_grad_enabled)
    get("mkldnn.enabled", lambda: bool(torch.backends.mkldnn.enabled))
    return flags


def _storage_ptr(t):
    try:
        return t.untyped_storage().data_ptr()
    except AttributeError:
        return t.storage().data_ptr()


def _tensor_bytes(torch, t):
    # A copy the candidate's code cannot reach (a device tensor's host copy
    # is fresh memory; a host tensor is cloned), sent without another.
    t = t.detach()
    t = t.clone(memory_format=torch.contiguous_format) if t.device.type == "cpu" else t.contiguous().cpu()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return memoryview(t.numpy()).cast("B")


def flush_buffer(torch, device, l2_flush_bytes):
    """The buffer a timed call writes over to evict the L2 cache (CPU: the
    last-level cache), made once per process."""
    key = (str(device), int(l2_flush_bytes))
    if _flush_buffers.get("key") != key:
        _flush_buffers.clear()
        if device.type == "cuda":
            buf = torch.empty(int(l2_flush_bytes) or (256 << 20), dtype=torch.int8, device=device)
        else:
            buf = torch.empty((int(l2_flush_bytes) or (64 << 20)) // 4, dtype=torch.float32)
        _flush_buffers.update(key=key, buf=buf)
    return _flush_buffers["buf"]


_flush_buffers = {}


def warm(header):
    """Brings the device up before any load: the CUDA context, the flush
    buffer. A warm pool's process answers this, then waits for its load.
    Device "none" only answers (torch is imported by then): the pool waits
    for the import off the lane and brings the device up on it."""
    import torch
    if header.get("device", "cpu") == "none":
        return {"ok": True, "device_name": "", "torch_version": torch.__version__}
    device = torch.device(header.get("device", "cpu"))
    flush_buffer(torch, device, header.get("l2_flush_bytes", 0))
    name = "host"
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        name = torch.cuda.get_device_name(device)
    return {"ok": True, "device_name": name, "torch_version": torch.__version__}


class Side:
    def __init__(self, header, blobs):
        import torch
        self.torch = torch
        self.role = header["role"]
        self.device = torch.device(header.get("device", "cpu"))
        self.cuda = self.device.type == "cuda"
        self.init_seed = int(header.get("init_seed", INIT_SEED))
        root = unpack_files(self.role, header, blobs)
        # Bound now: the candidate may patch torch.cuda.* later.
        if self.cuda:
            self._sync = torch.cuda.synchronize
            self._Event = torch.cuda.Event
            self._elapsed = torch.cuda.Event.elapsed_time
            self._record = torch.cuda.Event.record
            self._CUDAGraph = torch.cuda.CUDAGraph
            self._capture_scope = torch.cuda.graph
            self._replay = torch.cuda.CUDAGraph.replay
            self._Stream = torch.cuda.Stream
            self._stream_scope = torch.cuda.stream
            self._current_stream = torch.cuda.current_stream
            self._set_stream = torch.cuda.set_stream
            self._copy = torch.Tensor.copy_
            self._no_grad = torch.no_grad
        else:
            self._sync = lambda: None
        # Seeding the generators the inputs come from, as torch.manual_seed
        # does for the CPU and CUDA (it also walks the other backends, which
        # costs ~70 us per call on the H100 machine, more than many forwards).
        self._seed_cpu = torch.default_generator.manual_seed
        self._seed_cuda = torch.cuda.manual_seed_all if self.cuda else None
        self._Generator, self._randint = torch.Generator, torch.randint
        self.flush_buf = flush_buffer(torch, self.device, header.get("l2_flush_bytes", 0))
        self.flags_before = _global_flags(torch)
        self.last_outputs = None
        self._graph = None  # (graph, its input buffers, its outputs) of the last capture
        self._staged = None  # a staged sample's inputs (stage() -> go())
        self._staged_inputs = None  # the last staged sample's, alive for the worker's reads
        self.trial_buffers = {}  # input index -> the tensor every trial's values go into
        self.task = load_module(_in(root, header["task"]), "crl_task")
        # Only the task's own functions make inputs; a candidate cannot reach
        # them by name (not in sys.modules) and cannot change them for the
        # reference, which runs in another process.
        self.get_inputs = self.task.get_inputs
        self.get_init_inputs = self.task.get_init_inputs
        self.custom_kernel = False
        if self.role == "candidate":
            manifest_path = _in(root, header.get("manifest", ""))
            manifest = {"extensions": []}
            if manifest_path:
                with open(manifest_path) as f:
                    manifest = json.load(f)
            exts = crl_kb_extensions.Extensions("serve", manifest=manifest)
            exts.manifest_dir = os.path.dirname(manifest_path)
            exts.install()
            module = load_module(_in(root, header["candidate"]), "crl_candidate")
            cls = getattr(module, "ModelNew", None)
            if cls is None:
                raise RuntimeError("the candidate defines no class ModelNew")
        else:
            exts = None
            cls = self.task.Model
        # As KernelBench and CUDA-L1 construct: the same seed before the init
        # inputs and before the model, on the CPU, then moved. Constructing
        # under the device would give parameters made with the device's
        # generator to one side and, to a candidate using the legacy
        # torch.Tensor(...) constructor (which ignores the device scope),
        # CPU-generated ones: different weights for the same code.
        torch.manual_seed(self.init_seed)
        init = [x.to(self.device) if isinstance(x, torch.Tensor) else x
                for x in self.get_init_inputs()]
        torch.manual_seed(self.init_seed)
        self.model = cls(*init)
        # A kernel of its own: an extension its load_inline calls (at import
        # or in the constructor) loaded; a call that failed and was caught is
        # a PyTorch program.
        self.custom_kernel = exts is not None and exts.kernels_loaded() > 0
        if isinstance(self.model, torch.nn.Module):
            self.model = self.model.to(self.device).eval()
        self.previous_outputs = []  # the last trial's output tensors, kept alive
        self._sync()

    def _device_scope(self):
        torch = self.torch
        if self.cuda and hasattr(torch, "device") and hasattr(torch.device, "__enter__"):
            return torch.device(self.device)
        import contextlib
        return contextlib.nullcontext()

    def make_inputs(self, seed, distribution="task"):
        return self.make_batch([seed], distribution)[0]

    def make_batch(self, seeds, distribution="task"):
        """The task's inputs for each seed (one list per seed), on the device."""
        torch = self.torch
        batch = []
        # For "normal", the task's uniform draws become normal ones (same
        # shapes, dtypes and devices), for both sides alike.
        rand, rand_like = torch.rand, torch.rand_like
        if distribution == "normal":
            torch.rand, torch.rand_like = torch.randn, torch.randn_like
        try:
            with self._device_scope():
                for seed in seeds:
                    self._seed_cpu(seed)
                    if self._seed_cuda is not None:
                        self._seed_cuda(seed)
                    batch.append([x.to(self.device) if isinstance(x, torch.Tensor) and x.device != self.device
                                  else x for x in self.get_inputs()])
        finally:
            torch.rand, torch.rand_like = rand, rand_like
        return batch

    def flags_changed(self):
        after = _global_flags(self.torch)
        return sorted("%s: %s -> %s" % (k, self.flags_before.get(k), v)
                      for k, v in after.items() if self.flags_before.get(k) != v)

    def forward(self, inputs):
        torch = self.torch
        with torch.no_grad():
            out = self.model(*inputs)
        return out

    def normalise(self, out):
        torch = self.torch
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        problems = []
        for i, t in enumerate(outs):
            if type(t) is not torch.Tensor:  # noqa: E721 — subclasses are the point
                problems.append("output %d is %s, not a plain torch.Tensor" % (i, type(t).__name__))
            elif t.layout != torch.strided:
                problems.append("output %d has layout %s" % (i, t.layout))
        return outs, problems

    def into_trial_buffers(self, inputs):
        """Copies each contiguous tensor input into one buffer kept across
        trials, so every trial's input sits at the same address with new
        values: an output cached by data_ptr goes stale by the second trial
        instead of depending on what the allocator happens to reuse. Inputs
        above TRIAL_BUFFER_MAX_BYTES stay where they are (a second copy could
        exhaust device memory; CUDA's caching allocator reuses such blocks)."""
        torch = self.torch
        placed = []
        for i, x in enumerate(inputs):
            if isinstance(x, torch.Tensor) and x.is_contiguous() and not x.requires_grad and \
                    x.numel() * x.element_size() <= TRIAL_BUFFER_MAX_BYTES:
                buf = self.trial_buffers.get(i)
                if buf is None or buf.shape != x.shape or buf.dtype != x.dtype or \
                        buf.device != x.device:
                    buf = self.trial_buffers[i] = torch.empty_like(x)
                buf.copy_(x)
                x = buf
            placed.append(x)
        return placed

    def call(self, header):
        torch = self.torch
        inputs = self.into_trial_buffers(
            self.make_inputs(int(header["seed"]), header.get("distribution", "task")))
        check_inputs = bool(header.get("check_inputs", False))
        before = None
        if check_inputs:
            before = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        input_ptrs = {_storage_ptr(x) for x in inputs if isinstance(x, torch.Tensor) and x.numel()}
        threads_before = _active_count()
        self._sync()
        t0 = _perf()
        out = self.forward(inputs)
        self._sync()
        host = _perf() - t0
        outs, problems = self.normalise(out)
        findings = {"problems": problems}
        if check_inputs:
            findings["inputs_modified"] = [
                i for i, (a, b) in enumerate(zip(before, inputs))
                if isinstance(a, torch.Tensor) and not torch.equal(a, b)]
            findings["aliases_input"] = any(
                type(t) is torch.Tensor and t.numel() and _storage_ptr(t) in input_ptrs for t in outs)
        # An output in the memory of the previous trial's output (still alive
        # here, so the allocator cannot have handed it out again): the code
        # returns one buffer it overwrites on every call. Outputs that are
        # inputs (same trial buffers every trial) are the aliasing check's.
        previous = {_storage_ptr(t) for t in self.previous_outputs} - input_ptrs
        findings["reuses_output"] = next(
            (i for i, t in enumerate(outs)
             if type(t) is torch.Tensor and t.numel() and _storage_ptr(t) in previous), -1)
        self.previous_outputs = [t for t in outs if type(t) is torch.Tensor and t.numel()]
        findings["python_threads_after"] = _active_count() - threads_before
        findings["global_flags"] = self.flags_changed()
        meta, blobs = [], []
        if not problems:
            for t in outs:
                meta.append({"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape)})
                blobs.append(_tensor_bytes(torch, t))
        probes = []
        if header.get("probes") and not problems and len(outs) == 1 and outs[0].is_floating_point():
            # (name, tensor, whether it is one value filling the output's
            # shape: sent as that one element, the worker repeats it)
            o = outs[0]
            probes.append(("zeros", torch.zeros(1, dtype=o.dtype), True))
            x0 = next((x for x in inputs if isinstance(x, torch.Tensor)), None)
            if x0 is not None and x0.shape == o.shape and x0.dtype == o.dtype:
                probes.append(("identity", x0, False))
            if x0 is not None and x0.is_floating_point() and x0.numel():
                probes.append(("mean", torch.full((1,), float(x0.double().mean()), dtype=o.dtype), True))
            for name, p, fill in probes:
                meta.append({"probe": name, "dtype": str(p.dtype).replace("torch.", ""),
                             "shape": list(o.shape), "fill": fill})
                blobs.append(_tensor_bytes(torch, p))
        return {"status": "ok", "outputs": meta, "host_seconds": host,
                "findings": findings}, blobs

    def stage(self, header):
        """Step one of a timed sample on the host (services/worker/formats/kernelbench/kb_format.cc,
        staged timing): the reference makes the sample's inputs from its seed;
        the candidate allocates empty tensors of the shapes the header gives
        (the reference's), which the worker fills while this process is
        stopped, just before it starts its own clock. Answers where each input
        tensor is (the worker reads and writes them from outside), or
        "unstaged" with the reason when an input is not a contiguous CPU
        tensor or a plain number (then the sample is timed as before)."""
        torch = self.torch
        calls = max(1, min(int(header.get("calls", 1)), MAX_CALLS_PER_SAMPLE))
        given = header.get("inputs")
        if given is None:
            batch = self.make_batch([derived_seed(int(header["seed"]), i) for i in range(calls)])
        else:
            batch = [[torch.empty(d["shape"], dtype=getattr(torch, d["dtype"])) if "dtype" in d else d["value"]
                      for d in call] for call in given]
        described = []
        for inputs in batch:
            call = []
            for x in inputs:
                if isinstance(x, torch.Tensor):
                    if x.device.type != "cpu" or x.layout != torch.strided or not x.is_contiguous() or \
                            x.requires_grad:
                        return {"status": "ok", "unstaged": "an input is not a contiguous CPU tensor"}, []
                    if str(x.dtype).replace("torch.", "") not in STAGED_DTYPES:
                        return {"status": "ok", "unstaged": "an input is a %s tensor" % x.dtype}, []
                    call.append({"dtype": str(x.dtype).replace("torch.", ""), "shape": list(x.shape),
                                 "address": x.data_ptr(), "bytes": x.numel() * x.element_size()})
                elif x is None or isinstance(x, (bool, int, float)):
                    call.append({"value": x})
                else:
                    return {"status": "ok", "unstaged": "an input is a %s" % type(x).__name__}, []
            described.append(call)
        self._staged = batch
        self.last_outputs = []
        if header.get("flush_l2", True):
            self.flush_buf.fill_(1.0)
        return {"status": "ok", "inputs": described}, []

    def go(self, header):
        """Step two: the staged sample's forward calls, at once (the worker's
        clock runs from just before this request to its answer). Answers where
        each call's outputs are, a contiguous copy where one is not (made
        here, on the clock); the worker reads them from outside while this
        process is stopped. Nothing here is believed: the times are the
        worker's, and what an address holds is what the worker compares."""
        torch = self.torch
        batch, self._staged = self._staged, None
        if batch is None:
            return {"status": "bad_request", "error": "no staged sample"}, []
        threads_before = _active_count()
        t0 = _perf()
        outs = [self.forward(inputs) for inputs in batch]
        t1 = _perf()
        described, kept = [], []
        for out in outs:
            tensors, problems = self.normalise(out)
            if problems:
                return {"status": "ok", "outputs": [], "findings": {"problems": problems}}, []
            call = []
            for t in tensors:
                c = t if t.is_contiguous() else t.contiguous()
                kept.append(c)
                call.append({"dtype": str(c.dtype).replace("torch.", ""), "shape": list(c.shape),
                             "address": c.data_ptr(), "bytes": c.numel() * c.element_size()})
            described.append(call)
        self.last_outputs = kept  # alive until the next sample
        self._staged_inputs = batch
        first = outs[0] if isinstance(outs[0], (list, tuple)) else [outs[0]]
        call_bytes = sum(x.numel() * x.element_size() for x in list(batch[0]) + list(first)
                         if isinstance(x, torch.Tensor))
        return {"status": "ok", "outputs": described, "host_seconds": t1 - t0, "call_bytes": call_bytes,
                "python_threads_after": _active_count() - threads_before}, []

    def timed(self, header):
        """One timed sample: `calls` back-to-back forward calls, each on its
        own inputs (made before the clock starts; the first from `seed`, the
        others from seeds derived from it the same way on both sides), with
        one L2 flush before them. Times are over the whole sample; the worker
        divides. All the calls' outputs are kept for FETCH.

        With `graph` (CUDA only), the sample is one replay of a CUDA graph of
        the calls: captured at the first such request (and again if `calls`
        changes) on that sample's inputs, which stay the graph's input
        buffers; later samples copy their inputs into them before the clock
        starts. A capture that fails is answered with `graph_error` and no
        times: the worker measures again with fresh processes, as launched."""
        torch = self.torch
        calls = max(1, min(int(header.get("calls", 1)), MAX_CALLS_PER_SAMPLE))
        seed = int(header["seed"])
        batch = self.make_batch([derived_seed(seed, i) for i in range(calls)])
        reply = {"status": "ok", "graph": False}
        threads_before = _active_count()
        if header.get("graph") and self.cuda:
            if self._graph is None or len(self._graph[1]) != calls:
                error = self._capture(batch, seed)
                if error:
                    reply["graph_error"] = error
                    return reply, []
            else:
                self._fill(batch)
        else:
            self._graph = None  # timed as launched from now on: free its memory
        if header.get("flush_l2", True):
            if self.cuda:
                self.flush_buf.zero_()
            else:
                self.flush_buf.fill_(1.0)
        self._sync()
        if self.cuda:
            start, end_stream, end_sync = self._Event(True), self._Event(True), self._Event(True)
            t0 = _perf()
            self._record(start)
            if self._graph is not None:
                self._replay(self._graph[0])
                outs = self._graph[2]
                batch = self._graph[1]
                reply["graph"] = True
            else:
                outs = [self.forward(inputs) for inputs in batch]
            self._record(end_stream)
            self._sync()
            self._record(end_sync)
            t1 = _perf()
            end_sync.synchronize()
            stream = self._elapsed(start, end_stream) / 1e3
            device = self._elapsed(start, end_sync) / 1e3
        else:
            t0 = _perf()
            outs = [self.forward(inputs) for inputs in batch]
            t1 = _perf()
            stream = device = t1 - t0
        self.last_outputs = outs
        # What one call holds until the sample ends (every call's inputs and
        # outputs stay alive): the reference's report bounds the batch size.
        first = outs[0] if isinstance(outs[0], (list, tuple)) else [outs[0]]
        call_bytes = sum(x.numel() * x.element_size() for x in list(batch[0]) + list(first)
                         if isinstance(x, torch.Tensor))
        reply.update({"stream_event_seconds": stream, "device_sync_seconds": device,
                      "host_seconds": t1 - t0, "call_bytes": call_bytes,
                      "python_threads_after": _active_count() - threads_before})
        return reply, []

    def _capture(self, batch, seed):
        """Captures one graph of a forward call on each of `batch`'s inputs
        (they become the graph's input buffers). "" when captured, else why
        not (the process may then be unusable: the worker discards it)."""
        self._graph = None  # a graph of another size goes first
        # Inputs that cannot be refilled in place (a nested list, an input
        # that needs grad, a broadcast view, a shape that changes with the
        # seed) are found now, before any sample is timed.
        why = self._refill_problem(batch, seed)
        if why:
            return "capture skipped: " + why
        home = self._current_stream(self.device)
        stream = self._Stream(self.device)
        stream.wait_stream(home)
        graph = self._CUDAGraph()
        try:
            with self._stream_scope(stream):
                self.forward(batch[0])  # lazy initialisation happens outside the capture
            home.wait_stream(stream)
            self._sync()
            with self._capture_scope(graph, stream=stream):
                outs = [self.forward(inputs) for inputs in batch]
        except Exception as e:  # noqa: BLE001 — the candidate's code may raise anything here
            why = ("capture failed: %s: %s" % (type(e).__name__, e)).splitlines()[0][:400]
            try:
                # torch's scope does not restore the stream when ending the
                # capture raises; a sticky CUDA error shows in the sync.
                self._set_stream(home)
                self._sync()
            except Exception as after:  # noqa: BLE001
                why += "; afterwards: " + str(after).splitlines()[0][:200]
            return why
        self._graph = (graph, batch, outs)
        return self._replay_problem(batch, seed)

    def _replay_problem(self, batch, seed):
        """Why replaying the captured graph does not compute what the calls
        compute ("" when it does): a launch the capture did not record (a
        kernel on the legacy default stream, a graph of the candidate's own)
        leaves a replay's outputs stale. Replayed on other inputs and compared
        with the calls run as launched on those inputs; a graph that differs
        is dropped and the sample is timed as launched (timing must not change
        what is timed). Decides only how to time, never a verdict."""
        torch = self.torch
        try:
            other = self.make_batch([derived_seed(seed ^ 0x3C3C, i) for i in range(len(batch))])
            self._fill(other)
            self._replay(self._graph[0])
            self._sync()
            eager = [self.forward(inputs) for inputs in other]
            self._sync()
            for got, want in zip(self._graph[2], eager):
                got = list(got) if isinstance(got, (tuple, list)) else [got]
                want = list(want) if isinstance(want, (tuple, list)) else [want]
                for g, w in zip(got, want):
                    if isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor) and \
                            not torch.allclose(g.float(), w.float(), rtol=1e-3, atol=1e-4, equal_nan=True):
                        self._graph = None
                        return "capture does not reproduce the calls (a launch outside the captured stream?)"
            # The input buffers are `batch`'s tensors, now holding the other
            # inputs: the sample's own go back before it is timed.
            self._fill(self.make_batch([derived_seed(seed, i) for i in range(len(batch))]))
        except Exception as e:  # noqa: BLE001 — the candidate's code may raise anything here
            self._graph = None
            return ("replay check failed: %s: %s" % (type(e).__name__, e)).splitlines()[0][:400]
        return ""

    def _refill_problem(self, batch, seed):
        """Why `batch`'s inputs could not be refilled in place with another
        sample's values ("" when they can): compared with a second batch."""
        torch = self.torch
        try:
            other = self.make_batch([derived_seed(seed ^ 0x5A5A, i) for i in range(len(batch))])
            for held, fresh in zip(batch, other):
                for a, b in zip(held, fresh):
                    if isinstance(a, (list, tuple, dict)):
                        return "an input is a %s (its tensors cannot be refilled in place)" % type(a).__name__
                    if isinstance(a, torch.Tensor) and (
                            not isinstance(b, torch.Tensor) or a.requires_grad or a.shape != b.shape or
                            a.dtype != b.dtype or a.stride() != b.stride() or
                            (a.numel() > 1 and 0 in a.stride())):
                        return "input %s %s cannot be refilled in place across samples" % (a.dtype, list(a.shape))
        except Exception as e:  # noqa: BLE001 — the task's get_inputs may raise anything
            return "inputs could not be checked: " + ((str(e).splitlines() or [type(e).__name__])[0][:200])
        return ""

    def _fill(self, batch):
        """Copies a sample's inputs into the graph's input buffers (checked
        to be refillable at capture)."""
        torch = self.torch
        with self._no_grad():
            for held, fresh in zip(self._graph[1], batch):
                for a, b in zip(held, fresh):
                    if isinstance(a, torch.Tensor):
                        self._copy(a, b)

    def fetch(self, header):
        if not self.last_outputs:
            return {"status": "bad_request", "error": "no timed call to fetch"}, []
        call = int(header.get("call", len(self.last_outputs) - 1))
        if not 0 <= call < len(self.last_outputs):
            return {"status": "bad_request", "error": "no call %d in the last sample" % call}, []
        outs, problems = self.normalise(self.last_outputs[call])
        if problems:
            return {"status": "ok", "outputs": [], "findings": {"problems": problems}}, []
        seed, elements = int(header.get("sample_seed", 0)), int(header.get("sample_elements", 0))
        meta, blobs = [], []
        for i, t in enumerate(outs):
            meta.append({"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape)})
            picked = self.sample(t, seed, i, elements)
            if picked is not None:
                meta[-1].update(shape=[picked.numel()], sampled_from=list(t.shape))
                t = picked
            blobs.append(_tensor_bytes(self.torch, t))
        return {"status": "ok", "outputs": meta}, blobs

    def sample(self, t, seed, index, elements):
        """`elements` of output `index`'s values at positions drawn from
        `seed` on its device (the same positions in both sides' processes),
        or None when it has no more than that (sent whole)."""
        if elements <= 0 or t.numel() <= elements:
            return None
        g = self._Generator(device=t.device)
        g.manual_seed(derived_seed(seed, index))
        at = self._randint(t.numel(), (elements,), generator=g, device=t.device)
        return t.reshape(-1).index_select(0, at)


def _error_reply(e):
    text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    cuda = "CUDA error" in text or "cudaError" in text or "CUBLAS_STATUS" in text
    return {"status": "cuda_error" if cuda else "candidate_error", "error": text[-4000:]}


def serve():
    import torch  # noqa: F401 — every side needs it; a warm process has it ready
    import torch.utils.cpp_extension  # noqa: F401
    side, loaded = None, False
    while True:
        mtype, header, blobs = read_message()
        if mtype is None or mtype == SHUTDOWN:
            return 0
        if mtype == KB_WARM:
            try:
                reply = warm(header)
            except BaseException as e:  # noqa: BLE001 — no candidate code here: the machine's
                reply = {"ok": False, "error": _error_reply(e)["error"]}
            write_message(KB_WARMED, reply)
            continue
        if mtype == KB_LOAD:
            if loaded:
                # One side per process: nothing of one load may meet another.
                write_message(KB_LOADED, {"ok": False, "error": "this process already served a load"})
                continue
            loaded = True
            try:
                side = Side(header, blobs)
                reply = {"ok": True, "device_name": _device_name(side), "custom_kernel":
                         side.custom_kernel, "global_flags": side.flags_changed(),
                         "torch_version": side.torch.__version__}
            except BaseException as e:  # noqa: BLE001 — a candidate may raise anything
                reply = {"ok": False, "error": _error_reply(e)["error"]}
            write_message(KB_LOADED, reply)
            continue
        if side is None:
            write_message(KB_CALL_RESULT, {"status": "load_failed", "error": "no successful load"})
            continue
        reply_type = KB_OUTPUTS if mtype == KB_FETCH else KB_CALL_RESULT
        try:
            if mtype == KB_FETCH:
                reply, blobs = side.fetch(header)
            elif header.get("stage"):
                reply, blobs = side.stage(header)
            elif header.get("go"):
                reply, blobs = side.go(header)
            elif header.get("timed"):
                reply, blobs = side.timed(header)
            else:
                reply, blobs = side.call(header)
        except BaseException as e:  # noqa: BLE001
            reply, blobs = _error_reply(e), []
        reply["call_id"] = header.get("call_id", 0)
        write_message(reply_type, reply, blobs)
        if reply.get("status") == "cuda_error":
            os._exit(CUDA_ERROR_EXIT)  # a sticky CUDA error poisons the context


def _device_name(side):
    if side.cuda:
        return side.torch.cuda.get_device_name(side.device)
    return "host"


def main(argv):
    if len(argv) >= 2 and argv[1] == "serve":
        return serve()
    if len(argv) >= 4 and argv[1] == "build":
        pch_dir = argv[4] if len(argv) > 4 else ""
        arch = argv[5] if len(argv) > 5 else ""
        split_cuda = (argv[6] if len(argv) > 6 else "split") == "split"
        return build_main(argv[2], argv[3], pch_dir, arch, split_cuda)
    if len(argv) >= 3 and argv[1] == "pch":
        import crl_pch
        return crl_pch.build_pch(argv[2])
    print("usage: crl_kb_harness.py serve | build CANDIDATE OUT [PCH_DIR [ARCH_LIST [split|whole]]]"
          " | pch OUT",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
