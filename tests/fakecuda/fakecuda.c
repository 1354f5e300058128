/*
 * fakecuda.c: a fake libcuda for testing fastcopy._cuda without a GPU.
 *
 * Built by tests/test_cuda_fake.py with `gcc -shared -fPIC` and selected
 * through $FASTCOPY_LIBCUDA.  The tests load the same file with ctypes, which
 * gives them this very instance (dlopen of one path maps it once), so they
 * drive it through the fake_* functions at the bottom.
 *
 * What it models
 * - "Device memory" is host memory: a CUdeviceptr is a host address, and a
 *   copy that is not being captured happens at once (memcpy).
 * - Driver version: fake_configure(version, ndev, init_rc) or
 *   $FAKECUDA_VERSION (default 13000).  Compiled with -DFAKECUDA_11 it
 *   exports only the 11.x cuGetProcAddress (no symbolStatus argument).
 * - cuGetProcAddress resolves like the real one: the newest variant whose
 *   version is <= min(requested, driver); cuMemcpyBatchAsync has the 12.8
 *   ABI (failIdx) and the 13.0 ABI.  Every other entry point is static, so
 *   cuGetProcAddress is the only way to reach it.
 * - Rules of the real API that fastcopy must respect: cuInit first; a
 *   current context for stream, event and copy calls; streams belong to the
 *   device of the current context; the batch API rejects the legacy stream
 *   (NULL or CU_STREAM_LEGACY), an empty batch, bad attribute indices, an
 *   invalid srcAccessOrder, zero sizes and NULL pointers, and cannot be
 *   captured (doing so invalidates the capture); capture is per stream, and
 *   the legacy stream cannot be used while a global-mode capture is active.
 * - Every call is counted (fake_count) and stream/event/copy calls are
 *   logged (fake_log) in a compact form, e.g.
 *   "record(e1,L);wait(s1,e1);batch13(3,s1);record(e2,s1);wait(L,e2)".
 * - fake_fail(name, nth, code): the nth call of `name` from now returns code.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
    OK = 0, E_INVALID_VALUE = 1, E_OUT_OF_MEMORY = 2, E_NOT_INITIALIZED = 3,
    E_NO_DEVICE = 100, E_INVALID_DEVICE = 101, E_INVALID_CONTEXT = 201,
    E_INVALID_HANDLE = 400, E_NOT_FOUND = 500, E_ILLEGAL_ADDRESS = 700,
    E_NOT_SUPPORTED = 801, E_CAPTURE_UNSUPPORTED = 900, E_CAPTURE_INVALIDATED = 901,
    E_CAPTURE_IMPLICIT = 906,
};

#define MAGIC_CTX 0x43545821u
#define MAGIC_STREAM 0x53545221u
#define MAGIC_EVENT 0x45564e21u
#define MAXDEV 8

struct fctx { unsigned magic; int device; };
struct fstream { unsigned magic; int id; int device; int capture; int global; };
struct fevent { unsigned magic; int id; int device; };

typedef struct { int type; int id; } MemLoc;
typedef struct { int srcAccessOrder; MemLoc srcLocHint; MemLoc dstLocHint; unsigned flags; } MemcpyAttr;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_version = 0;            /* 0: not configured yet */
static int g_ndev = 1;
static int g_init_rc = OK;
static int g_inited = 0;
static unsigned long long g_last_gpa_flags = 0xFFFF;
static int g_next_id = 1;
static struct fctx g_ctx[MAXDEV];
static int g_retained[MAXDEV];
static __thread struct fctx *t_stack[16];
static __thread int t_depth = 0;

#define LOGCAP 65536
static char g_log[LOGCAP];
static size_t g_loglen = 0;

#define MAXNAMES 64
static struct { char name[48]; long count; long fail_at; int fail_code; } g_calls[MAXNAMES];
static int g_ncalls = 0;

