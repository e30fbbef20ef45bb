// Which frames of a launch's stack the source table calls the program's own.
#include <catch2/catch.hpp>

#include "collector/user_frames.h"

using nb::formats::Frame;

TEST_CASE("user frames: Python frames, and native ones outside CUDA, the runtimes and the interpreter", "[stacks]") {
  CHECK(nb::is_python_frame({"/srv/model.py", 12, "forward"}));
  CHECK_FALSE(nb::is_user_native_frame({"/srv/model.py", 12, "forward"}));
  // The program's own native code.
  CHECK(nb::is_user_native_frame({"/src/app/solver.cpp", 40, "solve"}));
  CHECK(nb::is_user_native_frame({"/opt/app/bin/app", 0, "app+0x1234"}));
  // CUDA's libraries, by module; CUDA API entries and CUDA headers' wrappers, by name and file.
  CHECK_FALSE(nb::is_user_native_frame({"/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0, "libcuda.so.1+0x10"}));
  CHECK_FALSE(nb::is_user_native_frame({"/usr/local/cuda/lib64/libcublasLt.so.13", 0, "cublasLtMatmul"}));
  CHECK_FALSE(nb::is_user_native_frame({"/venv/torch/lib/libtorch_cuda.so", 0, "at::native::launch"}));
  CHECK_FALSE(nb::is_user_native_frame({"/src/app/solver.cpp", 41, "cudaLaunchKernel"}));
  CHECK_FALSE(nb::is_user_native_frame({"/src/app/solver.cpp", 41, "cuLaunchKernel"}));
  CHECK_FALSE(nb::is_user_native_frame({"/usr/local/cuda/include/cuda_runtime.h", 216, "cudaLaunchKernel<char>"}));
  CHECK(nb::is_user_native_frame({"/src/app/custom.cpp", 7, "custom_kernel_launch"}));
  // The C runtime and the interpreter.
  CHECK_FALSE(nb::is_user_native_frame({"../csu/libc-start.c", 360, "__libc_start_main"}));
  CHECK_FALSE(nb::is_user_native_frame({"/usr/lib/x86_64-linux-gnu/libpython3.12.so.1.0", 0, "_PyEval_EvalFrameDefault"}));
  CHECK_FALSE(nb::is_user_native_frame({"/usr/bin/python3.12", 0, "python3.12+0x99"}));
  CHECK(nb::location_of({"/srv/model.py", 12, "forward"}) == "/srv/model.py:12 forward");
  CHECK(nb::location_of({"/src/app/solver.cpp", 40, "solve"}) == "solve (/src/app/solver.cpp:40)");
}
