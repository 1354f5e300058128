/*
 * plan.h: the per-type plan cache and the watch on the stdlib's tables
 * (plan.c).  Callers: the walker, copy.c, reduce.c, torch.c, module.c.
 */
#ifndef FASTCOPY_PLAN_H
#define FASTCOPY_PLAN_H

#include "fastcopy.h"

/* Make st reflect the current copy/copyreg tables (cheap when nothing
   changed: a counter or five version tags).  Runs no user code but may
   allocate.  0 | -1+exc
   which: FC_SYNC_ALL, or FC_SYNC_DEEP where only what deepcopy() reads
   need be current.  They differ on 3.14 only, where copy()'s two sets
   (_copy_atomic_types, _copy_builtin_containers) are compared member by
   member at each sync, and deepcopy() reads neither: FC_SYNC_DEEP leaves
   FcState.copy_ok and copy_sets_std as they were, and the next
   FC_SYNC_ALL still finds the change (the snapshots are fc_refresh's). */
enum { FC_SYNC_ALL = 0, FC_SYNC_DEEP = 1, FC_SYNC_DICTS = 2 };
FC_INTERNAL_INLINE int fc_sync_for(FcState *st, int which);
#define fc_sync(st) fc_sync_for((st), FC_SYNC_ALL)
#define fc_sync_deep(st) fc_sync_for((st), FC_SYNC_DEEP)
/* FC_SYNC_DICTS (3.14+): the watched dicts only, no set compared: for a
   walker whose next step classifies nothing (FcCtx.sets_due, deepcopy.c
   "Syncs owed").  1 when it refreshed (every set read again) | 0 | -1+exc */
#define fc_sync_dicts(st) fc_sync_for((st), FC_SYNC_DICTS)
/* Recompute what fc_sync caches.  0 | -1+exc */
FC_INTERNAL int fc_refresh(FcState *st);
/* The plan for tp: a cached one, or *tmp filled in when tp cannot be
   cached (the caller then releases tmp->slotnames).  Can run user code
   (copyreg._slotnames, metaclass lookups): never keep the pointer across
   more.  borrowed plan | NULL+exc */
FC_INTERNAL FcPlan *fc_plan_get(FcState *st, PyTypeObject *tp, FcPlan *tmp);
/* Drop every cached plan (references released: finalizers may run) /
   visit their references (the module's GC traverse). */
FC_INTERNAL void fc_plans_clear(FcState *st);
FC_INTERNAL int fc_plans_traverse(FcState *st, visitproc visit, void *arg);
/* Does Fraction.__deepcopy__ still return self for an exact Fraction tp?
   1 | 0 | -1+exc */
FC_INTERNAL int fc_frac_names_ok(FcState *st, PyTypeObject *tp);
/* uuid.UUID's info tuple (FcState.uuid_info), FC_UUID_* order */
enum { FC_UUID_GETSTATE = 0, FC_UUID_SETSTATE, FC_UUID_SAFEUUID,
       FC_UUID_DINT, FC_UUID_DSAFE,       /* the slots' member descriptors */
       FC_UUID_KINT, FC_UUID_KSAFE,       /* __getstate__'s 'int', 'is_safe' */
       FC_UUID_V2M,                       /* SafeUUID._value2member_map_ */
       FC_UUID_MEMBERS,                   /* SafeUUID.safe, .unsafe, .unknown */
       FC_UUID_VALUES = FC_UUID_MEMBERS + 3,  /* and their .value */
       FC_UUID_NINFO = FC_UUID_VALUES + 3 };
/* FcState.uuid_info once published (fc_plan_uuid), else NULL.  borrowed */
FC_INTERNAL_INLINE PyObject *fc_uuid_info(FcState *st);
/* Is the uuid.UUID road fc_plan_uuid verified (info) still the stdlib's?
   The functions' globals and SafeUUID's value map are looked at again when
   their version tags moved; SafeUUID or its metaclass changed sends UUIDs
   down the generic road.  1 | 0 */
FC_INTERNAL int fc_uuid_ok(FcState *st, PyObject *info);
/* ... and is SafeUUID member k's .value still the one recorded (its
   __dict__ looked at again when its version tag moved)?  1 | 0 */
FC_INTERNAL int fc_uuid_member_ok(FcState *st, PyObject *info, int k);
/* The type a kind bit stands for.  borrowed */
FC_INTERNAL PyTypeObject *fc_kind_type(FcState *st, int k);
/* Watch copy's and copyreg's tables (3.12+ dict watchers).  0 | -1+exc;
   fini removes the watch. */
FC_INTERNAL int fc_watch_init(FcState *st);
FC_INTERNAL void fc_watch_fini(FcState *st);

#if FC_COPY_SETS
/* `key in c` for one of the copy module's sets (3.14+: pyver.h), or what
   the user bound in its place (then user code may run).  1 | 0 | -1+exc */
FC_INTERNAL int fc_copy_set_has(PyObject *c, PyObject *key);
/* The types the stdlib's _copy_atomic_types holds that are no kind of
   ours (super; frozendict on 3.15).  1 | 0 */
FC_INTERNAL int fc_copy_atomic_extra(PyTypeObject *tp);
#endif

#endif /* FASTCOPY_PLAN_H */
