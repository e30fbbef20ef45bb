// Fake CUDA driver, part 3: streams, events, modules and libraries (kernel
// names), launches and graphs.
//
// Nothing runs on a device: a launch validates its arguments and returns,
// and work is "complete" as soon as the call returns, so synchronisation only
// validates its handle. What tests observe is which entry point was called
// with which handles, and the names behind function handles. A tool (the
// fake CUPTI) is told about each kernel a successful launch enqueues: one
// per launch, one per kernel node of a graph launch.
//
// Graphs hold kernel nodes only. Graphs and nodes get ids (1, 2, ... in
// creation order, one counter each) that the tool reports as CUPTI's graphId
// and graphNodeId; an executable graph is a snapshot of its graph's nodes at
// instantiation.
//
// Stream ids (cuStreamGetId), a fixed scheme so tests can predict them:
//   legacy default stream (NULL from a legacy entry point, CU_STREAM_LEGACY): 7
//   streams from cuStreamCreate*: 13, 14, 15, ... in creation order
//   per-thread default stream (NULL from a _ptsz entry point,
//   CU_STREAM_PER_THREAD): 2^32 + n, n = 0, 1, ... in the order in which
//   threads first use theirs
//
// Module images are text: an optional first line "fake-module", then one
// kernel name per line (any bytes but '\n'; empty lines are skipped).
#include "fake_driver_internal.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fake {
namespace {

constexpr unsigned long long kLegacyStreamId = 7;
constexpr unsigned long long kFirstStreamId = 13;
constexpr unsigned long long kPerThreadStreamIdBase = 1ull << 32;

struct Graph;

struct Stream {
    unsigned long long id = 0;
    int device = 0;
    unsigned flags = 0;
    int priority = 0;
    Graph* capture = nullptr;  // between cuStreamBeginCapture and cuStreamEndCapture
};

struct Event {
    unsigned flags = 0;
    bool recorded = false;
    std::chrono::steady_clock::time_point when;
};

// CUfunction and CUkernel handles point at objects that start with the same
// header, so code that receives either (cuLaunchKernel, cuFuncGetName: CUDA 12
// runtimes pass a CUkernel where a CUfunction is expected) can tell them
// apart. The registry below is what decides whether a handle is live; the
// magic only identifies the kind of a live one.
enum class CodeKind : uint32_t { Function = 0x434e5546 /* "FUNC" */, Kernel = 0x4e52454b /* "KERN" */ };
struct CodeHeader {
    CodeKind kind;
    std::string name;
};

struct Module;
struct Library;

struct Function {
    CodeHeader header{CodeKind::Function, {}};
    Module* module = nullptr;
};

struct Kernel {
    CodeHeader header{CodeKind::Kernel, {}};
    Library* library = nullptr;
    Function* function = nullptr;  // its function in the library's module
};

struct Module {
    std::vector<std::unique_ptr<Function>> functions;
    Library* library = nullptr;  // set for the module inside a library
};

struct Library {
    std::unique_ptr<Module> module;
    std::vector<std::unique_ptr<Kernel>> kernels;
};

// What a launch enqueues.
struct KernelLaunch {
    unsigned grid[3] = {1, 1, 1};
    unsigned block[3] = {1, 1, 1};
    unsigned shared_bytes = 0;
    bool cooperative = false;
};

struct GraphNode {
    const void* code = nullptr;  // Function or Kernel
    KernelLaunch launch;
    uint64_t id = 0;
};

struct Graph {
    uint32_t id = 0;
    std::vector<std::unique_ptr<GraphNode>> nodes;
};

// A node as instantiated: the kernel's name is kept, so the executable graph
// does not depend on its module staying loaded.
struct ExecNode {
    std::string kernel_name;
    KernelLaunch launch;
    uint64_t id = 0;
};

struct GraphExec {
    uint32_t graph_id = 0;
    std::vector<ExecNode> nodes;
};

// Live handles. Guarded by lock().
struct Registry {
    std::unordered_map<const void*, std::unique_ptr<Stream>> streams;
    std::unordered_map<const void*, std::unique_ptr<Event>> events;
    std::unordered_map<const void*, std::unique_ptr<Module>> modules;
    std::unordered_map<const void*, std::unique_ptr<Library>> libraries;
    std::unordered_map<const void*, CodeHeader*> code;  // functions and kernels
    std::unordered_map<const void*, std::unique_ptr<Graph>> graphs;
    std::unordered_map<const void*, std::unique_ptr<GraphExec>> execs;
    unsigned long long next_stream_id = kFirstStreamId;
    unsigned long long next_per_thread_id = kPerThreadStreamIdBase;
    uint32_t next_graph_id = 1;
    uint64_t next_graph_node_id = 1;
};

Registry& reg() {
    static Registry* r = new Registry;  // never destroyed, see state() in fake_driver.cpp
    return *r;
}

thread_local unsigned long long t_per_thread_stream_id = 0;

bool is_legacy(CUstream s, bool per_thread) { return s == CU_STREAM_LEGACY || (s == nullptr && !per_thread); }
bool is_per_thread(CUstream s, bool per_thread) { return s == CU_STREAM_PER_THREAD || (s == nullptr && per_thread); }

// Resolves a stream handle; the special ones need a current context. Caller
// must not hold lock().
CUresult resolve_stream(CUstream s, bool per_thread, unsigned long long* id, int* device) {
    if (is_legacy(s, per_thread) || is_per_thread(s, per_thread)) {
        Context* ctx = nullptr;
        if (CUresult rc = current_context(&ctx)) return rc;
        if (device) *device = context_device(ctx);
        if (id) {
            if (is_legacy(s, per_thread)) {
                *id = kLegacyStreamId;
            } else {
                if (t_per_thread_stream_id == 0) {
                    std::lock_guard<std::mutex> g(lock());
                    t_per_thread_stream_id = reg().next_per_thread_id++;
                }
                *id = t_per_thread_stream_id;
            }
        }
        return CUDA_SUCCESS;
    }
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto it = reg().streams.find(s);
    if (it == reg().streams.end()) return CUDA_ERROR_INVALID_HANDLE;
    if (id) *id = it->second->id;
    if (device) *device = it->second->device;
    return CUDA_SUCCESS;
}

// Splits a module image into kernel names.
CUresult parse_image(const void* image, std::vector<std::string>* names) {
    if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const char* text = static_cast<const char*>(image);
    // Refuse real device code (ELF cubin, fatbinary, fatbinary wrapper)
    // rather than misreading it. Their magics contain no NUL byte, so only
    // look when the text is at least that long.
    if (strnlen(text, 4) == 4) {
        uint32_t magic = 0;
        std::memcpy(&magic, text, sizeof magic);
        if (std::memcmp(text, "\x7f" "ELF", 4) == 0 || magic == 0xba55ed50u || magic == 0x466243b1u)
            return CUDA_ERROR_INVALID_IMAGE;
    }
    std::istringstream in{std::string(text)};
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
        if (first && line == "fake-module") {
            first = false;
            continue;
        }
        first = false;
        if (!line.empty()) names->push_back(line);
    }
    return CUDA_SUCCESS;
}

