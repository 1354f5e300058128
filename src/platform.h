/*
 * platform.h: the operating-system services the C core and fastcopy._cuda
 * use, behind one small interface with a POSIX (Linux, macOS) and a Win32
 * implementation.  Nothing else in src/ or cuda/ calls pthreads, mmap,
 * sysconf, dlopen or their Win32 counterparts directly.
 *
 *   threads         FcPlatThread, fc_plat_thread_start/join (copy workers)
 *   locks           fc_plat_mutex_t (statically initialised), fc_plat_once,
 *                   fc_plat_atfork (a no-op where there is no fork())
 *   pages           fc_plat_pages_alloc/free (zeroed, page-aligned, given
 *                   back to the system on free), fc_plat_pages_grow (a
 *                   bigger block with the same contents: mremap on Linux),
 *                   fc_plat_page_size
 *   Linux extras    fc_plat_pages_hint_huge and fc_plat_pages_advise_huge
 *                   (MADV_HUGEPAGE), fc_plat_thp_mode (the kernel's
 *                   transparent-huge-page mode), and, where
 *                   FC_PLAT_HAVE_POPULATE, fc_plat_pages_mapped (mincore)
 *                   and fc_plat_pages_populate (MADV_POPULATE_WRITE); the
 *                   fallbacks do nothing and the callers skip them
 *   CPUs            fc_plat_ncpu: the CPUs this process may run on
 *   stack           where FC_PLAT_HAVE_STACK_BOUNDS, fc_plat_stack_bounds:
 *                   the current thread's stack, for the recursion guard
 *   shared library  fc_plat_dl_open/sym; FC_PLAT_CUDA_DRIVER names the CUDA
 *                   driver (libcuda.so.1, nvcuda.dll)
 *   compiler        FC_PLAT_THREAD_LOCAL, FC_PLAT_FRAME_ADDRESS(), fc_plat_clz64
 *
 * Header-only (static inline): the core's unity build and the separate
 * _cuda extension both include it, and it needs no Python.  It may be
 * included before or after Python.h.  Each function states its contract;
 * none sets a Python exception.
 */
#ifndef FC_PLATFORM_H
#define FC_PLATFORM_H

/* pthread_getattr_np, sched_getaffinity, MAP_ANONYMOUS: pyconfig.h defines
   the same (_GNU_SOURCE 1) when Python.h comes first. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#  define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef _WIN32
#  ifndef WIN32_LEAN_AND_MEAN
#    define WIN32_LEAN_AND_MEAN
#  endif
#  include <windows.h>
#  include <process.h>
#  ifdef _MSC_VER
#    include <intrin.h>
#  endif
#else
#  include <dlfcn.h>
#  include <pthread.h>
#  include <sys/mman.h>
#  include <unistd.h>
#  include <time.h>
#  ifdef __linux__
#    include <sched.h>
#  endif
#endif

#if defined(__GNUC__) || defined(__clang__)
#  define FC_PLAT_FN static inline __attribute__((unused))
#else
#  define FC_PLAT_FN static inline
#endif

/* ------------------------------------------------------------------ */
/* Compiler                                                            */
/* ------------------------------------------------------------------ */

#if defined(_MSC_VER) && !defined(__clang__)
#  define FC_PLAT_THREAD_LOCAL __declspec(thread)
#  define FC_PLAT_FRAME_ADDRESS() ((uintptr_t)_AddressOfReturnAddress())
#else
#  define FC_PLAT_THREAD_LOCAL _Thread_local
#  define FC_PLAT_FRAME_ADDRESS() ((uintptr_t)__builtin_frame_address(0))
#endif

/* Leading zero bits of x != 0. */
FC_PLAT_FN int
fc_plat_clz64(uint64_t x)
{
#if defined(_MSC_VER) && !defined(__clang__)
    unsigned long i;
    _BitScanReverse64(&i, x);
    return 63 - (int)i;
#else
    return __builtin_clzll((unsigned long long)x);
#endif
}

/* ------------------------------------------------------------------ */
/* Threads                                                             */
/* ------------------------------------------------------------------ */

/* One worker thread.  It must stay where it is from start to join (the
   thread reads fn and arg through it). */
typedef struct {
    void (*fn)(void *);
    void *arg;
#ifdef _WIN32
    HANDLE h;
#else
    pthread_t tid;
#endif
} FcPlatThread;

#ifdef _WIN32
FC_PLAT_FN unsigned __stdcall
fc_plat_thread_main(void *p)
{
    FcPlatThread *t = p;
    t->fn(t->arg);
    return 0;
}
#else
FC_PLAT_FN void *
fc_plat_thread_main(void *p)
{
    FcPlatThread *t = p;
    t->fn(t->arg);
    return NULL;
}
#endif

