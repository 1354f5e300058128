/*
 * module.h: what module.c offers the other parts -- argument parsing with
 * the messages of a Python function.
 */
#ifndef FASTCOPY_MODULE_H
#define FASTCOPY_MODULE_H

#include "fastcopy.h"

/* Bind args/kwnames to out[0..nnames) (borrowed, NULL = not given).  The
   first npos names are positional-or-keyword, the rest keyword-only; the
   first nreq are required.  No user code.  0 | -1+exc */
FC_INTERNAL int fc_parse(const char *fname, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames, const char *const *names, int nnames,
                         int npos, int nreq, PyObject **out);

#endif /* FASTCOPY_MODULE_H */
