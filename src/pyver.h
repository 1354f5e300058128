/*
 * pyver.h: what each CPython version changes that the core depends on, in
 * one place, as platform.h is for the operating systems.  Porting to a new
 * CPython starts here: each fact below names the versions it holds for and
 * what reads it; a fact that stops holding is switched here, and its
 * readers take the road written for the other side of the switch.
 *
 *   FC_PY311_PLUS..FC_PY315_PLUS   the release series, for facts too small
 *                                  to name (an API renamed, a field moved)
 *
 * The copy module (Lib/copy.py, read from each release's own file):
 *   FC_COPY_SETS          3.14+: _copy_dispatch, _copy_immutable and
 *                         _deepcopy_atomic are gone; copy() tests
 *                         `cls in _copy_atomic_types` then
 *                         `cls in _copy_builtin_containers`, deepcopy()
 *                         tests `cls in _atomic_types`.  FcState keeps the
 *                         three containers (copy_atomic, copy_containers,
 *                         deep_atomic) instead of copy_dispatch (plan.c,
 *                         fc_refresh; copy.c; deepcopy.c)
 *   FC_COPY_SETS_MUTABLE  3.14 only: those three are sets, which a user may
 *                         change at run time and which no watcher sees;
 *                         plan.c compares them with a snapshot at every
 *                         sync (fc_sets_moved).  3.15 made them frozensets
 *   FC_ATOMIC_FIRST       3.14+: deepcopy() tests _atomic_types before the
 *                         memo is made or read (gh-114264): a seeded memo
 *                         entry for an atomic is ignored, and an atomic
 *                         never touches a caller's mapping (deepcopy.c)
 *   FC_MEMO_IN            3.15+: the caller's memo is read as
 *                         `if d in memo: return memo[d]` (two calls on a
 *                         mapping), not `memo.get(d, _nil)`; deepcopy() has
 *                         no _nil parameter (memo.c, fastcopy/_trampoline.py)
 *   FC_HAVE_FROZENDICT    3.15+: the builtin frozendict (PEP 814): atomic for
 *                         copy(); _deepcopy_frozendict for deepcopy()
 *                         (deepcopy.c, "frozendict")
 *
 * Dict internals:
 *   FC_HAVE_DICT_VERSION  3.10-3.13: PEP 509's ma_version_tag (fastcopy.h,
 *                         fc_dict_version); 3.14 removed it
 *   FC_PREFILL            the walker's prefilled dicts (deepcopy.c) need to
 *                         know that a source dict was not written while its
 *                         frame lived: the version tag through 3.13; on
 *                         3.14+ GIL builds a dict watcher (plan.c, "Source
 *                         stamps") watches each prefilled source while its
 *                         frame lives.  Off on 3.14t (its locked loop is
 *                         untested here: no free-threaded 3.14 to run)
 *   FC_MEMO_ABSORB        a memo shown to a hook goes back to the native
 *                         table when the hook is done with it (memo.c, "A
 *                         hook that writes into the memo"): that needs the
 *                         mirror's writes seen (its version tag through
 *                         3.13, a dict watcher on 3.14+: watch.c, "mirror")
 *                         and a reference count that says who holds the
 *                         mirror -- so GIL builds only.  3.14's borrowed
 *                         stack references do not weaken that: a borrow
 *                         stands on a local's counted reference that
 *                         outlives it, so a hook that kept the mirror shows
 *                         in its count once it has returned
 *   FC_MEMO_ADOPT         3.12+ GIL builds: a caller's small dict memo is
 *                         taken as a native table's mirror (memo.c, "A
 *                         caller's dict"): FC_MEMO_ABSORB's stamps, and no
 *                         collection (so no finalizer) outside user code,
 *                         which is where the dict is brought up to date.
 *                         Entries already in it are taken only where
 *                         FC_ATOMIC_FIRST holds (3.14+): before, deepcopy()
 *                         looks an atomic up in the memo, which the native
 *                         walker never does
 *   FC_PROVEN_MISS        memo.c's proven misses (a key whose count is all
 *                         references the walker knows cannot be in the
 *                         table, whose own references are counted): GIL
 *                         builds, 3.10-3.15 alike.  A borrowed reference is
 *                         one the count leaves out, never one the table
 *                         holds; an immortal's count proves nothing (no
 *                         miss is claimed for it)
 *   FC_DICT_KNOWN_HASH    3.10-3.15: _PyDict_{Get,Set,Del}Item_KnownHash
 *                         are exported (the writers declared only in the
 *                         internal header from 3.13: cowdict.c declares
 *                         them); checked against 3.14.10's and 3.15.2's
 *                         libpython.  A release that drops them: 0, and
 *                         cowdict hashes a key twice per write
 *
 * Code objects:
 *   FC_CO_FLAGS_NEUTRAL   3.14+: CO_METHOD marks a function defined in a
 *                         class body; it says where, not what the code does,
 *                         so plan.c's fc_code_same ignores it (Enum's
 *                         __deepcopy__ has it, fastcopy._reference's twin not)
 *
 *   FC_DICT_SLOT_LAYOUT   3.11-3.15, GIL builds: the keys object's layout
 *                         (header, indices, then {key, value} or {hash, key,
 *                         value} entries) that deepcopy.c reads and writes
 *                         prefilled values into ("Values put in place"),
 *                         checked at import besides; struct _dictkeysobject
 *                         is 3.13.5's, field for field, in 3.14.10's and
 *                         3.15.2's internal headers; 3.10's differs
 *   FC_SET_FILL_ORDER     3.10-3.13: set_add_key's probe order, which
 *                         deepcopy.c replays to fill a set's copy directly
 *                         (tests/test_values.py compares the tables)
 *   FC_INLINE_ATTRS_ORDER 3.13: the instance-dict and inline-values code
 *                         reduce.c follows to store a fresh object's
 *                         attributes (3.11/3.12 keep other key objects)
 *
 * Objects, references and the collector:
 *   FC_UNIQUE_API         3.14+: PyUnstable_Object_IsUniquelyReferenced,
 *                         cowdict.c's copy-on-write test (3.13t: its own
 *                         reading of the split count; GIL builds before:
 *                         Py_REFCNT(o) == 1)
 *   FC_GC_HEADER_READ     GIL builds through 3.14: the GC header's _gc_next
 *                         sits two words before the object (cowdict.c);
 *                         3.15 and free-threaded builds: the API call
 *   FC_GC_ANY_ALLOC       3.10-3.11: any allocation may run a collection,
 *                         and so finalizers; 3.12+ collect only at the eval
 *                         breaker (fastcopy.h's dict copy, torch.c; memo.c
 *                         and select.c hide copies from the collector as
 *                         they are made before 3.12, and on 3.12+ only just
 *                         before user code runs)
 *   FC_FT_SPLIT_COUNT     3.13t: the split count's fields (ob_ref_local,
 *                         ob_ref_shared) read and added to directly
 *                         (fastcopy.h fc_incref_n, cowdict.c)
 *   FC_INCREF_TESTS_IMMORTAL  3.12+ GIL builds: Py_INCREF tests the count
 *                         for immortality (PEP 683) before it writes, so n
 *                         increments no longer fold into one add, and
 *                         Py_SET_REFCNT leaves an immortal object alone:
 *                         fastcopy.h's fc_incref_n adds a run through it
 *                         (3.10/3.11's plain increments fold by themselves)
 *   FC_CS_PARKS_ON_HELD   3.13t: a critical section on a lock the thread
 *                         already holds parks on it (cowdict.c checks
 *                         first, as 3.14 does itself)
 *   3.14+ tracks every dict from birth (no lazy untracking of atomic-only
 *   dicts), and 3.15 leaves a frozenset of atomic items untracked from
 *   birth, as tuples; tests/test_cowdict.py and test_fastpaths.py state it
 *
 * API spellings (a function renamed or made public, a header moved) are
 * not facts of this kind: fastcopy.h's shims switch them on FC_PY31x_PLUS.
 */
