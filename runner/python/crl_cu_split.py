"""Splits a load_inline CUDA source into a host part and a device part.

A candidate's CUDA source usually holds its kernels and the host functions
that take torch tensors and launch them. Built as one .cu, nvcc parses
torch's headers three times (host preprocessing with cudafe++, cicc, and the
host compile of cudafe++'s output): about 30 s on an H100 while the kernels
take 0.1 s of ptxas. Split, the device part (kernels, device functions,
types) compiles with nvcc without torch's headers, and the host part (the
torch-facing functions, with each `k<<<g, b, s, st>>>(args)` turned into a
call of a launch function defined beside `k` in the device part) compiles
with g++ and a precompiled header, side by side: torch/types.h, the header a
whole build's .cu gets from load_inline, or torch/extension.h when the host
part includes it or names Python or pybind11 (Split.python).

Only what the split can keep exactly is split: the kernels' text, flags and
instantiations are those of the candidate; anything this module does not
recognise raises Refused, and the caller builds the source as one .cu as
load_inline would. A split whose parts fail to compile or link is also built
as one .cu, so such a compile error is always the real build's
(crl_split_build.py; load_inline's own main.cpp is the exception: it is
compiled exactly as a whole build would compile it). docs/kernelbench.md
("Fast builds") and docs/benchmarks.md have the rules and the measurements.
"""
import re

# Tokens that make a top-level declaration device code.
DEVICE_WORDS = {"__global__", "__device__", "__constant__", "__shared__", "__managed__"}
# Names that need torch's headers: these namespaces when qualified (`at::`)
# or opened (`namespace py = pybind11`), these words anywhere, and macros
# with these prefixes (a device variable may well be called `py`).
TORCH_NAMESPACES = {"torch", "at", "c10", "pybind11", "py", "caffe2"}
TORCH_WORDS = {"Tensor", "TensorOptions", "IntArrayRef", "ScalarType"}
TORCH_PREFIXES = ("TORCH_", "AT_", "C10_", "PYBIND11_", "THC")
# Macros under which g++ and nvcc's host pass differ.
COMPILER_MACROS = {"__CUDACC__", "__NVCC__", "__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__",
                   "__CUDACC_RDC__", "__CUDACC_RTC__", "__CUDACC_EWP__"}
TORCH_INCLUDE = re.compile(r"^(torch|ATen|c10|pybind11|THC|caffe2)/")
# Headers that g++ cannot or need not see; the host part gets the others.
DEVICE_ONLY_INCLUDE = re.compile(
    r"^(mma\.h|cooperative_groups.*|cub/.*|cuda/.*|cuda_pipeline.*|cuda_awbarrier.*|crt/.*|"
    r"sm_\d+.*|device_.*|cuda_fp8.*|thrust/.*|cute/.*|cutlass/.*)$")
LAUNCH_PREFIX = "__crl_launch_"
# What a host part is compiled against (Split.header; crl_pch.py precompiles
# both): load_inline's torch/types.h, or torch/extension.h for Python.
TYPES_H = "torch/types.h"
EXTENSION_H = "torch/extension.h"
# torch/extension.h is torch/all.h (the C++ frontend: nn, optim, data, jit,
# ...) and torch/python.h (pybind11, torch's casters, Python). A file that
# needs only the second is tried against it first (python_half).
PYTHON_H = "torch/python.h"
_EXTENSION_INCLUDE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*)(<torch/extension\.h>|"torch/extension\.h")',
                                re.M)