static void
configure_from_env(void)
{
    if (g_version == 0) {
        const char *v = getenv("FAKECUDA_VERSION");
#ifdef FAKECUDA_11
        g_version = v ? atoi(v) : 11080;
#else
        g_version = v ? atoi(v) : 13000;
#endif
        v = getenv("FAKECUDA_DEVICES");
        g_ndev = v ? atoi(v) : 1;
        if (g_ndev > MAXDEV)
            g_ndev = MAXDEV;
    }
}

static void
logf_(const char *fmt, ...)
{
    va_list ap;
    if (g_loglen + 128 >= LOGCAP)
        return;
    if (g_loglen)
        g_log[g_loglen++] = ';';
    va_start(ap, fmt);
    g_loglen += (size_t)vsnprintf(g_log + g_loglen, LOGCAP - g_loglen, fmt, ap);
    va_end(ap);
}

/* Counts the call; returns the injected failure code, or OK. */
static CUresult
enter(const char *name)
{
    int i;
    for (i = 0; i < g_ncalls; i++)
        if (strcmp(g_calls[i].name, name) == 0)
            break;
    if (i == g_ncalls) {
        if (g_ncalls == MAXNAMES)
            return OK;
        snprintf(g_calls[i].name, sizeof(g_calls[i].name), "%s", name);
        g_ncalls++;
    }
    g_calls[i].count++;
    if (g_calls[i].fail_at > 0 && --g_calls[i].fail_at == 0)
        return g_calls[i].fail_code;
    return OK;
}

#define ENTER(name, needs_init)                                   \
    CUresult rc_;                                                 \
    pthread_mutex_lock(&g_lock);                                  \
    configure_from_env();                                         \
    rc_ = enter(name);                                            \
    if (rc_ == OK && (needs_init) && !g_inited)                   \
        rc_ = E_NOT_INITIALIZED;                                  \
    if (rc_ != OK) { pthread_mutex_unlock(&g_lock); return rc_; }
#define RETURN(x) do { CUresult r_ = (x); pthread_mutex_unlock(&g_lock); return r_; } while (0)

static struct fctx *
current(void)
{
    return t_depth ? t_stack[t_depth - 1] : NULL;
}

static int
is_legacy(void *s)
{
    return s == NULL || s == (void *)0x1;
}

static struct fstream *g_streams[256];
static int g_nstreams = 0;

static int
global_capture_active(void)
{
    for (int i = 0; i < g_nstreams; i++)
        if (g_streams[i]->capture == 1 && g_streams[i]->global)
            return 1;
    return 0;
}

/* Validates a stream handle against the current context.  OK or error;
 * *name gets its log name. */
static CUresult
check_stream(void *h, struct fstream **out, char *name, size_t n)
{
    struct fctx *c = current();
    *out = NULL;
    if (c == NULL)
        return E_INVALID_CONTEXT;
    if (is_legacy(h)) {
        snprintf(name, n, "L");
        return OK;
    }
    if (h == (void *)0x2) {
        snprintf(name, n, "P");
        return OK;
    }
    for (int i = 0; i < g_nstreams; i++) {
        if ((void *)g_streams[i] == h) {
            if (g_streams[i]->magic != MAGIC_STREAM)
                return E_INVALID_HANDLE;
            if (g_streams[i]->device != c->device)
                return E_INVALID_HANDLE;
            *out = g_streams[i];
            snprintf(name, n, "s%d", g_streams[i]->id);
            return OK;
        }
    }
    return E_INVALID_HANDLE;
}

/* -------------------------------------------------------------------- */
/* Entry points reached through cuGetProcAddress                         */
/* -------------------------------------------------------------------- */

static CUresult
f_cuInit(unsigned flags)
{
    ENTER("cuInit", 0);
    if (flags != 0)
        RETURN(E_INVALID_VALUE);
    if (g_init_rc != OK)
        RETURN(g_init_rc);
    if (g_ndev <= 0)
        RETURN(E_NO_DEVICE);
    g_inited = 1;
    RETURN(OK);
}

