/* CUPTI used directly, without nb: its kernel, copy and set activity, the
 * floor of what any CUPTI-based tracer costs a program. Switched on and off
 * inside one process, so that its cost can be paired against the same
 * process without it (bench/workloads/inprocess.py through ctypes,
 * launch_loop.cu linked with it).
 *
 *   int nbb_cupti_on(const char* flags)   comma list:
 *     act    CONCURRENT_KERNEL + MEMCPY + MEMSET activity, as nb enables
 *     ts     our timestamp callback (CLOCK_MONOTONIC), as nb registers
 *     cb     a callback subscription on the runtime and driver launch, as
 *            nb's NB_CUPTI_JOIN=callback makes (the order join makes none)
 *     flush  cuptiActivityFlushAll every 250 ms from a helper thread, as
 *            nb's collector does
 *   int nbb_cupti_off(void)               the kinds (and callbacks) off again
 *   long nbb_cupti_records(void)          activity records delivered so far
 * Each returns 0 or the first CUPTI error. Buffers and callbacks are set up
 * at the first nbb_cupti_on and stay; on and off only enable and disable.
 *
 *   gcc -O2 -shared -fPIC -o libnbb_cupti_floor.so cupti_floor.c -lcupti   (bench/nbbench carry)
 */
#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_long g_records;
static atomic_int g_flush_on;
static int g_ready, g_cb, g_flush;
static CUpti_SubscriberHandle g_sub;

static void CUPTIAPI request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = aligned_alloc(8, 4 << 20);
  *size = 4 << 20;
  *max_records = 0;
}

static void CUPTIAPI complete(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  (void)ctx, (void)stream, (void)size;
  CUpti_Activity* r = NULL;
  long n = 0;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) ++n;
  atomic_fetch_add(&g_records, n);
  free(buffer);
}

static uint64_t CUPTIAPI host_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static __thread uint32_t t_corr;
static void CUPTIAPI on_api(void* data, CUpti_CallbackDomain d, CUpti_CallbackId id, const void* info) {
  (void)data, (void)d, (void)id;
  t_corr = ((const CUpti_CallbackData*)info)->correlationId;
}

static void* flusher(void* arg) {
  (void)arg;
  for (;;) {
    usleep(250000);
    if (atomic_load(&g_flush_on)) cuptiActivityFlushAll(0);
  }
  return NULL;
}

static int has(const char* flags, const char* f) {
  size_t n = strlen(f);
  for (const char* p = flags; (p = strstr(p, f)) != NULL; p += n)
    if ((p == flags || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return 1;
  return 0;
}

static int kinds(int on) {
  CUptiResult (*f)(CUpti_ActivityKind) = on ? cuptiActivityEnable : cuptiActivityDisable;
  int rc = f(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (!rc) rc = f(CUPTI_ACTIVITY_KIND_MEMCPY);
  if (!rc) rc = f(CUPTI_ACTIVITY_KIND_MEMSET);
  if (!rc && g_cb) rc = cuptiEnableCallback(on, g_sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                                            CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  if (!rc && g_cb) rc = cuptiEnableCallback(on, g_sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  atomic_store(&g_flush_on, on && g_flush);
  if (!on && !rc) rc = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  return rc;
}

int nbb_cupti_on(const char* flags) {
  if (!g_ready) {
    g_ready = 1;
    g_cb = has(flags, "cb");
    g_flush = has(flags, "flush");
    if (has(flags, "ts")) cuptiActivityRegisterTimestampCallback(host_ns);
    int rc = cuptiActivityRegisterCallbacks(request, complete);
    if (!rc && g_cb) rc = cuptiSubscribe(&g_sub, on_api, NULL);
    if (rc) return rc;
    pthread_t t;
    if (g_flush) pthread_create(&t, NULL, flusher, NULL);
  }
  return kinds(1);
}

int nbb_cupti_off(void) { return kinds(0); }

long nbb_cupti_records(void) { return atomic_load(&g_records); }
