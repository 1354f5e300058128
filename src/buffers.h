/*
 * buffers.h: the registry of buffer backends (buffers.c has the essay;
 * backend.h the interface a backend implements).  Callers: the walker
 * (fc_buffer_deep), plan.c (fc_buffer_kind), module.c and settings.c (the
 * tables, for module life, configure(), backends() and trim()).
 */
#ifndef FASTCOPY_BUFFERS_H
#define FASTCOPY_BUFFERS_H

#include "fastcopy.h"
#include "backend.h"

/* The registry (buffers.c), in dispatch order: fc_backends[FC_BK_<name>]. */
extern FC_INTERNAL_DATA const FcBackend *const fc_backends[];
extern FC_INTERNAL_DATA const int fc_nbackends;

/* The FB kind for tp (a backend recognises it), 0 when none does.  Reads
   sys.modules, imports nothing; can run user code (a half-imported
   module's attributes).  kind | 0 | -1+exc */
FC_INTERNAL int fc_buffer_kind(FcState *st, PyTypeObject *tp);
/* Deep-copy x of FB kind `kind`, after the memo lookup and share= check,
   with FcBackend.deep's contract (backend.h). */
FC_INTERNAL PyObject *fc_buffer_deep(FcCtx *c, PyObject *x, int kind);

#endif /* FASTCOPY_BUFFERS_H */