static CUresult
f_cuGetErrorName(CUresult e, const char **s)
{
    static const struct { int code; const char *name; } names[] = {
        {OK, "CUDA_SUCCESS"}, {E_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
        {E_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
        {E_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
        {E_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"}, {E_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
        {E_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
        {E_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"}, {E_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
        {E_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
        {E_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
        {E_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
        {E_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
        {E_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"},
    };
    ENTER("cuGetErrorName", 0);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (names[i].code == e) {
            *s = names[i].name;
            RETURN(OK);
        }
    }
    *s = NULL;
    RETURN(E_INVALID_VALUE);
}

static CUresult
f_cuDeviceGetCount(int *n)
{
    ENTER("cuDeviceGetCount", 1);
    *n = g_ndev;
    RETURN(OK);
}

static CUresult
f_cuDeviceGet(int *dev, int ordinal)
{
    ENTER("cuDeviceGet", 1);
    if (ordinal < 0 || ordinal >= g_ndev)
        RETURN(E_INVALID_DEVICE);
    *dev = ordinal;
    RETURN(OK);
}

static CUresult
f_cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
    ENTER("cuDevicePrimaryCtxRetain", 1);
    if (dev < 0 || dev >= g_ndev)
        RETURN(E_INVALID_DEVICE);
    g_ctx[dev].magic = MAGIC_CTX;
    g_ctx[dev].device = dev;
    g_retained[dev]++;
    *ctx = &g_ctx[dev];
    RETURN(OK);
}

static CUresult
f_cuCtxGetCurrent(void **ctx)
{
    ENTER("cuCtxGetCurrent", 1);
    *ctx = current();
    RETURN(OK);
}

static CUresult
f_cuCtxPushCurrent(void *ctx)
{
    struct fctx *c = ctx;
    ENTER("cuCtxPushCurrent", 1);
    if (c == NULL || c->magic != MAGIC_CTX || t_depth == 16)
        RETURN(E_INVALID_CONTEXT);
    t_stack[t_depth++] = c;
    logf_("push(%d)", c->device);
    RETURN(OK);
}

static CUresult
f_cuCtxPopCurrent(void **ctx)
{
    ENTER("cuCtxPopCurrent", 1);
    if (t_depth == 0)
        RETURN(E_INVALID_CONTEXT);
    t_depth--;
    if (ctx)
        *ctx = t_stack[t_depth];
    logf_("pop");
    RETURN(OK);
}

static CUresult
f_cuStreamCreate(void **out, unsigned flags)
{
    struct fstream *s;
    ENTER("cuStreamCreate", 1);
    if (current() == NULL)
        RETURN(E_INVALID_CONTEXT);
    if (flags & ~1u)
        RETURN(E_INVALID_VALUE);
    if (g_nstreams == 256)
        RETURN(E_OUT_OF_MEMORY);
    s = calloc(1, sizeof(*s));
    s->magic = MAGIC_STREAM;
    s->id = g_next_id++;
    s->device = current()->device;
    g_streams[g_nstreams++] = s;
    *out = s;
    logf_("stream(s%d,%u)", s->id, flags);
    RETURN(OK);
}

static CUresult
f_cuEventCreate(void **out, unsigned flags)
{
    struct fevent *e;
    ENTER("cuEventCreate", 1);
    if (current() == NULL)
        RETURN(E_INVALID_CONTEXT);
    e = calloc(1, sizeof(*e));
    e->magic = MAGIC_EVENT;
    e->id = g_next_id++;
    e->device = current()->device;
    *out = e;
    logf_("event(e%d,%u)", e->id, flags);
    RETURN(OK);
}

static CUresult
f_cuEventRecord(void *ev, void *stream)
{
    struct fevent *e = ev;
    struct fstream *s;
    char sn[16];
    CUresult rc;
    ENTER("cuEventRecord", 1);
    if (e == NULL || e->magic != MAGIC_EVENT)
        RETURN(E_INVALID_HANDLE);
    if ((rc = check_stream(stream, &s, sn, sizeof(sn))) != OK)
        RETURN(rc);
    if (is_legacy(stream) && global_capture_active())
        RETURN(E_CAPTURE_IMPLICIT);
    logf_("record(e%d,%s)", e->id, sn);
    RETURN(OK);
}

static CUresult
f_cuStreamWaitEvent(void *stream, void *ev, unsigned flags)
{
    struct fevent *e = ev;
    struct fstream *s;
    char sn[16];
    CUresult rc;
    ENTER("cuStreamWaitEvent", 1);
    if (e == NULL || e->magic != MAGIC_EVENT)
        RETURN(E_INVALID_HANDLE);
    if ((rc = check_stream(stream, &s, sn, sizeof(sn))) != OK)
        RETURN(rc);
    if (flags != 0)
        RETURN(E_INVALID_VALUE);
    if (is_legacy(stream) && global_capture_active())
        RETURN(E_CAPTURE_IMPLICIT);
    logf_("wait(%s,e%d)", sn, e->id);
    RETURN(OK);
}

static CUresult
f_cuStreamIsCapturing(void *stream, int *status)
{
    struct fstream *s;
    char sn[16];
    CUresult rc;
    ENTER("cuStreamIsCapturing", 1);
    if ((rc = check_stream(stream, &s, sn, sizeof(sn))) != OK)
        RETURN(rc);
    if (is_legacy(stream) && global_capture_active())
        RETURN(E_CAPTURE_IMPLICIT);
    *status = s ? s->capture : 0;
    RETURN(OK);
}

static CUresult
f_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, void *stream)
{
    struct fstream *s;
    char sn[16];
    CUresult rc;
    ENTER("cuMemcpyAsync", 1);
    if ((rc = check_stream(stream, &s, sn, sizeof(sn))) != OK)
        RETURN(rc);
    if (is_legacy(stream) && global_capture_active())
        RETURN(E_CAPTURE_IMPLICIT);
    if (n && (!dst || !src))
        RETURN(E_INVALID_VALUE);
    if (s && s->capture == 2)
        RETURN(E_CAPTURE_INVALIDATED);
    if (s && s->capture == 1) {
        logf_("node(%zu,%s)", n, sn);   /* captured into the graph, not run */
        RETURN(OK);
    }
    if (n)
        memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    logf_("memcpy(%zu,%s)", n, sn);
    RETURN(OK);
}

/* Shared body of both batch ABIs. */
static CUresult
batch(const char *tag, CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
      MemcpyAttr *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, void *stream)
{
    struct fstream *s;
    char sn[16];
    CUresult rc;
    if (failIdx)
        *failIdx = SIZE_MAX;
    if ((rc = check_stream(stream, &s, sn, sizeof(sn))) != OK)
        return rc;
    if (is_legacy(stream))
        return E_INVALID_VALUE;     /* "Must not be legacy NULL stream." */
    if (s && s->capture) {
        s->capture = 2;             /* unsupported in capture: invalidates it */
        return E_CAPTURE_UNSUPPORTED;
    }
    if (count == 0 || !dsts || !srcs || !sizes || !attrs || !attrsIdxs)
        return E_INVALID_VALUE;
    if (numAttrs == 0 || numAttrs > count || attrsIdxs[0] != 0)
        return E_INVALID_VALUE;
    for (size_t k = 0; k < numAttrs; k++) {
        if (k && attrsIdxs[k] <= attrsIdxs[k - 1])
            return E_INVALID_VALUE;
        if (attrsIdxs[k] >= count)
            return E_INVALID_VALUE;
        if (attrs[k].srcAccessOrder < 1 || attrs[k].srcAccessOrder > 3 || attrs[k].flags > 1)
            return E_INVALID_VALUE;
    }
    for (size_t i = 0; i < count; i++) {
        if (sizes[i] == 0 || !dsts[i] || !srcs[i]) {
            if (failIdx)
                *failIdx = i;
            return E_INVALID_VALUE;
        }
    }
    for (size_t i = 0; i < count; i++)
        memmove((void *)(uintptr_t)dsts[i], (const void *)(uintptr_t)srcs[i], sizes[i]);
    logf_("%s(%zu,%s)", tag, count, sn);
    return OK;
}

static CUresult
f_cuMemcpyBatchAsync_v1(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                        MemcpyAttr *attrs, size_t *attrsIdxs, size_t numAttrs,
                        size_t *failIdx, void *stream)
{
    ENTER("cuMemcpyBatchAsync", 1);
    if (failIdx == NULL)
        RETURN(E_INVALID_VALUE);
    RETURN(batch("batch128", dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs,
                 failIdx, stream));
}

static CUresult
f_cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                        MemcpyAttr *attrs, size_t *attrsIdxs, size_t numAttrs, void *stream)
{
    ENTER("cuMemcpyBatchAsync", 1);
    RETURN(batch("batch13", dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs,
                 NULL, stream));
}

/* -------------------------------------------------------------------- */
/* Exported entry points                                                  */
/* -------------------------------------------------------------------- */

CUresult
cuDriverGetVersion(int *v)
{
    ENTER("cuDriverGetVersion", 0);
    if (v == NULL)
        RETURN(E_INVALID_VALUE);
    *v = g_version;
    RETURN(OK);
}

static const struct { const char *name; int version; void *fn; } g_procs[] = {
    {"cuInit", 2000, (void *)f_cuInit},
    {"cuGetErrorName", 6000, (void *)f_cuGetErrorName},
    {"cuDeviceGetCount", 2000, (void *)f_cuDeviceGetCount},
    {"cuDeviceGet", 2000, (void *)f_cuDeviceGet},
    {"cuDevicePrimaryCtxRetain", 7000, (void *)f_cuDevicePrimaryCtxRetain},
    {"cuCtxGetCurrent", 4000, (void *)f_cuCtxGetCurrent},
    {"cuCtxPushCurrent", 4000, (void *)f_cuCtxPushCurrent},
    {"cuCtxPopCurrent", 4000, (void *)f_cuCtxPopCurrent},
    {"cuStreamCreate", 2000, (void *)f_cuStreamCreate},
    {"cuEventCreate", 2000, (void *)f_cuEventCreate},
    {"cuEventRecord", 2000, (void *)f_cuEventRecord},
    {"cuStreamWaitEvent", 3020, (void *)f_cuStreamWaitEvent},
    {"cuStreamIsCapturing", 10000, (void *)f_cuStreamIsCapturing},
    {"cuMemcpyAsync", 4000, (void *)f_cuMemcpyAsync},
    {"cuMemcpyBatchAsync", 12080, (void *)f_cuMemcpyBatchAsync_v1},
    {"cuMemcpyBatchAsync", 13000, (void *)f_cuMemcpyBatchAsync_v2},
};

static CUresult
gpa(const char *symbol, void **pfn, int cudaVersion, unsigned long long flags, int *status)
{
    int best = -1, known = 0;
    int eff = cudaVersion < g_version ? cudaVersion : g_version;
    *pfn = NULL;
    g_last_gpa_flags = flags;
    if (symbol == NULL || flags > 2)
        return E_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(g_procs) / sizeof(g_procs[0]); i++) {
        if (strcmp(g_procs[i].name, symbol) != 0 || g_procs[i].version > g_version)
            continue;
        known = 1;
        if (g_procs[i].version <= eff && (best < 0 || g_procs[i].version > g_procs[best].version))
            best = (int)i;
    }
    if (best < 0) {
        if (status)
            *status = known ? 2 : 1;     /* VERSION_NOT_SUFFICIENT : SYMBOL_NOT_FOUND */
        return E_NOT_FOUND;
    }
    if (status)
        *status = 0;
    *pfn = g_procs[best].fn;
    return OK;
}

#ifndef FAKECUDA_11
CUresult
cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, unsigned long long flags,
                    int *status)
{
    ENTER("cuGetProcAddress", 0);
    RETURN(gpa(symbol, pfn, cudaVersion, flags, status));
}
#endif

CUresult
cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, unsigned long long flags)
{
    ENTER("cuGetProcAddress", 0);
    RETURN(gpa(symbol, pfn, cudaVersion, flags, NULL));
}

/* -------------------------------------------------------------------- */
/* Test controls (ctypes)                                                 */
/* -------------------------------------------------------------------- */

/* Back to a fresh, uninitialised driver of this version.  Objects handed out
 * before are leaked, never freed (the module under test may still hold them). */
void
fake_configure(int version, int ndev, int init_rc)
{
    pthread_mutex_lock(&g_lock);
    g_version = version;
    g_ndev = ndev > MAXDEV ? MAXDEV : ndev;
    g_init_rc = init_rc;
    g_inited = 0;
    g_ncalls = 0;
    memset(g_calls, 0, sizeof(g_calls));
    g_loglen = 0;
    g_log[0] = '\0';
    g_last_gpa_flags = 0xFFFF;
    for (int i = 0; i < g_nstreams; i++)
        g_streams[i]->capture = 0;
    memset(g_retained, 0, sizeof(g_retained));
    pthread_mutex_unlock(&g_lock);
    t_depth = 0;
}

long
fake_count(const char *name)
{
    long n = 0;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_ncalls; i++)
        if (strcmp(g_calls[i].name, name) == 0)
            n = g_calls[i].count;
    pthread_mutex_unlock(&g_lock);
    return n;
}

/* Copies the log into buf (NUL-terminated) and clears it. */
void
fake_take_log(char *buf, size_t n)
{
    pthread_mutex_lock(&g_lock);
    snprintf(buf, n, "%s", g_log);
    g_loglen = 0;
    g_log[0] = '\0';
    pthread_mutex_unlock(&g_lock);
}

void
fake_fail(const char *name, long nth, int code)
{
    pthread_mutex_lock(&g_lock);
    enter(name);                /* registers the name */
    for (int i = 0; i < g_ncalls; i++) {
        if (strcmp(g_calls[i].name, name) == 0) {
            g_calls[i].count--;
            g_calls[i].fail_at = nth;
            g_calls[i].fail_code = code;
        }
    }
    pthread_mutex_unlock(&g_lock);
}

/* A user stream on `device` (as torch would create one); no context needed. */
void *
fake_stream(int device)
{
    struct fstream *s = calloc(1, sizeof(*s));
    pthread_mutex_lock(&g_lock);
    s->magic = MAGIC_STREAM;
    s->id = g_next_id++;
    s->device = device;
    g_streams[g_nstreams++] = s;
    pthread_mutex_unlock(&g_lock);
    return s;
}

/* Capture status of a user stream: 0 none, 1 active, 2 invalidated. */
void
fake_set_capture(void *stream, int status, int global_mode)
{
    struct fstream *s = stream;
    pthread_mutex_lock(&g_lock);
    s->capture = status;
    s->global = global_mode;
    pthread_mutex_unlock(&g_lock);
}

int
fake_get_capture(void *stream)
{
    return ((struct fstream *)stream)->capture;
}

unsigned long long
fake_last_gpa_flags(void)
{
    return g_last_gpa_flags;
}

/* Make device `dev`'s primary context current on this thread (as the CUDA
 * runtime does after cudaSetDevice); -1 clears the stack. */
void
fake_set_current(int dev)
{
    if (dev < 0) {
        t_depth = 0;
        return;
    }
    g_ctx[dev].magic = MAGIC_CTX;
    g_ctx[dev].device = dev;
    t_stack[0] = &g_ctx[dev];
    t_depth = 1;
}

int
fake_ctx_depth(void)
{
    return t_depth;
}
