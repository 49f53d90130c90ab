"""The split of a load_inline CUDA source into a host part (g++) and a device
part (nvcc without torch's headers), and the reading of torch's build.ninja,
without a compiler: what goes where, how launches are rewritten, what is
refused. Compiled and run on the GPU machine by crl_gpu_tests and
scripts/gpu-kb.sh (docs/kernelbench.md)."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runner", "python"))
import crl_cu_split as S  # noqa: E402
import crl_split_build as B  # noqa: E402
from checks import Checks  # noqa: E402

PLAIN = r'''
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#define BLOCK 256
#define CHECK_INPUT(x) TORCH_CHECK(x.is_cuda(), #x " must be CUDA")
struct Params { int n; float scale; };
constexpr int kUnroll = 4;
__device__ __forceinline__ float twice(float v) { return 2.0f * v; }
__global__ void __launch_bounds__(BLOCK) scale_kernel(const float* __restrict__ x, float* y, Params p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) y[i] = twice(x[i]) * p.scale;   // "<<<" in a comment and a string: "<<<"
}
static int blocks_for(int n) { return (n + BLOCK - 1) / BLOCK; }
torch::Tensor scale(torch::Tensor x, double s) {
    CHECK_INPUT(x);
    auto y = torch::empty_like(x);
    Params p{(int)x.numel(), (float)s};
    scale_kernel<<<blocks_for(p.n), BLOCK, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), p);
    return y;
}
'''

TEMPLATED = r'''
#include <torch/extension.h>
template <typename scalar_t, int TILE = 32>
__global__ void add_kernel(const scalar_t* a, const scalar_t* b, scalar_t* out, int n) {
    int i = blockIdx.x * TILE + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    auto out = torch::empty_like(a);
    int n = a.numel();
    AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "add", ([&] {
        add_kernel<scalar_t><<<(n + 31) / 32, 32>>>(a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(),
                                                   out.data_ptr<scalar_t>(), n);
    }));
    return out;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("add", &add, "add"); }
'''

MAIN_CPP = """#include <torch/extension.h>
torch::Tensor add(torch::Tensor a, torch::Tensor b);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
m.def("add", torch::wrap_pybind_function(add), "add");
}
"""


def read(*path):
    with open(os.path.join(*path)) as f:
        return f.read()


NINJA = r'''ninja_required_version = 1.3
cxx = c++
nvcc = /usr/local/cuda/bin/nvcc

cflags = -DTORCH_EXTENSION_NAME=ext -isystem /torch/include -fPIC -std=c++17 -include /pch/h.h -Winvalid-pch
post_cflags = 
cuda_cflags = -DTORCH_EXTENSION_NAME=ext -D__CUDA_NO_HALF_OPERATORS__ --expt-relaxed-constexpr --compiler-options '-fPIC' -O3
cuda_post_cflags = 
ldflags = -shared -L/torch/lib -lc10 -lcudart

rule compile
  command = $cxx -MMD -MF $out.d $cflags -c $in -o $out $post_cflags
  depfile = $out.d
  deps = gcc

rule cuda_compile
  command = $nvcc  $cuda_cflags -c $in -o $out $cuda_post_cflags

rule link
  command = $cxx $in $ldflags -o $out

build main.o: compile /b/main.cpp
build cuda.cuda.o: cuda_compile /b/cuda.cu

build ext.so: link main.o cuda.cuda.o

default ext.so
'''


def refused(src):
    try:
        S.split(src)
    except S.Refused as e:
        return str(e)
    return None


def main():
    checks = Checks()
    expect = checks.expect

    s = S.split(PLAIN)
    expect("plain: no template launches", not s.templated)
    expect("device part: no torch header, the kernel, its device helper and launcher",
           "torch/extension.h" not in s.device and "twice(x[i])" in s.device and
           "void __crl_launch_scale_kernel(dim3 __crl_g, dim3 __crl_b, size_t __crl_s, "
           "cudaStream_t __crl_st, const float* __restrict__ x, float* y, Params p) {" in s.device and
           "scale_kernel<<<__crl_g, __crl_b, __crl_s, __crl_st>>>(x, y, p);" in s.device)
    expect("device part keeps cooperative_groups, types, constants and macros",
           "#include <cooperative_groups.h>" in s.device and "struct Params" in s.device and
           "constexpr int kUnroll" in s.device and "#define BLOCK 256" in s.device)
    expect("device part leaves out the host functions", "blocks_for" not in s.device and
           "torch::Tensor scale" not in s.device)
    expect("host part: torch, the host functions, no kernel body",
           "#include <torch/extension.h>" in s.host and "static int blocks_for" in s.host and
           "twice(x[i])" not in s.host and "cooperative_groups" not in s.host)
    expect("host part declares the kernel and its launcher",
           "scale_kernel(const float* __restrict__ x, float* y, Params p);" in s.host and
           "void __crl_launch_scale_kernel(dim3 __crl_g" in s.host)
    expect("the launch becomes a launcher call, configuration first, in order",
           "__crl_launch_scale_kernel((blocks_for(p.n)), (BLOCK), (0), "
           "(at::cuda::getCurrentCUDAStream()), \n        x.data_ptr<float>(), y.data_ptr<float>(), p)"
           in s.host and "<<<" not in s.host.split("twice")[0].replace('"<<<"', ""))
    expect("comments and strings are not launches", '"<<<"' in s.device)

    expect("a host part that includes torch/extension.h needs Python", s.python)
    bare = S.split(PLAIN.replace("#include <torch/extension.h>\n", ""))
    expect("one that includes nothing of it needs only torch/types.h", not bare.python)
    expect("... unless it names pybind11", S.split(PLAIN.replace(
        "#include <torch/extension.h>\n", "") + "void g(py::object o) {}\n").python)
    expect("CUDA's global min/max overloads are declared for g++",
           "static inline unsigned int min(const int a, const unsigned int b)" not in bare.host and
           "__CRL_MINMAX(unsigned int, int, unsigned int)" in bare.host and
           "static inline double max(const float a, const double b)" in bare.host)

    t = S.split(TEMPLATED)
    expect("templated: the host part launches a kernel template", t.templated)
    expect("the template launcher forwards its parameters",
           "template <typename scalar_t, int TILE = 32>\nvoid __crl_launch_add_kernel(" in t.device and
           "add_kernel<scalar_t, TILE><<<__crl_g, __crl_b, __crl_s, __crl_st>>>(a, b, out, n);"
           in t.device)
    expect("two launch values get a zero shared size and the default stream",
           "__crl_launch_add_kernel<scalar_t>(((n + 31) / 32), (32), 0, 0, a.data_ptr" in t.host)
    expect("PYBIND11_MODULE stays on the host", "PYBIND11_MODULE" in t.host and
           "PYBIND11_MODULE" not in t.device)
    nm = ["                 U at::empty_like(at::Tensor const&)",
          "                 U void __crl_launch_add_kernel<float, 32>(dim3, dim3, unsigned long, "
          "CUstream_st*, float const*, float const*, float*, int)",
          "                 U void __crl_launch_add_kernel<double, 32>(dim3, dim3, unsigned long, "
          "CUstream_st*, double const*, double const*, double*, int)"]
    inst = S.instantiations(nm)
    expect("instantiations: one per launcher the host object leaves undefined",
           inst.splitlines() == [
               "template void __crl_launch_add_kernel<float, 32>(dim3, dim3, unsigned long, "
               "CUstream_st*, float const*, float const*, float*, int);",
               "template void __crl_launch_add_kernel<double, 32>(dim3, dim3, unsigned long, "
               "CUstream_st*, double const*, double const*, double*, int);"])
    try:
        S.instantiations(["U void __crl_launch_k<c10::Half>(dim3, dim3, unsigned long, "
                          "CUstream_st*, c10::Half*)"])
        expect("an instantiation with a torch type is refused", False)
    except S.Refused:
        expect("an instantiation with a torch type is refused", True)

    proto = S.split("__global__ void k(float*, int);\n"
                    "torch::Tensor f(torch::Tensor x) { k<<<1, 1>>>(x.data_ptr<float>(), 1); return x; }\n"
                    "__global__ void k(float* p, int n) { p[0] = n; }\n")
    expect("a kernel declared before its use is declared there in the host part",
           proto.host.index("__crl_launch_k(dim3") < proto.host.index("torch::Tensor f"))

    coords = S.split("__global__ void k(float* o, int px, int py) { o[0] = px + py; }\n"
                     "namespace py = pybind11;\n"
                     "void f(torch::Tensor t) { k<<<1, 1>>>(t.data_ptr<float>(), 1, 2); }\n")
    expect("a device variable called py is not torch; `namespace py = pybind11` is host code",
           "int px, int py" in coords.device and "namespace py" in coords.host and
           "namespace py" not in coords.device)

    cases = {
        "a namespace": "namespace n { __global__ void k(int a) {} }",
        "device code naming torch": "__global__ void k(at::Half* p) {}",
        "host code using a __constant__": "__constant__ float w[4];\n__global__ void k(float* p) {}\n"
                                          "void f(torch::Tensor t) { cudaMemcpyToSymbol(w, t.data_ptr(), 16); }",
        "a launch of an unknown kernel": "__global__ void k(int a) {}\n"
                                         "void f(torch::Tensor t) { other<<<1, 1>>>(1); }",
        "a compiler macro": "#ifdef __CUDACC__\n#endif\n__global__ void k(int a) {}",
        "an unnamed kernel parameter": "__global__ void k(int) {}",
        "a condition on torch": "#ifdef TORCH_CHECK\n#endif\n__global__ void k(int a) {}",
        "a top-level macro use": "#define DEF(T) __global__ void k_##T(T* p) {}\nDEF(float)\n"
                                 "__global__ void k(int a) {}",
        "an internal-linkage kernel": "static __global__ void k(int a) {}",
        "no kernels": "int f() { return 1; }",
        "an unterminated declaration": "__global__ void k(int a) {",
    }
    for what, src in cases.items():
        why = refused(src)
        expect("refused: %s (%s)" % (what, why), why is not None)

    expect("host flags: -O3 reaches g++, --use_fast_math does not",
           B.host_flags(["-O3", "--use_fast_math", "-Xptxas", "-v", "--ptxas-options=-v"]) == ["-O3"])
    expect("host flags: -Xcompiler values and defines",
           B.host_flags(["-Xcompiler", "-fopenmp,-O2", "-DFOO=1"]) == ["-fopenmp", "-O2", "-DFOO=1"])
    for bad in (["--frobnicate"], ["-U__CUDA_NO_HALF_OPERATORS__"]):
        try:
            B.host_flags(bad)
            expect("host flags: %s refused" % bad, False)
        except S.Refused:
            expect("host flags: %s refused" % bad, True)

    n = B.Ninja(NINJA)
    expect("ninja: variables and builds", n.vars["cxx"] == "c++" and n.target("link") ==
           ("ext.so", ["main.o", "cuda.cuda.o"]))
    expect("ninja: a command with its variables and an override",
           n.command("compile", ["/b/crl_host.cpp"], "crl_host.o", cflags="-O3") ==
           "c++ -MMD -MF crl_host.o.d -O3 -c /b/crl_host.cpp -o crl_host.o ")
    expect("ninja: torch's CUDA defines reach the host part",
           B.cuda_defines(n.vars["cuda_cflags"]) == ["-D__CUDA_NO_HALF_OPERATORS__"])

    # The build's order and failures, with the compilers faked.
    ran = []

    commands, asked = {}, []

    def fake_run(fail):
        # key fails every attempt, key@half only the one against torch/python.h
        def run(cmd, cwd, times, key):
            ran.append(key)
            half = "crl_main.cpp" in cmd or "crl_host_py.cpp" in cmd
            tag = key + ("@half" if half else "")
            commands[tag] = cmd
            times[key] = 0.0
            if key in fail or tag in fail:
                raise B.Failed("%s failed (exit 1): %s" % (key, cmd))
            if key == "host":
                with open(os.path.join(cwd, "crl_host.o"), "w") as f:
                    f.write("")
            return ""
        return run

    def pch_for(flags, header):
        asked.append((flags, header))
        return "/pch/" + header.replace("/", "_")

    def build(fail, source=PLAIN, main_cpp=MAIN_CPP):
        del ran[:], asked[:]
        commands.clear()
        B._run = fake_run(fail)
        B.probe_ninja = lambda *a: NINJA.replace("/b/main.cpp", os.path.join(d, "main.cpp"))
        with open(os.path.join(d, "main.cpp"), "w") as f:
            f.write(main_cpp)
        kwargs = {"name": "ext", "cuda_sources": source, "extra_cuda_cflags": ["-O3"],
                  "extra_cflags": ["-include", "/pch/h.h", "-Winvalid-pch"]}
        try:
            times.clear()
            times.update(B.build(None, kwargs, d, [], pch_for, d)[2])
        except B.Failed as e:
            return e
        return None

    times = {}

    real_run, real_probe = B._run, B.probe_ninja
    with tempfile.TemporaryDirectory() as d:
        expect("a split build compiles main.cpp, host and device parts, then links",
               build(set()) is None and sorted(ran[:3]) == ["device", "host", "main"] and ran[3] == "link")
        expect("a host part with torch/extension.h is compiled against torch/python.h, precompiled at "
               "its flags, with its include of torch/extension.h made torch/python.h",
               (["-O3", "-D__CUDA_NO_HALF_OPERATORS__"], "torch/python.h") in asked and
               "-include /pch/torch_python.h -Winvalid-pch -O3 -D__CUDA_NO_HALF_OPERATORS__" in
               commands["host@half"] and "host" not in commands and
               times["host_header"] == "torch/python.h" and
               "#include <torch/python.h>" in read(d, "crl_host_py.cpp") and
               "torch/extension.h" not in read(d, "crl_host_py.cpp"))
        expect("load_inline's main.cpp is compiled against torch/python.h at the candidate's flags "
               "(none here), into the object a whole build links",
               ([], "torch/python.h") in asked and
               "-fPIC -std=c++17 -include /pch/torch_python.h -Winvalid-pch -c" in commands["main@half"] and
               "-o main.o" in commands["main@half"] and "main" not in commands and
               times["main_header"] == "torch/python.h" and
               read(d, "crl_main.cpp") == MAIN_CPP.replace("torch/extension.h", "torch/python.h"))
        build({"host@half", "main@half"})
        expect("... and as they stand, with torch/extension.h, when that fails to compile",
               "-include /pch/torch_extension.h -Winvalid-pch -O3 -D__CUDA_NO_HALF_OPERATORS__" in
               commands["host"] and "/main.cpp -o main.o" in commands["main"] and
               "-include /pch/h.h" in commands["main"] and "link" in ran and
               times["host_header"] == "torch/extension.h; torch/python.h did not compile" and
               times["main_header"] == "torch/extension.h; torch/python.h did not compile")
        build(set(), PLAIN.replace("#include <torch/extension.h>", "#include <torch/torch.h>"),
              MAIN_CPP + "#include <torch/all.h>\n")
        expect("a file that includes torch/torch.h or torch/all.h is compiled only as it stands",
               "host@half" not in commands and "main@half" not in commands and
               "-include /pch/torch_extension.h" in commands["host"] and "link" in ran)
        build(set(), PLAIN.replace("#include <torch/extension.h>\n", ""))
        expect("a host part that does not need Python gets torch/types.h, as a whole build's .cu, "
               "and only that",
               [h for f, h in asked if f] == ["torch/types.h"] and
               "-include /pch/torch_types.h" in commands["host"] and "host@half" not in commands)
        e = build({"main"})
        expect("main.cpp failing is MainFailed (a whole build would fail the same way), with the "
               "error of main.cpp as it stands",
               isinstance(e, B.MainFailed) and "link" not in ran and ran.count("main") == 2 and
               "/main.cpp -o main.o" in str(e) and "crl_main.cpp" not in str(e))
        e = build({"host"})
        expect("the host part failing is Failed, not MainFailed (a whole build decides)",
               isinstance(e, B.Failed) and not isinstance(e, B.MainFailed))
        e = build({"host", "main"})
        expect("... unless main.cpp failed too", isinstance(e, B.MainFailed))
        with open(os.path.join(d, "crl_host.cpp")) as f:
            host = f.read()
        expect("the host part written is the split's", "__crl_launch_scale_kernel((blocks_for" in host)
    B._run, B.probe_ninja = real_run, real_probe
    minmax_like_nvcc(expect)
    return checks.exit_code()


MINMAX_PROGRAM = r'''
#include <cstdio>
#include <cmath>
#include <typeinfo>
#define SHOW(e) std::printf("%-14s %s %.17g\n", #e, typeid(e).name(), static_cast<double>(e))
int main() {
    volatile int i = -3; volatile unsigned u = 2u; volatile long l = -5; volatile unsigned long ul = 7;
    volatile long long ll = -9; volatile unsigned long long ull = 11; volatile float f = 1.5f;
    volatile double d = -2.25; volatile float fn = NAN;
    SHOW(min(i, i)); SHOW(max(i, 4)); SHOW(min(u, u)); SHOW(min(i, u)); SHOW(max(u, i));
    SHOW(min(l, l)); SHOW(max(ul, ul)); SHOW(min(l, ul)); SHOW(max(ul, l)); SHOW(min(ll, ll));
    SHOW(max(ull, ull)); SHOW(min(ll, ull)); SHOW(max(ull, ll)); SHOW(min(f, f)); SHOW(max(d, d));
    SHOW(min(f, d)); SHOW(max(d, f)); SHOW(min(fn, f)); SHOW(min(f, fn)); SHOW(max(f, fn)); SHOW(max(fn, f)); SHOW(min(65535, (i + 255) / 256));
    return 0;
}
'''


def minmax_like_nvcc(expect):
    """The host part's min/max overloads give what nvcc's host pass gives, on
    a program compiled both ways (needs nvcc and g++; skipped without)."""
    import shutil
    import subprocess
    nvcc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
    if not os.path.exists(nvcc) or not shutil.which("g++"):
        print("skip   min/max against nvcc: no nvcc or g++")
        return
    prologue = S.HOST_PROLOGUE.replace("#include <torch/types.h>\n", "")
    cuda_include = os.path.join(os.path.dirname(os.path.dirname(nvcc)), "include")
    outputs = []
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "p.cu"), "w") as f:
            f.write(MINMAX_PROGRAM)
        with open(os.path.join(d, "p.cpp"), "w") as f:
            f.write(prologue + MINMAX_PROGRAM)
        for exe, cmd in (("nv", [nvcc, "-o", "nv", "p.cu"]),
                         ("gx", ["g++", "-I", cuda_include, "-o", "gx", "p.cpp"])):
            p = subprocess.run(cmd, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if p.returncode != 0:
                expect("min/max program compiles: %s\n%s" % (cmd[0], p.stdout[-2000:]), False)
                return
            run = subprocess.run([os.path.join(d, exe)], stdout=subprocess.PIPE, text=True)
            outputs.append(run.stdout)
    same = outputs[0] == outputs[1] and outputs[0].count("\n") == 22
    expect("min/max: 22 calls, the same types and values as nvcc's host pass", same)
    if not same:
        print("nvcc:\n%sg++:\n%s" % tuple(outputs))


if __name__ == "__main__":
    sys.exit(main())