#ifndef FC_PYVER_H
#define FC_PYVER_H

#ifdef Py_GIL_DISABLED
#  define FC_PYVER_FT 1            /* (fastcopy.h's FC_FT; here for the facts) */
#else
#  define FC_PYVER_FT 0
#endif

#define FC_PY311_PLUS (PY_VERSION_HEX >= 0x030B0000)
#define FC_PY312_PLUS (PY_VERSION_HEX >= 0x030C0000)
#define FC_PY313_PLUS (PY_VERSION_HEX >= 0x030D0000)
#define FC_PY314_PLUS (PY_VERSION_HEX >= 0x030E0000)
#define FC_PY315_PLUS (PY_VERSION_HEX >= 0x030F0000)

#define FC_COPY_SETS FC_PY314_PLUS
#define FC_COPY_SETS_MUTABLE (FC_PY314_PLUS && !FC_PY315_PLUS)
#define FC_ATOMIC_FIRST FC_PY314_PLUS
#define FC_MEMO_IN FC_PY315_PLUS
#ifdef CO_METHOD
#  define FC_CO_FLAGS_NEUTRAL CO_METHOD
#else
#  define FC_CO_FLAGS_NEUTRAL 0
#endif
#if PY_VERSION_HEX < 0x030E0000
#  define FC_PREFILL 1
#elif !defined(Py_GIL_DISABLED)
#  define FC_PREFILL 1
#else
#  define FC_PREFILL 0
#endif
#if defined(Py_GIL_DISABLED)
#  define FC_MEMO_ABSORB 0
#  define FC_PROVEN_MISS 0
#else
#  define FC_MEMO_ABSORB 1
#  define FC_PROVEN_MISS 1
#endif
#define FC_HAVE_DICT_VERSION (!FC_PY314_PLUS)
#define FC_MEMO_ADOPT (FC_MEMO_ABSORB && FC_PY312_PLUS)
#define FC_DICT_SLOT_LAYOUT (!FC_PYVER_FT && FC_PY311_PLUS && PY_VERSION_HEX < 0x03100000)
#define FC_SET_FILL_ORDER (!FC_PY314_PLUS)
#define FC_INLINE_ATTRS_ORDER (FC_PY313_PLUS && !FC_PY314_PLUS)
#define FC_UNIQUE_API FC_PY314_PLUS
#define FC_GC_HEADER_READ (!FC_PYVER_FT && !FC_PY315_PLUS)
#define FC_GC_ANY_ALLOC (!FC_PY312_PLUS)
#define FC_FT_SPLIT_COUNT (FC_PYVER_FT && !FC_PY314_PLUS)
#define FC_INCREF_TESTS_IMMORTAL (FC_PY312_PLUS && !FC_PYVER_FT)
#define FC_CS_PARKS_ON_HELD (FC_PYVER_FT && !FC_PY314_PLUS)
#define FC_DICT_KNOWN_HASH (PY_VERSION_HEX < 0x03100000)
#if FC_PY315_PLUS && defined(PyFrozenDict_CheckExact)
#  define FC_HAVE_FROZENDICT 1
#else
#  define FC_HAVE_FROZENDICT 0
#endif

#endif /* FC_PYVER_H */