/* Start fn(arg) on a new thread with a stack of about stack bytes (0: the
   system's default).  0 | -1 (not started) */
FC_PLAT_FN int
fc_plat_thread_start(FcPlatThread *t, void (*fn)(void *), void *arg, size_t stack)
{
    t->fn = fn;
    t->arg = arg;
#ifdef _WIN32
    /* _beginthreadex, not CreateThread: the thread may use the C runtime */
    uintptr_t h = _beginthreadex(NULL, (unsigned)stack, fc_plat_thread_main, t,
                                 STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
    if (h == 0) {
        return -1;
    }
    t->h = (HANDLE)h;
    return 0;
#else
    pthread_attr_t attr;
    int have_attr = stack != 0 && pthread_attr_init(&attr) == 0;
    if (have_attr) {
        (void)pthread_attr_setstacksize(&attr, stack);
    }
    int rc = pthread_create(&t->tid, have_attr ? &attr : NULL, fc_plat_thread_main, t);
    if (have_attr) {
        pthread_attr_destroy(&attr);
    }
    return rc == 0 ? 0 : -1;
#endif
}

/* Wait for a started thread to finish. */
FC_PLAT_FN void
fc_plat_thread_join(FcPlatThread *t)
{
#ifdef _WIN32
    WaitForSingleObject(t->h, INFINITE);
    CloseHandle(t->h);
#else
    pthread_join(t->tid, NULL);
#endif
}

/* ------------------------------------------------------------------ */
/* Locks                                                               */
/* ------------------------------------------------------------------ */

#ifdef _WIN32
typedef SRWLOCK fc_plat_mutex_t;
#  define FC_PLAT_MUTEX_INIT SRWLOCK_INIT
typedef INIT_ONCE fc_plat_once_t;
#  define FC_PLAT_ONCE_INIT INIT_ONCE_STATIC_INIT
#else
typedef pthread_mutex_t fc_plat_mutex_t;
#  define FC_PLAT_MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
typedef pthread_once_t fc_plat_once_t;
#  define FC_PLAT_ONCE_INIT PTHREAD_ONCE_INIT
#endif

FC_PLAT_FN void
fc_plat_mutex_lock(fc_plat_mutex_t *m)
{
#ifdef _WIN32
    AcquireSRWLockExclusive(m);
#else
    pthread_mutex_lock(m);
#endif
}

FC_PLAT_FN void
fc_plat_mutex_unlock(fc_plat_mutex_t *m)
{
#ifdef _WIN32
    ReleaseSRWLockExclusive(m);
#else
    pthread_mutex_unlock(m);
#endif
}

/* Make *m a fresh, unlocked mutex (a fork child's copy of a held lock). */
FC_PLAT_FN void
fc_plat_mutex_reset(fc_plat_mutex_t *m)
{
    fc_plat_mutex_t fresh = FC_PLAT_MUTEX_INIT;
    *m = fresh;
}

#ifdef _WIN32
typedef struct { void (*fn)(void); } FcPlatOnceBox;

FC_PLAT_FN BOOL CALLBACK
fc_plat_once_main(PINIT_ONCE once, PVOID param, PVOID *ctx)
{
    (void)once;
    (void)ctx;
    ((FcPlatOnceBox *)param)->fn();
    return TRUE;
}
#endif

/* fn() the first time any thread gets here with this o; the others wait. */
FC_PLAT_FN void
fc_plat_once(fc_plat_once_t *o, void (*fn)(void))
{
#ifdef _WIN32
    FcPlatOnceBox box = {fn};
    (void)InitOnceExecuteOnce(o, fc_plat_once_main, &box, NULL);
#else
    (void)pthread_once(o, fn);
#endif
}

/* pthread_atfork where processes fork; nothing to do on Windows.
   0 | -1 */
FC_PLAT_FN int
fc_plat_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
#ifdef _WIN32
    (void)prepare;
    (void)parent;
    (void)child;
    return 0;
#else
    return pthread_atfork(prepare, parent, child) == 0 ? 0 : -1;
#endif
}

/* ------------------------------------------------------------------ */
/* Pages                                                               */
/* ------------------------------------------------------------------ */

/* The virtual-memory page size (4096 when the system will not say). */
FC_PLAT_FN size_t
fc_plat_page_size(void)
{
#ifdef _WIN32
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return si.dwPageSize ? (size_t)si.dwPageSize : 4096;
#else
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
#endif
}

/* n bytes of fresh, zeroed, page-aligned memory straight from the system,
   returned to it by fc_plat_pages_free.  memory | NULL (errno) */
