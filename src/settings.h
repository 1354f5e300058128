/*
 * settings.h: configure()'s keywords as data.  Every setting is one row --
 * name, type, where it lives in FcState, default, documentation -- in the
 * table of the part that owns it (a buffer backend's FcBackend.settings,
 * or settings.c's own core table).  settings.c builds configure(),
 * configure.__doc__, the settings dict it returns, and _settings() from
 * those rows; nothing else parses a setting.
 */
#ifndef FASTCOPY_SETTINGS_H
#define FASTCOPY_SETTINGS_H

#include <stddef.h>
#include "fastcopy.h"

enum {
    FS_BOOL,      /* int field, 0/1; any object's truth value */
    FS_BYTES,     /* Py_ssize_t field, an int >= 0 */
    FS_THREADS,   /* int field, an int >= 0, capped at FS_THREADS_MAX; 0 asks
                     the owner's apply() for its automatic choice */
    FS_SECONDS,   /* int64_t field in ns, -1: off; a number of seconds >= 0,
                     and unlike the others an explicit None (or False) is a
                     value: off -- so configure(**old) restores "off" */
};
#define FS_THREADS_MAX 64

typedef struct FcSetting {
    const char *name;        /* the configure() keyword */
    int type;                /* FS_* */
    size_t offset;           /* offsetof(FcState, ...) of its field */
    Py_ssize_t deflt;        /* the default value */
    const char *deflt_doc;   /* the default in words, or NULL: deflt */
    const char *doc;         /* what it does, for configure.__doc__ */
} FcSetting;

/* A setting's field. */
#define FC_SETTING_INT(st, s)  ((int *)((char *)(st) + (s)->offset))
#define FC_SETTING_SIZE(st, s) ((Py_ssize_t *)((char *)(st) + (s)->offset))
#define FC_SETTING_NS(st, s)   ((int64_t *)((char *)(st) + (s)->offset))

/* configure(), backends(), trim() and _settings() added to the module, and
   every setting set to its default.  0 | -1+exc */
FC_INTERNAL int fc_settings_exec(PyObject *module, FcState *st);

#endif /* FASTCOPY_SETTINGS_H */
