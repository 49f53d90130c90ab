"""The KernelBench harness's helpers that run without a GPU: which inputs a
captured graph's buffers can be refilled from (anything else is timed as
launched, with the reason), that a refill writes in place, the warm-up
steps of a warm pool's process (device "none" only answers; a device
brings its flush buffer up), and a timed check's fetch of a large output
at sampled positions (the same in two processes).
Run by ctest with Debian's python3-torch; the capture itself is covered by
the GPU test binary."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runner", "python"))
import crl_kb_harness as harness  # noqa: E402


class ReachedCapture(Exception):
    pass


def side_for(get_inputs):
    s = harness.Side.__new__(harness.Side)  # no task files, no device: only what the helpers use
    s.torch, s.device, s.cuda = torch, torch.device("cpu"), False
    s._seed_cpu, s._seed_cuda = torch.default_generator.manual_seed, None
    s.get_inputs = get_inputs
    s._copy, s._no_grad = torch.Tensor.copy_, torch.no_grad

    def stop(*args, **kwargs):
        raise ReachedCapture()
    s._current_stream = s._Stream = stop
    s._graph = None
    s._Generator, s._randint = torch.Generator, torch.randint
    return s


def fetched(side, seed, elements):
    header, blobs = side.fetch({"call": 0, "sample_seed": seed, "sample_elements": elements})
    return header["outputs"], [torch.frombuffer(bytearray(b), dtype=torch.float32) for b in blobs]


def capture_outcome(get_inputs):
    s = side_for(get_inputs)
    batch = s.make_batch([harness.derived_seed(7, i) for i in range(3)])
    try:
        return s._capture(batch, 7)
    except ReachedCapture:
        return "capture"


calls = {"n": 0}


def flaky():
    """Inputs for the sample's batch (3 calls), then raises."""
    calls["n"] += 1
    if calls["n"] > 3:
        raise ValueError("no inputs today")
    return [torch.rand(3)]


def main():
    failures = []

    def expect(name, got, want_prefix):
        ok = got.startswith(want_prefix)
        print("%-9s %s -> %s" % ("ok" if ok else "FAILED", name, got))
        if not ok:
            failures.append(name)

    expect("plain", capture_outcome(lambda: [torch.rand(4, 5), 3]), "capture")
    expect("nested", capture_outcome(lambda: [[torch.rand(3)], torch.rand(2)]),
           "capture skipped: an input is a list")
    expect("grad", capture_outcome(lambda: [torch.rand(3, requires_grad=True)]),
           "capture skipped: input torch.float32 [3] cannot be refilled")
    expect("expanded", capture_outcome(lambda: [torch.rand(1, 4).expand(3, 4)]),
           "capture skipped: input torch.float32 [3, 4] cannot be refilled")
    expect("shape", capture_outcome(lambda: [torch.zeros(2 + int(torch.randint(0, 1000, (1,))))]),
           "capture skipped: input torch.float32")
    expect("raises", capture_outcome(flaky), "capture skipped: inputs could not be checked: no inputs today")

    s = side_for(lambda: [torch.rand(4, 5), 3])
    held = s.make_batch([harness.derived_seed(7, i) for i in range(3)])
    fresh = s.make_batch([harness.derived_seed(8, i) for i in range(3)])
    s._graph = (None, held, None)
    address = held[0][0].data_ptr()
    s._fill(fresh)
    same = all(torch.equal(a[0], b[0]) for a, b in zip(held, fresh))
    expect("refill", "in place" if same and held[0][0].data_ptr() == address else "not in place", "in place")

    harness._flush_buffers.clear()
    ready = harness.warm({"device": "none", "l2_flush_bytes": 1 << 20})
    expect("ready", "ok, no buffer" if ready["ok"] and not harness._flush_buffers else repr(ready), "ok, no buffer")
    up = harness.warm({"device": "cpu", "l2_flush_bytes": 1 << 20})
    buf = harness._flush_buffers.get("buf")
    expect("warm", "ok, %d bytes" % (buf.numel() * 4) if up["ok"] and buf is not None else repr(up), "ok, 1048576 bytes")

    # Two sides (two processes in the worker: here two objects) with the
    # same outputs sample the same positions; a differing element is seen
    # when sampled; an output no larger than the sample comes whole.
    out = torch.arange(4000, dtype=torch.float32).reshape(40, 100)
    a, b = side_for(None), side_for(None)
    a.last_outputs, b.last_outputs = [(out, torch.ones(8))], [(out.clone(), torch.ones(8))]
    meta_a, got_a = fetched(a, 99, 64)
    meta_b, got_b = fetched(b, 99, 64)
    expect("sampled", "%s %s, whole %s" % (meta_a[0].get("shape"), meta_a[0].get("sampled_from"), meta_a[1]),
           "[64] [40, 100], whole {'dtype': 'float32', 'shape': [8]}")
    positions = got_a[0].long()  # the values are their own flat positions
    expect("positions", "same" if torch.equal(got_a[0], got_b[0]) and len(set(positions.tolist())) > 32 and
           torch.equal(out.reshape(-1)[positions], got_a[0]) else "differ", "same")
    _, other = fetched(a, 100, 64)
    expect("seeded", "differ" if not torch.equal(other[0], got_a[0]) else "same", "differ")
    wrong = out.clone().reshape(-1)
    wrong[positions[0]] = -1
    b.last_outputs = [(wrong.reshape(40, 100), torch.ones(8))]
    _, got_b = fetched(b, 99, 64)
    expect("mismatch", "seen" if not torch.equal(got_a[0], got_b[0]) else "missed", "seen")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
