"""Which frame of an allocating stack names it.

A stack is the snapshot's list of frames, innermost first; each frame is
{"filename", "line", "name"}. Python frames are those of a ".py" (or
".pyw") file, or of code without a file ("<string>", "<stdin>"); every
other frame is native. A stack's top Python frame and top native frame are
its innermost frames of each kind that are not skipped:

Skipped Python frames: the interpreter's frozen modules ("<frozen ...>").

Skipped native frames:
  nb's own       functions in the nb:: namespace or named nb_*, nb's wrapper
                 of main (main_then_end, start_main), anything in libnb_shim
  the allocator  CUDA's libraries (libcudart*, libcuda.so*) and any CUDA API
                 entry point (cuda*/cu* followed by a capital: cudaMalloc,
                 cuMemAlloc_v2); PyTorch's c10 libraries (libc10*) and any
                 c10:: function with "alloc" in its name (the caching and
                 cudaMallocAsync allocators); ATen's empty-tensor factories
                 (at::empty*, at::detail::empty*, at::native::empty*), which
                 only obtain the storage; the stack capture of PyTorch's own
                 snapshots (torch::unwind, torch::CapturedTraceback,
                 torch::cuda::...gather...)
  the interpreter  the python executable and libpython*, CPython's source
                 tree (a .c/.h file under Python/, Objects/, Modules/,
                 Include/, Parser/ or Programs/), functions named Py*/_Py*,
                 pymain_*/pyrun_*, ctypes and libffi (_ctypes*.so,
                 libffi*, ffi_call*, _ctypes_*, _call_function_pointer)
  process start  _start, __libc_start_main, __libc_start_call_main,
                 start_thread, clone, clone3
"""
import os
import re

_PY_FILE = re.compile(r"(\.pyw?$|^<[^>]*>$)")
_FROZEN = re.compile(r"^<frozen ")

_CUDA_API = re.compile(r"^((cuda|cu)[A-Z]\w*|__cuda\w*)$")
_NATIVE_SKIP_NAME = re.compile(
    r"^(nb::|nb_|\(anonymous namespace\)::(main_then_end|start_main)\("
    r"|cudart::"
    r"|c10::\S*[Aa]lloc"
    r"|at::(detail::|native::)?empty"
    r"|torch::unwind::|torch::CapturedTraceback|torch::cuda::\(anonymous namespace\)::gather"
    r"|_?Py[A-Z_]|pymain_|pyrun_|_PyEval|ffi_call|_ctypes_|_call_function_pointer$"
    r"|_start$|__libc_start_main|__libc_start_call_main$|start_thread$|clone3?$)")
_NATIVE_SKIP_MODULE = re.compile(
    r"^(libnb_shim|libcudart|libcuda\.so|libc10|libpython|libffi|_ctypes|python\d[\d.]*$)")
_CPYTHON_SOURCE = re.compile(r"(^|/)(Python|Objects|Modules|Include|Parser|Programs)/.*\.[ch]$")


def is_python(frame):
    return bool(_PY_FILE.search(frame.get("filename", "")))


def skip_native(frame):
    name = frame.get("name", "")
    filename = frame.get("filename", "")
    if _CUDA_API.match(name) or _NATIVE_SKIP_NAME.match(name):
        return True
    base = os.path.basename(filename)
    if _NATIVE_SKIP_MODULE.match(base) or _CPYTHON_SOURCE.search(filename):
        return True
    # A frame without symbols is named module+0xoffset.
    if "+0x" in name and _NATIVE_SKIP_MODULE.match(name.split("+0x", 1)[0]):
        return True
    return False


class StackInfo:
    """What the report shows of one stack."""

    __slots__ = ("python", "native", "python_chain")

    def __init__(self, frames):
        self.python = None
        self.native = None
        self.python_chain = []
        for f in frames or ():
            if is_python(f):
                if not _FROZEN.match(f.get("filename", "")):
                    self.python_chain.append(f)
                    if self.python is None:
                        self.python = f
            elif self.native is None and not skip_native(f):
                self.native = f

    def where(self):
        """The one frame that names the stack: its top Python frame, else
        its top native frame."""
        return self.python or self.native


def short(frame, width=None):
    """"file.py:12 (function)" for a Python frame; "function (file.c:40)" or
    "function (module)" for a native one."""
    if frame is None:
        return "-"
    filename = os.path.basename(frame.get("filename", "")) or "??"
    line = frame.get("line", 0)
    name = frame.get("name", "") or "?"
    if width and len(name) > width:
        name = name[: width - 1] + "\u2026"
    if is_python(frame):
        return f"{filename}:{line} ({name})"
    return f"{name} ({filename}:{line})" if line else f"{name} ({filename})"


def as_json(frame):
    if frame is None:
        return None
    filename = frame.get("filename", "")
    line = frame.get("line", 0)
    return {"file": filename, "line": line, "function": frame.get("name", ""),
            "where": f"{os.path.basename(filename)}:{line}" if line else os.path.basename(filename)}