_FRONTEND_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]torch/(torch|all)\.h[>"]', re.M)
# A host part that includes one of these, or names one of these, needs
# torch/extension.h's Python and pybind11 (torch/torch.h includes
# torch/extension.h under load_inline's TORCH_API_INCLUDE_EXTENSION_H).
PYTHON_INCLUDE = re.compile(r"^(torch/(extension|python|torch)\.h|torch/csrc/|pybind11/|Python\.h)")
PYTHON_NAME = re.compile(r"\b(py\s*::|pybind11\b|PyObject\b|PYBIND11_\w+|Py[A-Z_]\w*|_Py\w+|THP\w+)")
# Type names that cannot end a named parameter.
TYPE_WORDS = {"int", "float", "double", "char", "long", "short", "unsigned", "signed", "bool",
              "void", "size_t", "const", "volatile", "auto", "int64_t", "int32_t", "uint32_t",
              "uint64_t", "half", "__half", "float2", "float4", "int2", "int4"}


class Refused(Exception):
    """The source is not split; the message says why."""


class Token:
    __slots__ = ("kind", "text", "start", "end")

    def __init__(self, kind, text, start, end):
        self.kind, self.text, self.start, self.end = kind, text, start, end

    def __repr__(self):
        return "%s:%r" % (self.kind, self.text)


_PUNCT3 = ("<<<", ">>>", "...", "->*", "<<=", ">>=")
_PUNCT2 = ("::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=",
           "*=", "/=", "%=", "&=", "|=", "^=", "##")


def tokenize(src):
    """C++ tokens with positions; comments dropped, a preprocessor directive
    one token (with its continuation lines)."""
    toks = []
    i, n = 0, len(src)
    line_start = True
    while i < n:
        c = src[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            if j < 0:
                raise Refused("unterminated comment")
            i = j + 2
            continue
        if c == "#" and line_start:
            j = i
            while True:
                k = src.find("\n", j)
                if k < 0:
                    k = n
                    break
                if src[k - 1] == "\\" or (src[k - 2:k] == "\\\r"):
                    j = k + 1
                    continue
                break
            toks.append(Token("pp", src[i:k], i, k))
            i = k
            continue
        line_start = False
        m = re.match(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\(', src[i:i + 40])
        if m:
            close = ")" + m.group(1) + '"'
            j = src.find(close, i + m.end())
            if j < 0:
                raise Refused("unterminated raw string")
            toks.append(Token("str", src[i:j + len(close)], i, j + len(close)))
            i = j + len(close)
            continue
        if c in "\"'" or (c in "uUL" and i + 1 < n and src[i + 1] in "\"'"):
            q = i + 1 if c in "uUL" else i
            quote = src[q]
            j = q + 1
            while j < n and src[j] != quote:
                if src[j] == "\\":
                    j += 1
                elif src[j] == "\n":
                    raise Refused("unterminated string")
                j += 1
            if j >= n:
                raise Refused("unterminated string")
            toks.append(Token("str", src[i:j + 1], i, j + 1))
            i = j + 1
            continue
        if c.isalpha() or c == "_":
            m = re.match(r"[A-Za-z_0-9]+", src[i:i + 256])
            toks.append(Token("id", m.group(0), i, i + m.end()))
            i += m.end()
            continue
        if c.isdigit() or (c == "." and i + 1 < n and src[i + 1].isdigit()):
            m = re.match(r"[0-9A-Za-z_.']*(?:[eEpP][+-][0-9A-Za-z_.]*)?", src[i:i + 256])
            toks.append(Token("num", m.group(0), i, i + m.end()))
            i += m.end()
            continue
        for p in _PUNCT3 + _PUNCT2:
            if src.startswith(p, i):
                toks.append(Token("op", p, i, i + len(p)))
                i += len(p)
                break
        else:
            toks.append(Token("op", c, i, i + 1))
            i += 1
    return toks


class Item:
    """One top-level declaration or preprocessor directive."""

    def __init__(self, src, toks):
        self.toks = toks
        self.text = src[toks[0].start:toks[-1].end]
        self.ids = {t.text for t in toks if t.kind == "id"}
        # the identifiers that would name torch (see TORCH_NAMESPACES)
        self.torch_ids = {t.text for t in toks if t.kind == "id" and t.text not in TORCH_NAMESPACES}
        for i, t in enumerate(toks):
            if t.kind == "id" and t.text in TORCH_NAMESPACES and (
                    (i + 1 < len(toks) and toks[i + 1].text == "::") or
                    (i > 0 and toks[i - 1].text in ("namespace", "="))):
                self.torch_ids.add(t.text)
        self.pp = toks[0].kind == "pp"

    def words(self):
        return [t.text for t in self.toks]


_OPEN, _CLOSE = "([{", ")]}"


def _aggregate_head(cur):
    """Whether the brace block being closed belongs to a type or an
    initializer (then the item ends at ';'), not a function body."""
    depth = 0
    start = _match(cur, 1, "<", ">") + 1 if cur[0].text == "template" else 0
    for t in cur[start:]:
        if t.text in _OPEN:
            if t.text == "{" and depth == 0:
                return False
            depth += 1
        elif t.text in _CLOSE:
            depth -= 1
        elif depth == 0 and t.text in ("struct", "class", "union", "enum", "="):
            return True
    return False


def items_of(src, toks):
    items, cur, depth, aggregate = [], [], 0, False
    for t in toks:
        if t.kind == "pp":
            if depth == 0:
                if cur:
                    raise Refused("a preprocessor directive inside a top-level declaration")
                items.append(Item(src, [t]))
            else:
                cur.append(t)
            continue
        cur.append(t)
        if t.text in _OPEN:
            if t.text == "{" and depth == 0:
                words = [x.text for x in cur]
                if words[0] == "namespace" or (words[0] == "extern" and len(words) > 2 and
                                               words[1].startswith('"') and words[2] == "{"):
                    raise Refused("a namespace or extern block")
                aggregate = _aggregate_head(cur)
            depth += 1
        elif t.text in _CLOSE:
            depth -= 1
            if depth < 0:
                raise Refused("unbalanced brackets")
            if t.text == "}" and depth == 0 and not aggregate:
                items.append(Item(src, cur))
                cur = []
        elif t.text == ";" and depth == 0:
            items.append(Item(src, cur))
            cur, aggregate = [], False
    if cur or depth:
        raise Refused("the source ends inside a declaration")
    return items


def _match(toks, i, open_, close):
    """Index of the token closing toks[i] (an opener)."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].text == open_:
            depth += 1
        elif toks[j].text == close:
            depth -= 1
            if depth == 0:
                return j
    raise Refused("unbalanced %s%s" % (open_, close))


def _split_commas(toks):
    parts, cur, depth = [], [], 0
    for t in toks:
        if t.text in "([{<" and t.kind == "op":
            depth += 1
        elif t.text in ")]}>" and t.kind == "op":
            depth -= 1
        elif t.text == ">>" and t.kind == "op":
            depth -= 2
        if t.text == "," and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        parts.append(cur)
    return parts


def _declared_name(item):
    """The name a top-level declaration introduces (best effort)."""
    toks = item.toks
    i = 0
    if toks[0].text == "template":
        i = _match(toks, 1, "<", ">") + 1
    words = [t.text for t in toks[i:]]
    for kw in ("struct", "class", "union", "enum"):
        if kw in words[:3]:
            k = words.index(kw) + 1
            if k < len(words) and words[k] == "class":  # enum class
                k += 1
            return words[k] if k < len(words) else None
    for j in range(i, len(toks)):
        t = toks[j]
        if t.text in ("(", "[", "=", ";", "{"):
            k = j - 1
            while k >= i and toks[k].kind != "id":
                k -= 1
            return toks[k].text if k >= i else None
    return None


class Kernel:
    """A __global__ function defined in the source."""

    def __init__(self, item):
        toks = item.toks
        self.item = item
        self.body_follows = toks[-1].text == "}"
        i = 0
        self.template_params = None
        self.template_header = ""
        if toks[0].text == "template":
            end = _match(toks, 1, "<", ">")
            self.template_header = item.text[:toks[end].end - toks[0].start]
            self.template_params = []
            for p in _split_commas(toks[2:end]):
                words = [t.text for t in p]
                if "..." in words:
                    raise Refused("a variadic kernel template")
                if "template" in words:
                    raise Refused("a template template parameter")
                if "=" in words:
                    words = words[:words.index("=")]
                if len(words) < 2 or not re.match(r"^[A-Za-z_]\w*$", words[-1]):
                    raise Refused("an unnamed kernel template parameter")
                self.template_params.append(words[-1])
            i = end + 1
        # the parameter list: the first '(' at depth 0 after the name,
        # skipping __launch_bounds__(...) and __attribute__((...)).
        j = i
        while j < len(toks):
            if toks[j].text in ("__launch_bounds__", "__attribute__", "__align__"):
                j = _match(toks, j + 1, "(", ")") + 1
                continue
            if toks[j].text == "(":
                break
            if toks[j].text == "{":
                raise Refused("a kernel without a parameter list")
            j += 1
        open_ = j
        close = _match(toks, open_, "(", ")")
        name_tok = toks[open_ - 1]
        if name_tok.kind != "id":
            raise Refused("a kernel whose name is not a plain identifier")
        if any(t.text == "::" for t in toks[i:open_]):
            raise Refused("a kernel defined with a qualified name")
        self.name = name_tok.text
        head_words = [t.text for t in toks[i:open_]]
        if "static" in head_words or "inline" in head_words:
            raise Refused("kernel %s has internal linkage" % self.name)
        self.head = item.text[toks[i].start - toks[0].start:name_tok.start - toks[0].start]
        self.params_text = item.text[toks[open_].end - toks[0].start:toks[close].start - toks[0].start]
        self.param_names = []
        params = _split_commas(toks[open_ + 1:close])
        if [t.text for t in toks[open_ + 1:close]] in ([], ["void"]):
            params = []
        for p in params:
            words = [t.text for t in p]
            if "..." in words:
                raise Refused("kernel %s is variadic" % self.name)
            if "=" in words:
                p = p[:words.index("=")]
                words = words[:words.index("=")]
            if words and words[-1] == "]":
                raise Refused("kernel %s takes an array parameter" % self.name)
            if len(p) < 2 or p[-1].kind != "id" or words[-1] in TYPE_WORDS or \
                    words[-1].startswith("__"):
                if self.body_follows:
                    raise Refused("kernel %s has an unnamed parameter" % self.name)
                continue
            self.param_names.append(words[-1])

    def launcher_decl(self):
        params = "dim3 __crl_g, dim3 __crl_b, size_t __crl_s, cudaStream_t __crl_st"
        if self.params_text.strip() and self.params_text.strip() != "void":
            params += ", " + self.params_text
        head = self.template_header + "\n" if self.template_header else ""
        return "%svoid %s%s(%s)" % (head, LAUNCH_PREFIX, self.name, params)

    def launcher_definition(self):
        targs = "<%s>" % ", ".join(self.template_params) if self.template_params else ""
        return "%s {\n  %s%s<<<__crl_g, __crl_b, __crl_s, __crl_st>>>(%s);\n}\n" % (
            self.launcher_decl(), self.name, targs, ", ".join(self.param_names))

    def host_declaration(self):
        """The kernel's own declaration for g++ (its address names the
        kernel in cudaFuncSetAttribute and the like)."""
        head = self.template_header + "\n" if self.template_header else ""
        return "%s%s%s(%s);" % (head, self.head, self.name, self.params_text)


def _rewrite_launches(item, kernels):
    """The item's text with each `k<...><<<cfg>>>(args)` made a call of k's
    launch function."""
    toks = item.toks
    base = toks[0].start
    text = item.text
    edits = []
    i = 0
    while i < len(toks):
        if toks[i].text != "<<<":
            if toks[i].text == ">>>":
                raise Refused("'>>>' without '<<<'")
            i += 1
            continue
        # the callee: name or name<targs>
        k = i - 1
        if k >= 0 and toks[k].text in (">", ">>"):
            depth = 0
            while k >= 0:
                if toks[k].text == ">":
                    depth += 1
                elif toks[k].text == ">>":
                    depth += 2
                elif toks[k].text == "<":
                    depth -= 1
                    if depth == 0:
                        break
                k -= 1
            k -= 1
        if k < 0 or toks[k].kind != "id":
            raise Refused("a kernel launch whose callee is not a kernel name")
        if k > 0 and toks[k - 1].text in ("::", ".", "->"):
            raise Refused("a launch of a qualified kernel name")
        name = toks[k].text
        if name not in kernels:
            raise Refused("a launch of %s, which is not a kernel defined in this source" % name)
        j = i + 1
        depth = 0
        while j < len(toks) and not (toks[j].text == ">>>" and depth == 0):
            if toks[j].text in "([{":
                depth += 1
            elif toks[j].text in ")]}":
                depth -= 1
            elif toks[j].text == "<<<":
                raise Refused("a nested launch")
            j += 1
        if j >= len(toks) or j + 1 >= len(toks) or toks[j + 1].text != "(":
            raise Refused("a kernel launch without arguments")
        cfg = _split_commas(toks[i + 1:j])
        if not 2 <= len(cfg) <= 4:
            raise Refused("a launch configuration of %d values" % len(cfg))
        cfg_text = ["(%s)" % text[c[0].start - base:c[-1].end - base] for c in cfg]
        cfg_text += ["0"] * (4 - len(cfg_text))
        close = _match(toks, j + 1, "(", ")")
        args = text[toks[j + 1].end - base:toks[close].start - base]
        callee_targs = text[toks[k].end - base:toks[i].start - base]
        call = "%s%s%s(%s%s)" % (LAUNCH_PREFIX, name, callee_targs, ", ".join(cfg_text),
                                 (", " + args) if args.strip() else "")
        edits.append((toks[k].start - base, toks[close].end - base, call))
        i = close + 1
    for s, e, call in reversed(edits):
        text = text[:s] + call + text[e:]
    return text, bool(edits)


def _include_target(pp_text):
    m = re.match(r"#\s*include\s*[<\"]([^>\"]+)[>\"]", pp_text)
    return m.group(1) if m else None


def _torch_like(ids, torch_macros):
    """Whether identifiers (Item.torch_ids, or _text_torch_ids) name torch."""
    return any(x in TORCH_NAMESPACES or x in TORCH_WORDS or x.startswith(TORCH_PREFIXES) or
               x in torch_macros for x in ids)


def _text_torch_ids(text):
    """Item.torch_ids of a preprocessor line's text."""
    ids = set(re.findall(r"[A-Za-z_]\w*", text)) - TORCH_NAMESPACES
    return ids | set(re.findall(r"\b(%s)\s*::" % "|".join(sorted(TORCH_NAMESPACES)), text))


class Split:
    def __init__(self, host, device, templated_kernels, python):
        self.host = host  # text for g++
        self.device = device  # text for nvcc, without torch's headers
        # True when the host part launches kernel templates: the device
        # part then needs the instantiations the host part asks for.
        self.templated = templated_kernels
        # True when the host part needs torch/extension.h (PYTHON_INCLUDE,
        # PYTHON_NAME); otherwise torch/types.h is all a whole build's .cu
        # would have seen of torch.
        self.python = python

    @property
    def header(self):
        """The torch header the host part is compiled against."""
        return EXTENSION_H if self.python else TYPES_H


def python_half(text):
    """text with its includes of torch/extension.h made torch/python.h, to be
    compiled against a precompiled torch/python.h; None when it includes
    torch/torch.h or torch/all.h (it asks for the C++ frontend by name).

    g++ instantiates the templates of torch/all.h's inline functions again
    in every file that includes it, precompiled or not: seconds a file that
    binds a few functions does not use (docs/benchmarks.md). The caller
    compiles the text as it was when this one fails to compile
    (crl_split_build.py)."""
    if _FRONTEND_INCLUDE.search(text):
        return None
    return _EXTENSION_INCLUDE.sub(r"\1<%s>" % PYTHON_H, text)


# load_inline's own first lines of a .cu, then what nvcc's host pass declares
# and g++ does not: CUDA's global min and max overloads (crt/math_functions.h:
# the integer ones compare in the listed result type, the floating ones are
# fmin/fmax), so that host code calling min(a, b) means what it means in a
# whole build.
HOST_PROLOGUE = """// crl: the host part of a load_inline CUDA source (runner/python/crl_cu_split.py)
#include <torch/types.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cmath>
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#define __CRL_MINMAX(R, A, B) \\
  static inline R min(const A a, const B b) { return static_cast<R>(a) < static_cast<R>(b) ? static_cast<R>(a) : static_cast<R>(b); } \\
  static inline R max(const A a, const B b) { return static_cast<R>(a) > static_cast<R>(b) ? static_cast<R>(a) : static_cast<R>(b); }
__CRL_MINMAX(int, int, int)
__CRL_MINMAX(unsigned int, unsigned int, unsigned int)
__CRL_MINMAX(unsigned int, int, unsigned int)
__CRL_MINMAX(unsigned int, unsigned int, int)
__CRL_MINMAX(long int, long int, long int)
__CRL_MINMAX(unsigned long int, unsigned long int, unsigned long int)
__CRL_MINMAX(unsigned long int, long int, unsigned long int)
__CRL_MINMAX(unsigned long int, unsigned long int, long int)
__CRL_MINMAX(long long int, long long int, long long int)
__CRL_MINMAX(unsigned long long int, unsigned long long int, unsigned long long int)
__CRL_MINMAX(unsigned long long int, long long int, unsigned long long int)
__CRL_MINMAX(unsigned long long int, unsigned long long int, long long int)
#undef __CRL_MINMAX
static inline float min(const float a, const float b) { return std::fmin(a, b); }
static inline float max(const float a, const float b) { return std::fmax(a, b); }
static inline double min(const double a, const double b) { return std::fmin(a, b); }
static inline double max(const double a, const double b) { return std::fmax(a, b); }
static inline double min(const float a, const double b) { return std::fmin(static_cast<double>(a), b); }
static inline double max(const float a, const double b) { return std::fmax(static_cast<double>(a), b); }
static inline double min(const double a, const float b) { return std::fmin(a, static_cast<double>(b)); }
static inline double max(const double a, const float b) { return std::fmax(a, static_cast<double>(b)); }
"""

# What torch/types.h gives a .cu besides torch (the standard headers its
# kernels may use without including them).
DEVICE_PROLOGUE = """// crl: the device part of a load_inline CUDA source (runner/python/crl_cu_split.py)
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <cstddef>
#include <cmath>
#include <cfloat>
#include <climits>
#include <algorithm>
#include <limits>
#include <type_traits>
#include <utility>
"""


def split(src):
    """Split(host, device) of a load_inline CUDA source, or Refused."""
    toks = tokenize(src)
    for t in toks:
        if t.kind == "id" and t.text in COMPILER_MACROS or \
                t.kind == "pp" and any(m in t.text for m in COMPILER_MACROS):
            raise Refused("the source tests %s" % (t.text if t.kind == "id" else "a compiler macro"))
    items = items_of(src, toks)
    # Macros whose bodies need torch.
    torch_macros = set()
    changed = True
    while changed:
        changed = False
        for it in items:
            m = it.pp and re.match(r"#\s*define\s+(\w+)", it.text)
            if m and m.group(1) not in torch_macros:
                if _torch_like(_text_torch_ids(it.text[m.end():]), torch_macros):
                    torch_macros.add(m.group(1))
                    changed = True
    function_macros = set()
    for it in items:
        m = it.pp and re.match(r"#\s*define\s+(\w+)\(", it.text)
        if m:
            function_macros.add(m.group(1))
    kernels, device_names, declared = {}, set(), set()
    host, device = [], []
    templated = False
    python = False
    host_items = []
    for it in items:
        if it.pp:
            target = _include_target(it.text)
            python = python or bool(target and PYTHON_INCLUDE.match(target))
            if target is None:
                if re.match(r"#\s*include", it.text):
                    raise Refused("an #include of a macro")
                if re.match(r"#\s*(if|ifdef|ifndef|elif)\b", it.text) and _torch_like(
                        _text_torch_ids(it.text), torch_macros):
                    raise Refused("a preprocessor condition on torch: " + it.text[:80])
                host.append(it.text)
                device.append(it.text)
            elif TORCH_INCLUDE.match(target):
                host.append(it.text)
            elif re.match(r'#\s*include\s*"', it.text):
                raise Refused("a local #include")
            elif DEVICE_ONLY_INCLUDE.match(target):
                device.append(it.text)
            else:
                host.append(it.text)
                device.append(it.text)
            continue
        words = it.words()
        if words[0] in function_macros:
            raise Refused("a top-level use of macro %s" % words[0])
        is_device = bool(it.ids & DEVICE_WORDS)
        is_torch = _torch_like(it.torch_ids, torch_macros)
        if is_device and is_torch:
            raise Refused("device code that names torch (%s)" % (_declared_name(it) or words[0]))
        if "__global__" in it.ids:
            k = Kernel(it)
            device.append(it.text)
            if k.name not in declared:
                # The host part declares the kernel where it first appears.
                declared.add(k.name)
                host.append(k.host_declaration())
                host.append(k.launcher_decl() + ";")
            if k.body_follows:
                if k.name in kernels:
                    raise Refused("kernel %s is overloaded" % k.name)
                kernels[k.name] = k
                device.append(k.launcher_definition())
            continue
        if is_device:
            name = _declared_name(it)
            if name:
                device_names.add(name)
            device.append(it.text)
            continue
        function_body = words[-1] == "}"
        if function_body or is_torch:
            if "constexpr" in words and not is_torch:
                device.append(it.text)
            host_items.append(len(host))
            host.append(it)
            continue
        host.append(it.text)
        device.append(it.text)
    if not kernels:
        raise Refused("no kernel definitions")
    for idx in host_items:
        it = host[idx]
        used = (it.ids & device_names) - set(kernels)
        if used:
            raise Refused("host code uses device declarations (%s)" % ", ".join(sorted(used)))
        text, launched = _rewrite_launches(it, kernels)
        if launched and any(kernels[n].template_params for n in it.ids & set(kernels)):
            templated = True
        host[idx] = text
    host_text = "\n".join(host) + "\n"
    python = python or bool(PYTHON_NAME.search(host_text))
    return Split(HOST_PROLOGUE + host_text, DEVICE_PROLOGUE + "\n".join(device) + "\n",
                 templated, python)


def instantiations(undefined_demangled):
    """Explicit instantiations, for the device part, of the launch functions
    that the host object leaves undefined (`nm -C -u` lines), or Refused."""
    lines = []
    for line in undefined_demangled:
        sym = line.strip()
        if sym.startswith("U "):
            sym = sym[2:].strip()
        if LAUNCH_PREFIX not in sym or "<" not in sym.split("(", 1)[0]:
            continue
        if "(anonymous namespace)" in sym or "{lambda" in sym or "::" in sym.split("(", 1)[0]:
            raise Refused("a kernel instantiated with a type the device part cannot name: " + sym)
        if re.search(r"\b(c10|at|torch)::", sym):
            raise Refused("a kernel instantiated with a torch type: " + sym)
        lines.append("template %s;" % sym)
    return "".join(line + "\n" for line in lines)