FC_PLAT_FN void *
fc_plat_pages_alloc(size_t n)
{
#ifdef _WIN32
    void *p = VirtualAlloc(NULL, n, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    if (p == NULL) {
        errno = ENOMEM;
    }
    return p;
#else
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
#endif
}

/* Give back p, n: exactly what fc_plat_pages_alloc(n) returned. */
FC_PLAT_FN void
fc_plat_pages_free(void *p, size_t n)
{
#ifdef _WIN32
    (void)n;
    (void)VirtualFree(p, 0, MEM_RELEASE);
#else
    (void)munmap(p, n);
#endif
}

/* p, n from fc_plat_pages_alloc grown to n2 > n bytes, its contents kept
   (the rest zeroed); p is given back.  On Linux the kernel moves the
   pages (mremap), elsewhere they are copied.  memory | NULL (errno; p is
   still p) */
FC_PLAT_FN void *
fc_plat_pages_grow(void *p, size_t n, size_t n2)
{
#if defined(__linux__) && defined(MREMAP_MAYMOVE)
    void *q = mremap(p, n, n2, MREMAP_MAYMOVE);
    return q == MAP_FAILED ? NULL : q;
#else
    void *q = fc_plat_pages_alloc(n2);
    if (q != NULL) {
        memcpy(q, p, n);
        fc_plat_pages_free(p, n);
    }
    return q;
#endif
}

/* Ask for huge pages behind [p, p+n) where the system takes such advice
   (Linux transparent huge pages); elsewhere nothing. */
FC_PLAT_FN void
fc_plat_pages_hint_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    (void)madvise(p, n, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

/* Transparent huge pages: what the kernel does with MADV_HUGEPAGE advice,
   from /sys/kernel/mm/transparent_hugepage/enabled (the bracketed word).
   FC_PLAT_THP_ALWAYS: every big enough anonymous mapping gets them, advice
   or not; FC_PLAT_THP_MADVISE: only advised ranges; FC_PLAT_THP_NEVER:
   none (also where there is no such file, or no Linux).  Reads a file:
   callers ask once and keep the answer. */
enum { FC_PLAT_THP_NEVER = 0, FC_PLAT_THP_MADVISE = 1, FC_PLAT_THP_ALWAYS = 2 };
FC_PLAT_FN int
fc_plat_thp_mode(void)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    char buf[128];
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == NULL) {
        return FC_PLAT_THP_NEVER;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (strstr(buf, "[always]") != NULL) {
        return FC_PLAT_THP_ALWAYS;
    }
    if (strstr(buf, "[madvise]") != NULL) {
        return FC_PLAT_THP_MADVISE;
    }
#endif
    return FC_PLAT_THP_NEVER;
}

/* MADV_HUGEPAGE on [p, p+n) (page aligned).  0 | -1 (refused, or no such
   advice here) */
FC_PLAT_FN int
fc_plat_pages_advise_huge(void *p, size_t n)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    return madvise(p, n, MADV_HUGEPAGE) == 0 ? 0 : -1;
#else
    (void)p;
    (void)n;
    return -1;
#endif
}

/* Mapping pages ahead of a copy: Linux (5.14+ for the populate call; an
   older kernel answers EINVAL and the caller stops asking).  Elsewhere
   FC_PLAT_HAVE_POPULATE is 0 and the callers compile the step out. */
#ifdef __linux__
#  define FC_PLAT_HAVE_POPULATE 1
#  ifndef MADV_POPULATE_WRITE
#    define MADV_POPULATE_WRITE 23      /* Linux 5.14 */
#  endif

/* vec[i] & 1 when page i of [a, a+n) (page aligned) is mapped.  0 | -1 */
FC_PLAT_FN int
fc_plat_pages_mapped(void *a, size_t n, unsigned char *vec)
{
    return mincore(a, n, vec) == 0 ? 0 : -1;
}

/* Map (and write-fault) the pages of [a, a+n) now.  0 | -1 (refused) */
FC_PLAT_FN int
fc_plat_pages_populate(void *a, size_t n)
{
    return madvise(a, n, MADV_POPULATE_WRITE) == 0 ? 0 : -1;
}
#else
#  define FC_PLAT_HAVE_POPULATE 0
#endif

/* ------------------------------------------------------------------ */
/* CPUs                                                                */
/* ------------------------------------------------------------------ */

/* The CPUs this process may run on (its affinity mask where the system
   has one), at least 1. */
FC_PLAT_FN int
fc_plat_ncpu(void)
{
#ifdef _WIN32
    DWORD_PTR proc, sys;
    if (GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys) && proc != 0) {
        int n = 0;
        for (; proc != 0; proc &= proc - 1) {
            n++;
        }
        /* one processor group at most: the mask says nothing beyond it */
        return n;
    }
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return si.dwNumberOfProcessors > 0 ? (int)si.dwNumberOfProcessors : 1;
#else
#  if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) {
            return n;
        }
    }
