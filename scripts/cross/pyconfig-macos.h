/*
 * pyconfig.h for compiling extensions for macOS (arm64 and x86_64) against
 * CPython's Include/ with scripts/cross_check.sh.  Not CPython's file: a
 * real one comes from running configure on a Mac, which cannot be done here.
 *
 * Only what the headers an extension sees consult matters.  The set is the
 * macros pyconfig.h.in can define that appear in Include/ and
 * Include/cpython/ (found with: the #undef names of pyconfig.h.in that occur
 * in those headers; Include/internal/ is the core's, not ours).  Values are
 * those of a python.org or Homebrew build for macOS 11+ (both LP64, little
 * endian).  The per-architecture ones (SIZEOF_LONG_DOUBLE, ALIGNOF_MAX_ALIGN_T,
 * HAVE_GCC_ASM_FOR_X64/X87, the endianness) are left to CPython's own
 * Include/pymacconfig.h, which Python.h includes after this file on
 * __APPLE__ and which overrides them per compile target (universal2
 * builds rely on it the same way).
 *
 * Left undefined on purpose: Py_GIL_DISABLED (the default build; define it
 * for a 3.13t check), Py_DEBUG, Py_TRACE_REFS, Py_STATS (not release
 * builds); HAVE_USABLE_WCHAR_T (configure defines it only for a 16-bit
 * unsigned wchar_t); PYLONG_BITS_IN_DIGIT (pyport.h picks 30 for 64-bit);
 * _POSIX_C_SOURCE, _XOPEN_SOURCE (configure leaves them off on Darwin 10+
 * and sets _DARWIN_C_SOURCE instead); the curses, setpgrp and dtrace macros
 * (only their modules read them); HAVE_PTHREAD_STUBS (WASI only);
 * HAVE_ALIGNED_REQUIRED (strict-alignment CPUs; arm64 and x86_64 are not).
 */
#ifndef Py_PYCONFIG_H
#define Py_PYCONFIG_H

#define _DARWIN_C_SOURCE 1

#define SIZEOF_SHORT 2
#define SIZEOF_INT 4
#define SIZEOF_LONG 8
#define SIZEOF_LONG_LONG 8
#define SIZEOF_FLOAT 4
#define SIZEOF_DOUBLE 8
#define SIZEOF_LONG_DOUBLE 16       /* pymacconfig.h: 8 on arm64 */
#define SIZEOF_VOID_P 8
#define SIZEOF_SIZE_T 8
#define SIZEOF_UINTPTR_T 8
#define SIZEOF_TIME_T 8
#define SIZEOF_OFF_T 8
#define SIZEOF_FPOS_T 8
#define SIZEOF_PID_T 4
#define SIZEOF_PTHREAD_T 8
#define SIZEOF_PTHREAD_KEY_T 8
#define SIZEOF_WCHAR_T 4
#define SIZEOF__BOOL 1
#define ALIGNOF_SIZE_T 8
#define ALIGNOF_LONG 8
#define ALIGNOF_MAX_ALIGN_T 16      /* pymacconfig.h: 8 on arm64 */
#define DOUBLE_IS_LITTLE_ENDIAN_IEEE754 1

#define HAVE_SSIZE_T 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_UNISTD_H 1
#define HAVE_WCHAR_H 1
#define HAVE_LANGINFO_H 1
#define HAVE_PTHREAD_H 1
#define HAVE_FORK 1
#define HAVE_STD_ATOMIC 1
#define HAVE_BUILTIN_ATOMIC 1

#define Py_ENABLE_SHARED 1          /* framework builds; read only by exports.h */
#define WITH_DOC_STRINGS 1
#define WITH_PYMALLOC 1
#define WITH_MIMALLOC 1
#define WITH_FREELISTS 1

#endif /* Py_PYCONFIG_H */