CUresult read_image_file(const char* path, std::string* out) {
    if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::ifstream f(path, std::ios::binary);
    if (!f) return CUDA_ERROR_FILE_NOT_FOUND;
    std::ostringstream buf;
    buf << f.rdbuf();
    *out = buf.str();
    return CUDA_SUCCESS;
}

// Builds a module and registers its functions. Caller holds lock().
Module* make_module(const std::vector<std::string>& names, Library* library) {
    auto mod = std::make_unique<Module>();
    mod->library = library;
    for (const std::string& name : names) {
        auto fn = std::make_unique<Function>();
        fn->header.name = name;
        fn->module = mod.get();
        reg().code[fn.get()] = &fn->header;
        mod->functions.push_back(std::move(fn));
    }
    Module* raw = mod.get();
    if (library == nullptr)
        reg().modules[raw] = std::move(mod);
    else
        library->module = std::move(mod);
    return raw;
}

void forget_module_code(const Module& mod) {
    for (const auto& fn : mod.functions) reg().code.erase(fn.get());
}

// The live function or kernel behind a handle, or nullptr. Caller holds lock().
CodeHeader* find_code(const void* handle) {
    auto it = reg().code.find(handle);
    return it == reg().code.end() ? nullptr : it->second;
}

CUresult load_module(CUmodule* module, const void* image) {
    if (module == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::vector<std::string> names;
    if (CUresult rc = parse_image(image, &names)) return rc;
    std::lock_guard<std::mutex> g(lock());
    *module = reinterpret_cast<CUmodule>(make_module(names, nullptr));
    return CUDA_SUCCESS;
}

CUresult load_library(CUlibrary* library, const void* image) {
    if (library == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::vector<std::string> names;
    if (CUresult rc = parse_image(image, &names)) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto lib = std::make_unique<Library>();
    Module* mod = make_module(names, lib.get());
    for (const auto& fn : mod->functions) {
        auto k = std::make_unique<Kernel>();
        k->header.name = fn->header.name;
        k->library = lib.get();
        k->function = fn.get();
        reg().code[k.get()] = &k->header;
        lib->kernels.push_back(std::move(k));
    }
    *library = reinterpret_cast<CUlibrary>(lib.get());
    reg().libraries[lib.get()] = std::move(lib);
    return CUDA_SUCCESS;
}

KernelLaunch make_launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned shared_bytes, bool cooperative = false) {
    KernelLaunch l;
    l.grid[0] = gx;
    l.grid[1] = gy;
    l.grid[2] = gz;
    l.block[0] = bx;
    l.block[1] = by;
    l.block[2] = bz;
    l.shared_bytes = shared_bytes;
    l.cooperative = cooperative;
    return l;
}

// Tells the tool about one kernel enqueued on a stream (already checked).
void report_kernel(const std::string& name, const KernelLaunch& l, CUstream stream, bool per_thread,
                   uint32_t graph_id = 0, uint64_t graph_node_id = 0) {
    FakeCudaWork w{};
    w.kind = FAKE_CUDA_WORK_KERNEL;
    if (stream_info(stream, per_thread, &w.stream_id, &w.device) != CUDA_SUCCESS) return;
    w.context = primary_context(w.device);
    w.kernel_name = name.c_str();
    for (int i = 0; i < 3; ++i) {
        w.grid[i] = l.grid[i];
        w.block[i] = l.block[i];
    }
    w.dynamic_shared_bytes = l.shared_bytes;
    w.cooperative = l.cooperative;
    w.graph_id = graph_id;
    w.graph_node_id = graph_node_id;
    report_work(w);
}

// Checks what every launch API checks. Kernels run nowhere, so nothing else happens.
CUresult check_launch(const void* f, const KernelLaunch& l, CUstream stream, bool per_thread) {
    if (CUresult rc = check_init()) return rc;
    {
        std::lock_guard<std::mutex> g(lock());
        if (f == nullptr || find_code(f) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    }
    const unsigned *grid = l.grid, *block = l.block;
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || block[0] == 0 || block[1] == 0 || block[2] == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (static_cast<unsigned long long>(block[0]) * block[1] * block[2] > 1024 || block[2] > 64 || grid[1] > 65535 ||
        grid[2] > 65535)
        return CUDA_ERROR_INVALID_VALUE;
    return check_stream(stream, per_thread);
}

// A launch on a stream being captured adds a kernel node to the capture's
// graph instead of running. True if it did.
bool capture_node(const void* f, const KernelLaunch& l, CUstream stream, bool per_thread) {
    if (is_legacy(stream, per_thread) || is_per_thread(stream, per_thread)) return false;
    std::lock_guard<std::mutex> g(lock());
    auto it = reg().streams.find(stream);
    if (it == reg().streams.end() || it->second->capture == nullptr) return false;
    auto n = std::make_unique<GraphNode>();
    n->code = f;
    n->launch = l;
    n->id = reg().next_graph_node_id++;
    it->second->capture->nodes.push_back(std::move(n));
    return true;
}

// FAKE_CUDA_SLOW_LAUNCH=N:MS: the Nth kernel launch of the process (from 1)
// waits MS ms after its kernel has run, before it returns: a thread the
// scheduler takes away between the work and the caller's next instruction,
// as a loaded machine does (a tool must not give up on that call's record).
void maybe_slow_launch() {
    static const std::pair<unsigned long long, unsigned long long> slow = [] {
        const char* v = std::getenv("FAKE_CUDA_SLOW_LAUNCH");
        unsigned long long n = 0, ms = 0;
        if (v == nullptr || std::sscanf(v, "%llu:%llu", &n, &ms) != 2) return std::make_pair(0ull, 0ull);
        return std::make_pair(n, ms);
    }();
    static std::atomic<unsigned long long> launches{0};
    if (slow.first == 0) return;
    if (launches.fetch_add(1) + 1 == slow.first) std::this_thread::sleep_for(std::chrono::milliseconds(slow.second));
}

// Checks a launch and, when it succeeds, reports its kernel.
CUresult enqueue_kernel(const void* f, const KernelLaunch& l, CUstream stream, bool per_thread) {
    if (CUresult rc = check_launch(f, l, stream, per_thread)) return rc;
    if (capture_node(f, l, stream, per_thread)) return CUDA_SUCCESS;  // a node of the graph, no work
    if (tool_watching()) {
        std::string name;
        {
            std::lock_guard<std::mutex> g(lock());
            if (const CodeHeader* h = find_code(f)) name = h->name;
        }
        report_kernel(name, l, stream, per_thread);
    }
    maybe_slow_launch();
    return CUDA_SUCCESS;
}

CUresult launch_kernel(CUfunction f, const KernelLaunch& l, CUstream stream, void** params, void** extra,
                       bool per_thread) {
    if (params != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
    return enqueue_kernel(f, l, stream, per_thread);
}

CUresult launch_kernel_ex(const CUlaunchConfig* config, CUfunction f, void** params, void** extra, bool per_thread) {
    if (config == nullptr || (params != nullptr && extra != nullptr)) return CUDA_ERROR_INVALID_VALUE;
    if (config->numAttrs != 0 && config->attrs == nullptr) return CUDA_ERROR_INVALID_VALUE;
    bool cooperative = false;
    for (unsigned i = 0; i < config->numAttrs; ++i)
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && config->attrs[i].value.cooperative != 0)
            cooperative = true;
    return enqueue_kernel(f,
                          make_launch(config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                                      config->blockDimY, config->blockDimZ, config->sharedMemBytes, cooperative),
                          config->hStream, per_thread);
}

// Host functions run at once, on the calling thread: the stream has no
// earlier work to wait for.
CUresult launch_host_func(CUstream stream, CUhostFn fn, void* user_data, bool per_thread) {
    if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_stream(stream, per_thread)) return rc;
    fn(user_data);
    return CUDA_SUCCESS;
}

// The nodes run one after the other on the stream, in the order they were
// added (the fake's graphs are chains as far as timing goes).
CUresult graph_launch(CUgraphExec exec, CUstream stream, bool per_thread) {
    if (CUresult rc = check_init()) return rc;
    const bool watched = tool_watching();
    GraphExec snapshot;  // copied only for the tool
    {
        std::lock_guard<std::mutex> g(lock());
        auto it = reg().execs.find(exec);
        if (it == reg().execs.end()) return CUDA_ERROR_INVALID_HANDLE;
        if (watched) snapshot = *it->second;
    }
    if (CUresult rc = check_stream(stream, per_thread)) return rc;
    if (stream_capturing(stream, per_thread)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // no child graphs
    for (const ExecNode& n : snapshot.nodes)
        report_kernel(n.kernel_name, n.launch, stream, per_thread, snapshot.graph_id, n.id);
    return CUDA_SUCCESS;
}

CUresult add_kernel_node(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t num_deps,
                         const void* code, const KernelLaunch& launch) {
    if (node == nullptr || (num_deps != 0 && deps == nullptr)) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto git = reg().graphs.find(graph);
    if (git == reg().graphs.end()) return CUDA_ERROR_INVALID_VALUE;
    if (code == nullptr || find_code(code) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    auto n = std::make_unique<GraphNode>();
    n->code = code;
    n->launch = launch;
    n->id = reg().next_graph_node_id++;
    *node = reinterpret_cast<CUgraphNode>(n.get());
    git->second->nodes.push_back(std::move(n));
    return CUDA_SUCCESS;
}

CUresult stream_sync(CUstream stream, bool per_thread) { return check_stream(stream, per_thread); }

CUresult stream_get_ctx(CUstream stream, CUcontext* pctx, bool per_thread) {
    if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    int device = 0;
    if (CUresult rc = stream_device(stream, per_thread, &device)) return rc;
    *pctx = primary_context(device);
    return CUDA_SUCCESS;
}

CUresult stream_get_id(CUstream stream, unsigned long long* id, bool per_thread) {
    if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return resolve_stream(stream, per_thread, id, nullptr);
}

CUresult stream_wait_event(CUstream stream, CUevent event, unsigned flags, bool per_thread) {
    if (flags & ~static_cast<unsigned>(CU_EVENT_WAIT_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_stream(stream, per_thread)) return rc;
    std::lock_guard<std::mutex> g(lock());
    return reg().events.count(event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult event_record(CUevent event, CUstream stream, bool per_thread) {
    if (CUresult rc = check_stream(stream, per_thread)) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto it = reg().events.find(event);
    if (it == reg().events.end()) return CUDA_ERROR_INVALID_HANDLE;
    it->second->recorded = true;
    it->second->when = std::chrono::steady_clock::now();
    return CUDA_SUCCESS;
}

CUresult event_elapsed(float* ms, CUevent start, CUevent end) {
    if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto a = reg().events.find(start), b = reg().events.find(end);
    if (a == reg().events.end() || b == reg().events.end()) return CUDA_ERROR_INVALID_HANDLE;
    if ((a->second->flags | b->second->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    if (!a->second->recorded || !b->second->recorded) return CUDA_ERROR_INVALID_HANDLE;
    *ms = std::chrono::duration<float, std::milli>(b->second->when - a->second->when).count();
    return CUDA_SUCCESS;
}

CUresult stream_create(CUstream* phStream, unsigned flags, int priority) {
    if (phStream == nullptr || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    Context* ctx = nullptr;
    if (CUresult rc = current_context(&ctx)) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto s = std::make_unique<Stream>();
    s->id = reg().next_stream_id++;
    s->device = context_device(ctx);
    s->flags = flags;
    s->priority = priority;
    *phStream = reinterpret_cast<CUstream>(s.get());
    reg().streams[s.get()] = std::move(s);
    return CUDA_SUCCESS;
}

}  // namespace

// --- Internal API -------------------------------------------------------------

CUresult check_stream(CUstream stream, bool per_thread) { return resolve_stream(stream, per_thread, nullptr, nullptr); }

bool stream_capturing(CUstream stream, bool per_thread) {
    if (is_legacy(stream, per_thread) || is_per_thread(stream, per_thread)) return false;
    std::lock_guard<std::mutex> g(lock());
    auto it = reg().streams.find(stream);
    return it != reg().streams.end() && it->second->capture != nullptr;
}

CUresult stream_device(CUstream stream, bool per_thread, int* device) {
    return resolve_stream(stream, per_thread, nullptr, device);
}

CUresult stream_info(CUstream stream, bool per_thread, unsigned long long* id, int* device) {
    return resolve_stream(stream, per_thread, id, device);
}

}  // namespace fake

using namespace fake;

// ----------------------------------------------------------------------------
// Exported entry points (see the note in fake_driver.cpp about linkage).
// ----------------------------------------------------------------------------

// --- Streams -----------------------------------------------------------------

CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int Flags) {
    FAKE_ENTRY();
    return stream_create(phStream, Flags, 0);
}

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
    FAKE_ENTRY();
    // Valid priorities are [-5, 0] (lower is higher); others are clamped, as documented.
    return stream_create(phStream, flags, priority < -5 ? -5 : (priority > 0 ? 0 : priority));
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    return reg().streams.erase(hStream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

// --- Stream capture (created streams only; kernels become nodes, copies and
// sets are not reported) --------------------------------------------------------

namespace {
// Into a new graph, or (cuStreamBeginCaptureToGraph) into `into`.
CUresult begin_capture(CUstream s, unsigned mode, bool per_thread, CUgraph into = nullptr) {
    if (mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_stream(s, per_thread)) return rc;
    if (is_legacy(s, per_thread) || is_per_thread(s, per_thread)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    std::lock_guard<std::mutex> g(lock());
    Stream& st = *reg().streams.at(s);
    if (st.capture != nullptr) return CUDA_ERROR_ILLEGAL_STATE;
    if (into != nullptr) {
        auto it = reg().graphs.find(into);
        if (it == reg().graphs.end()) return CUDA_ERROR_INVALID_VALUE;
        st.capture = it->second.get();
        return CUDA_SUCCESS;
    }
    auto graph = std::make_unique<Graph>();
    graph->id = reg().next_graph_id++;
    st.capture = graph.get();
    reg().graphs[graph.get()] = std::move(graph);
    return CUDA_SUCCESS;
}

CUresult end_capture(CUstream s, CUgraph* out, bool per_thread) {
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_stream(s, per_thread)) return rc;
    if (is_legacy(s, per_thread) || is_per_thread(s, per_thread)) return CUDA_ERROR_ILLEGAL_STATE;
    std::lock_guard<std::mutex> g(lock());
    Stream& st = *reg().streams.at(s);
    if (st.capture == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
    *out = reinterpret_cast<CUgraph>(st.capture);
    st.capture = nullptr;
    return CUDA_SUCCESS;
}

CUresult is_capturing(CUstream s, CUstreamCaptureStatus* status, bool per_thread) {
    if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_stream(s, per_thread)) return rc;
    *status = stream_capturing(s, per_thread) ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}
}  // namespace

// --- Events ----------------------------------------------------------------------

CUresult CUDAAPI cuEventCreate(CUevent* phEvent, unsigned int Flags) {
    FAKE_ENTRY();
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (phEvent == nullptr || (Flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
    Context* ctx = nullptr;
    if (CUresult rc = current_context(&ctx)) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto e = std::make_unique<Event>();
    e->flags = Flags;
    *phEvent = reinterpret_cast<CUevent>(e.get());
    reg().events[e.get()] = std::move(e);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    return reg().events.count(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    return reg().events.count(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    return reg().events.erase(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

// Elapsed time is real host time between the two records.
CUresult CUDAAPI cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
    FAKE_ENTRY();
    return event_elapsed(pMilliseconds, hStart, hEnd);
}
CUresult CUDAAPI cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
    FAKE_ENTRY();
    return event_elapsed(pMilliseconds, hStart, hEnd);
}

// --- Modules, libraries, names -------------------------------------------------------

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
    FAKE_ENTRY();
    return load_module(module, image);
}

CUresult CUDAAPI cuModuleLoad(CUmodule* module, const char* fname) {
    FAKE_ENTRY();
    std::string image;
    if (CUresult rc = read_image_file(fname, &image)) return rc;
    return load_module(module, image.c_str());
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto it = reg().modules.find(hmod);
    if (it == reg().modules.end()) return CUDA_ERROR_INVALID_HANDLE;
    forget_module_code(*it->second);
    reg().modules.erase(it);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
    FAKE_ENTRY();
    if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto it = reg().modules.find(hmod);
    if (it == reg().modules.end()) return CUDA_ERROR_INVALID_HANDLE;
    for (const auto& fn : it->second->functions) {
        if (fn->header.name == name) {
            *hfunc = reinterpret_cast<CUfunction>(fn.get());
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option*, void**, unsigned int,
                                   CUlibraryOption*, void**, unsigned int) {
    FAKE_ENTRY();
    return load_library(library, code);
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary* library, const char* fileName, CUjit_option*, void**, unsigned int,
                                       CUlibraryOption*, void**, unsigned int) {
    FAKE_ENTRY();
    std::string image;
    if (CUresult rc = read_image_file(fileName, &image)) return rc;
    return load_library(library, image.c_str());
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary library) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto it = reg().libraries.find(library);
    if (it == reg().libraries.end()) return CUDA_ERROR_INVALID_HANDLE;
    for (const auto& k : it->second->kernels) reg().code.erase(k.get());
    forget_module_code(*it->second->module);
    reg().libraries.erase(it);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
    FAKE_ENTRY();
    if (pKernel == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto it = reg().libraries.find(library);
    if (it == reg().libraries.end()) return CUDA_ERROR_INVALID_HANDLE;
    for (const auto& k : it->second->kernels) {
        if (k->header.name == name) {
            *pKernel = reinterpret_cast<CUkernel>(k.get());
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
    FAKE_ENTRY();
    if (pMod == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto it = reg().libraries.find(library);
    if (it == reg().libraries.end()) return CUDA_ERROR_INVALID_HANDLE;
    *pMod = reinterpret_cast<CUmodule>(it->second->module.get());
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
    FAKE_ENTRY();
    if (pFunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Context* ctx = nullptr;  // a CUfunction belongs to a context: one must be current
    if (CUresult rc = current_context(&ctx)) return rc;
    std::lock_guard<std::mutex> g(lock());
    CodeHeader* h = find_code(kernel);
    if (h == nullptr || h->kind != CodeKind::Kernel) return CUDA_ERROR_INVALID_HANDLE;
    *pFunc = reinterpret_cast<CUfunction>(reinterpret_cast<Kernel*>(kernel)->function);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetLibrary(CUlibrary* pLib, CUkernel kernel) {
    FAKE_ENTRY();
    if (pLib == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    CodeHeader* h = find_code(kernel);
    if (h == nullptr || h->kind != CodeKind::Kernel) return CUDA_ERROR_INVALID_HANDLE;
    *pLib = reinterpret_cast<CUlibrary>(reinterpret_cast<Kernel*>(kernel)->library);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) {
    FAKE_ENTRY();
    if (hmod == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    CodeHeader* h = find_code(hfunc);
    if (h == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    const Function* fn = h->kind == CodeKind::Function ? reinterpret_cast<Function*>(hfunc)
                                                       : reinterpret_cast<Kernel*>(hfunc)->function;
    *hmod = reinterpret_cast<CUmodule>(fn->module);
    return CUDA_SUCCESS;
}

// Accepts a CUkernel too, as CUDA 12 runtimes launch kernels that way.
CUresult CUDAAPI cuFuncGetName(const char** name, CUfunction hfunc) {
    FAKE_ENTRY();
    if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    CodeHeader* h = find_code(hfunc);
    if (h == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    *name = h->name.c_str();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetName(const char** name, CUkernel hfunc) {
    FAKE_ENTRY();
    if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    CodeHeader* h = find_code(hfunc);
    if (h == nullptr || h->kind != CodeKind::Kernel) return CUDA_ERROR_INVALID_HANDLE;
    *name = h->name.c_str();
    return CUDA_SUCCESS;
}

// --- Graphs (kernel nodes only) ----------------------------------------------------

CUresult CUDAAPI cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
    FAKE_ENTRY();
    if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto graph = std::make_unique<Graph>();
    graph->id = reg().next_graph_id++;
    *phGraph = reinterpret_cast<CUgraph>(graph.get());
    reg().graphs[graph.get()] = std::move(graph);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                         size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
    FAKE_ENTRY();
    if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const void* code = nodeParams->func ? static_cast<const void*>(nodeParams->func)
                                        : static_cast<const void*>(nodeParams->kern);
    const CUDA_KERNEL_NODE_PARAMS& p = *nodeParams;
    return add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies, code,
                           make_launch(p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ,
                                       p.sharedMemBytes));
}

// CUDA 10.0 ABI: the parameter struct has no kern / ctx fields.
CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                      size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
    FAKE_ENTRY();
    if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const CUDA_KERNEL_NODE_PARAMS_v1& p = *nodeParams;
    return add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies, p.func,
                           make_launch(p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ,
                                       p.sharedMemBytes));
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long) {
    FAKE_ENTRY();
    if (phGraphExec == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto it = reg().graphs.find(hGraph);
    if (it == reg().graphs.end()) return CUDA_ERROR_INVALID_VALUE;
    auto exec = std::make_unique<GraphExec>();
    exec->graph_id = it->second->id;
    for (const auto& node : it->second->nodes) {
        const CodeHeader* h = find_code(node->code);  // NULL if its module was unloaded since
        exec->nodes.push_back({h ? h->name : std::string(), node->launch, node->id});
    }
    *phGraphExec = reinterpret_cast<CUgraphExec>(exec.get());
    reg().execs[exec.get()] = std::move(exec);
    return CUDA_SUCCESS;
}

// --- Legacy / per-thread pairs (fake_twins.h): stream synchronize, query, ids,
// waits and captures, event records, launches, graph launches ---------------------

FAKE_DRIVER_EXEC_TWINS(FAKE_DEFINE_DRIVER_TWIN)

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    return reg().execs.erase(hGraphExec) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    return reg().graphs.erase(hGraph) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