#  endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
#endif
}

/* ------------------------------------------------------------------ */
/* Stack                                                               */
/* ------------------------------------------------------------------ */

/* The current thread's stack: lowest address and size.  Where the system
   cannot say (musl, the BSDs: not probed), FC_PLAT_HAVE_STACK_BOUNDS is 0
   and the caller's guard is off, as before this layer existed. */
#if (defined(__linux__) && defined(__GLIBC__)) || defined(__APPLE__) || defined(_WIN32)
#  define FC_PLAT_HAVE_STACK_BOUNDS 1

/* 0 | -1 (unknown) */
FC_PLAT_FN int
fc_plat_stack_bounds(uintptr_t *lo, size_t *size)
{
#  if defined(_WIN32)
    /* the reservation that holds this frame: AllocationBase is its bottom */
    MEMORY_BASIC_INFORMATION mbi;
    uintptr_t here = FC_PLAT_FRAME_ADDRESS();
    if (VirtualQuery((void *)here, &mbi, sizeof(mbi)) == 0 || mbi.AllocationBase == NULL) {
        return -1;
    }
    *lo = (uintptr_t)mbi.AllocationBase;
    *size = (size_t)((uintptr_t)mbi.BaseAddress + mbi.RegionSize - *lo);
    return 0;
#  elif defined(__APPLE__)
    /* pthread_get_stackaddr_np is the top: stacks grow down */
    pthread_t self = pthread_self();
    uintptr_t top = (uintptr_t)pthread_get_stackaddr_np(self);
    size_t n = pthread_get_stacksize_np(self);
    if (top == 0 || n == 0 || n > top) {
        return -1;
    }
    *lo = top - n;
    *size = n;
    return 0;
#  else
    pthread_attr_t attr;
    void *addr;
    int rc = -1;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        if (pthread_attr_getstack(&attr, &addr, size) == 0) {
            *lo = (uintptr_t)addr;
            rc = 0;
        }
        pthread_attr_destroy(&attr);
    }
    return rc;
#  endif
}
#else
#  define FC_PLAT_HAVE_STACK_BOUNDS 0
#endif

/* ------------------------------------------------------------------ */
/* Clock                                                               */
/* ------------------------------------------------------------------ */

/* A monotonic clock in ns, cheap (the vDSO on Linux, QPC on Windows). */
FC_PLAT_FN int64_t
fc_plat_monotonic_ns(void)
{
#ifdef _WIN32
    static LARGE_INTEGER freq;
    LARGE_INTEGER now;
    if (freq.QuadPart == 0) {
        QueryPerformanceFrequency(&freq);
    }
    QueryPerformanceCounter(&now);
    return (int64_t)((double)now.QuadPart * 1e9 / (double)freq.QuadPart);
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
#endif
}

/* ------------------------------------------------------------------ */
/* Shared libraries                                                    */
/* ------------------------------------------------------------------ */

#ifdef _WIN32
#  define FC_PLAT_CUDA_DRIVER "nvcuda.dll"
#else
#  define FC_PLAT_CUDA_DRIVER "libcuda.so.1"
#endif

/* Load a shared library by path or name, never unloaded.  handle | NULL
   with the system's reason in err (errlen bytes, NUL-terminated) */
FC_PLAT_FN void *
fc_plat_dl_open(const char *path, char *err, size_t errlen)
{
#ifdef _WIN32
    HMODULE h = LoadLibraryA(path);
    if (h == NULL && errlen > 0) {
        DWORD code = GetLastError();
        DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
                                 NULL, code, 0, err, (DWORD)errlen, NULL);
        while (n > 0 && (err[n - 1] == '\n' || err[n - 1] == '\r' || err[n - 1] == ' ')) {
            err[--n] = '\0';
        }
        if (n == 0) {
            snprintf(err, errlen, "error %lu", (unsigned long)code);
        }
    }
    return (void *)h;
#else
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL && errlen > 0) {
        const char *e = dlerror();
        snprintf(err, errlen, "%s", e ? e : "unknown error");
    }
    return h;
#endif
}

/* The address of symbol name in lib.  address | NULL */
FC_PLAT_FN void *
fc_plat_dl_sym(void *lib, const char *name)
{
#ifdef _WIN32
    FARPROC f = GetProcAddress((HMODULE)lib, name);
    void *p;
    /* a function pointer as an object pointer, as dlsym returns it */
    memcpy(&p, &f, sizeof(p));
    return p;
#else
    return dlsym(lib, name);
#endif
}

#endif /* FC_PLATFORM_H */
