/*
 * settings.h: configure(), backends(), trim() and _settings() (settings.c),
 * and the argument binder every module function uses.  configure()'s
 * keywords are data: every setting is one row (FcSetting, backend.h) --
 * name, type, where its field lives, default, documentation -- in the
 * table of the part that owns it (a buffer backend's FcBackend.settings,
 * or settings.c's own core table).  settings.c builds configure(),
 * configure.__doc__, the settings dict it returns, and _settings() from
 * those rows; nothing else parses a setting.  Caller: module.c.
 */
#ifndef FASTCOPY_SETTINGS_H
#define FASTCOPY_SETTINGS_H

#include <stddef.h>
#include "fastcopy.h"

/* configure(), backends(), trim() and _settings() added to the module, and
   every setting set to its default.  0 | -1+exc */
FC_INTERNAL int fc_settings_exec(PyObject *module, FcState *st);

/* Bind args/kwnames to out[0..nnames) (borrowed, NULL = not given).  The
   first npos names are positional-or-keyword, the rest keyword-only; the
   first nreq are required.  No user code.  0 | -1+exc */
FC_INTERNAL int fc_parse(const char *fname, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames, const char *const *names, int nnames,
                         int npos, int nreq, PyObject **out);

#endif /* FASTCOPY_SETTINGS_H */
