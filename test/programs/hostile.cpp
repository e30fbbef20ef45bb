// A program that does what careless or unusual programs do around nb, for
// the fault tests (integration/test_faults.cpp). Each mode does some CUDA
// work (allocations, launches) and then:
//   hostile work                  nothing more; exits 0 (the RLIMIT_AS sweep runs it)
//   hostile stderr_to FILE        closes fd 2, opens FILE (it becomes fd 2), writes "data\n"
//                                 to fd 2 itself; exits 0
//   hostile noisy                 writes 63 KB to stderr before its CUDA work (a pipe that
//                                 its parent reads only after stdout is then nearly full)
//   hostile busy_exit THREADS     THREADS threads launch kernels without end; main returns
//                                 after 100 ms of it
//   hostile fork_first            forks before any CUDA call; the child does the CUDA work
//                                 and exits 0; the parent waits and makes no CUDA call
//   hostile fork_after            CUDA work, then forks; the child launches too; exits 0
//   hostile exec_self             CUDA work, then execs itself as `hostile work`
//   hostile exec_fail             CUDA work, then an exec that fails; CUDA work again; exits 0
//   hostile vfork_exec            CUDA work, then vfork + execve of /bin/true; CUDA work
//                                 again; exits 0
//   hostile atexit_free           CUDA work, then registers an atexit handler that frees a
//                                 3 MiB buffer (teardown: after main returned); exits 0
//   hostile fill [KIB]            CUDA work, then takes host memory (1 MiB at a time, then
//                                 smaller) until malloc fails, and keeps it but KIB KiB of
//                                 it (default 0): under RLIMIT_AS little or nothing is left
//                                 for nb at exit; exits 0
// Exit status 0 unless something failed (2).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda.h"

extern char** environ;

namespace {

CUfunction kernel() {
  static CUfunction fn = [] {
    if (fake_cuda::use_primary_context() != CUDA_SUCCESS) std::exit(2);
    CUmodule module = nullptr;
    CUfunction f = nullptr;
    const std::string image = fake_cuda::module_image({"hostile_kernel"});
    if (cuModuleLoadData(&module, image.c_str()) != CUDA_SUCCESS ||
        cuModuleGetFunction(&f, module, "hostile_kernel") != CUDA_SUCCESS) {
      std::exit(2);
    }
    return f;
  }();
  return fn;
}

void launch(int n) {
  for (int i = 0; i < n; ++i) {
    if (cuLaunchKernel(kernel(), 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr) != CUDA_SUCCESS) std::exit(2);
  }
}

void cuda_work() {
  std::vector<void*> live;
  for (size_t size : {4096u, 1u << 20, 3u << 20}) {
    void* p = nullptr;
    if (cudaMalloc(&p, size) != cudaSuccess) std::exit(2);
    live.push_back(p);
  }
  launch(50);
  cudaFree(live[0]);
  cudaDeviceSynchronize();
}

void* g_kept = nullptr;
void free_kept() { cudaFree(g_kept); }

int wait_child(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 2;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string mode = argv[1];
  if (mode == "noisy") {
    const std::string noise(63 * 1024, 'x');
    if (write(2, noise.data(), noise.size()) != static_cast<ssize_t>(noise.size())) return 2;
  }
  if (mode == "fork_first") {
    const pid_t child = fork();
    if (child == 0) {
      cuda_work();
      std::exit(0);  // exit, not _exit: its own files are written at exit
    }
    return wait_child(child);
  }
  cuda_work();
  if (mode == "stderr_to" && argc > 2) {
    close(2);
    if (open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644) != 2) return 2;
    if (write(2, "data\n", 5) != 5) return 2;
    launch(10);
  } else if (mode == "busy_exit") {
    const int n = argc > 2 ? std::atoi(argv[2]) : 4;
    for (int i = 0; i < n; ++i) {
      std::thread([] {
        if (fake_cuda::use_primary_context() != CUDA_SUCCESS) std::exit(2);
        for (;;) launch(1);
      }).detach();
    }
    usleep(100000);
  } else if (mode == "fork_after") {
    const pid_t child = fork();
    if (child == 0) {
      launch(5);  // on the fake driver a forked child's calls still work
      std::exit(0);
    }
    if (wait_child(child) != 0) return 2;
  } else if (mode == "exec_self") {
    char work[] = "work";
    char* args[] = {argv[0], work, nullptr};
    execv(argv[0], args);
    return 2;
  } else if (mode == "exec_fail") {
    char* args[] = {const_cast<char*>("/nonexistent/program"), nullptr};
    if (execv(args[0], args) == 0) return 2;
    launch(10);
  } else if (mode == "atexit_free") {
    if (cudaMalloc(&g_kept, 3 << 20) != cudaSuccess) return 2;
    std::atexit(free_kept);  // registered after the first CUDA call: it runs before nb's exit handler
  } else if (mode == "fill") {
    size_t took = 0;
    std::vector<void*> megs;  // the 1 MiB blocks, so that some can be given back
    for (size_t chunk = 1 << 20; chunk >= 64;) {
      void* p = std::malloc(chunk);
      if (p == nullptr) {
        chunk /= 2;
        continue;
      }
      std::memset(p, 1, chunk);
      if (chunk == 1 << 20) megs.push_back(p);
      took += chunk;
    }
    const size_t leave = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
    for (size_t kib = 0; kib < leave && !megs.empty(); kib += 1024) {
      std::free(megs.back());  // 1 MiB blocks are mapped on their own: freeing one unmaps it
      megs.pop_back();
      took -= 1 << 20;
    }
    std::printf("took %zu bytes\n", took);
  } else if (mode == "vfork_exec") {
    const pid_t child = vfork();
    if (child == 0) {
      char* args[] = {const_cast<char*>("/bin/true"), nullptr};
      execve(args[0], args, environ);
      _exit(127);
    }
    if (wait_child(child) != 0) return 2;
    launch(10);
  }
  return 0;
}
