// Which frames of a launch's stack are the program's own ("user" frames),
// for the source table (`nbprof stats --by source`):
//
// - A Python frame (its file ends in .py) is a user frame, whatever the
//   file: the model's own code, transformers', torch.nn's. A stack with
//   Python frames is read by them alone, as torch.profiler's with_stack is.
// - Without Python frames, a native frame is a user frame unless it is in
//   the CUDA libraries (libcuda, libcudart, cuBLAS, cuDNN, NCCL, CUPTI,
//   NVRTC, cuFFT, cuRAND, cuSPARSE, cuSOLVER, nvJitLink, NVTX, PyTorch's
//   CUDA libraries), a CUDA header's inline wrapper or a CUDA API entry
//   (cu*/cuda* functions, __cuda*), the C or C++ runtime (libc, libstdc++,
//   the loader, glibc's start-up), the interpreter (libpython, python3) or
//   nb's own (cut from every stack already).
#pragma once
#include <string>

#include "formats/snapshot_model.h"

namespace nb {

bool is_python_frame(const formats::Frame& f);
bool is_user_native_frame(const formats::Frame& f);
// How the source table names a frame: "file.py:12 function" for Python,
// "function (file.cpp:34)" (or "(module)") for native code.
std::string location_of(const formats::Frame& f);

}  // namespace nb
