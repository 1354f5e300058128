/*
 * cowdict.h: the copy-on-write dict type (cowdict.c).  Caller: module.c.
 */
#ifndef FASTCOPY_COWDICT_H
#define FASTCOPY_COWDICT_H

#include "fastcopy.h"

/* Create the cowdict types, store the type in st->cowdict_type, register
   it as a MutableMapping and add it to the module as `cowdict`.
   0 | -1+exc */
FC_INTERNAL int fc_cowdict_exec(PyObject *module, FcState *st);

#endif /* FASTCOPY_COWDICT_H */
