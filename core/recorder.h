// The one boundary between the shim and the collector.
//
//   shim/       the program's threads: hooks record each call into the
//               thread's ring (ThreadRegistry); nothing else.
//   collector/  its own thread: drains the rings, takes CUPTI's device
//               records, joins them, names stacks, writes the files.
//
// The shim makes one Recorder at the first recorded call and finishes it at
// exit; the Recorder asks the shim, through Host, for the few things only
// the shim can do. Everything else crosses as shared data: the rings, the
// interned names (NameTable, PythonCodes), the settings read at load, and
// the atomics of Control. Tests drive a Recorder with a Host of their own,
// without any preload.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/control.h"
#include "core/cupti_api.h"
#include "core/name_table.h"
#include "core/python_codes.h"
#include "core/settings.h"
#include "core/thread_registry.h"

namespace nb {

// What the collector asks of the shim.
class Host {
 public:
  // A real driver function by name (cuCtxSynchronize, cuDeviceGetName...),
  // or null when libcuda is not loaded: the collector waits for the device
  // and describes it through these at the end of a recording.
  virtual void* driver_function(const char* name) = 0;
  // Called first on each thread the collector starts: the shim never
  // records that thread's calls (CUPTI's, made on its behalf, included).
  virtual void own_thread() = 0;
  // Nothing is left to record until the next SIGUSR2 arms the shim again
  // (NB_TRIGGER), or ever: hooks pass straight through.
  virtual void go_dormant() = 0;
  // Control::exit_signal was set. Called on the collector thread, which has
  // left its loop: write the outputs (Recorder::finish) and end the process
  // as the signal would have.
  virtual void exit_signal(int sig) = 0;
  // The version of the NCCL loaded in the process ("2.21.5"), or "" when
  // none is: a trace's distributedInfo names its backend.
  virtual std::string nccl_version() = 0;

 protected:
  ~Host() = default;
};

struct RecorderSetup {
  const Settings* settings = nullptr;
  ThreadRegistry* registry = nullptr;
  NameTable* names = nullptr;           // kernel and NVTX range names the hooks interned
  const PythonCodes* python = nullptr;  // names of the Python frames in stacks (may be null)
  uint64_t own_code_begin = 0;          // [begin, end) of the shim's code: its frames are cut
  uint64_t own_code_end = 0;            // from the top of every stack
  Control* control = &g_control;
};

// What the shim asks of the collector.
class Recorder {
 public:
  virtual ~Recorder() = default;
  // Device time (NB_DEVICE): loads CUPTI and starts its activity records,
  // before start(). False, with `why`, leaves host calls and memory only.
  virtual bool start_device(std::string& why) = 0;
  // The CUPTI that start_device loaded (null before, or if it failed): the
  // shim's callback join (NB_CUPTI_JOIN=callback) subscribes through it.
  virtual const CuptiApi* cupti() const = 0;
  // Starts the collector thread; false if it could not.
  virtual bool start() = 0;
  // Stops the thread, drains what is left, writes the files, prints the
  // table and where the files are. Idempotent.
  virtual void finish() = 0;
  // The same, for an image about to be replaced by exec: its files are
  // named <prefix><tag>.*, so that the new image's own never meet them.
  virtual void finish_tagged(const std::string& tag) = 0;
  // Armed again after go_dormant: CUPTI's activity back on.
  virtual void resume_device() = 0;
  // The program's own CUPTI client is starting (torch.profiler): take what
  // CUPTI holds of ours and leave CUPTI to it.
  virtual void hand_over_device() = 0;
  // Around a fork (pthread_atfork): nb's threads are let finish what they
  // are doing and hold still, so that none is inside the allocator or
  // another lock the child inherits held; at most a couple of seconds, then
  // the fork goes on regardless. after_fork() in the parent and the child.
  virtual void before_fork() = 0;
  virtual void after_fork() = 0;
};

// Defined by the collector (collector/recorder.cpp).
std::unique_ptr<Recorder> make_recorder(const RecorderSetup& setup, Host& host);

}  // namespace nb
