/*
 * deepcopy.c: copy.deepcopy, step for step, on an explicit work stack.
 *
 * The stdlib's deepcopy() is recursive: deepcopy(x) -> _deepcopy_list(x)
 * -> deepcopy(item) -> ...  Each level costs two to four Python frames and
 * the stdlib gives up near 500 nested lists.  Here every container that the
 * stdlib copies by recursing into children -- list, dict, tuple, bound
 * method, and every object rebuilt through a reduce value (plain instances,
 * dataclasses, __reduce__/__reduce_ex__ objects: args, state, list items,
 * dict items) -- is a *frame* on a heap-allocated stack in the call's
 * context.  A frame is a small state machine:
 *
 *     resume(frame, result of the child it asked for, or NULL the first time)
 *         -> 1: "copy this child next"     (the walker enters the child)
 *         -> 0: "done, here is my copy"    (the walker pops it and hands the
 *                                           copy to the frame below)
 *
 * fc_walk() is the only loop.  Depth is bounded by memory, not by the C
 * stack: a 1,000,000-level list copies in a thread with a 256 KiB stack.
 * Only calls into Python (hooks, reductors, __setstate__, ...) use the C
 * stack, and a hook that calls deepcopy() again starts a new walk, guarded
 * by Py_EnterRecursiveCall and a stack-headroom check.
 *
 * Equivalence with the stdlib, in the places where it is easy to drift:
 *   - dispatch order: memo, _deepcopy_dispatch[type(x)], issubclass(cls,
 *     type), getattr(x, "__deepcopy__"), copyreg.dispatch_table (truthiness),
 *     __reduce_ex__(4), __reduce__.  Builtin kinds are handled natively only
 *     while the stdlib's table still maps them to its own functions
 *     (FcState.deep_ok, kept current by plan.c).
 *   - atomic objects skip the memo lookup only while the memo is native:
 *     nobody can have put their ids there.  With a visible memo the lookup
 *     runs first, as in the stdlib (a pre-seeded memo wins).
 *   - lists are iterated live (a hook's pop/append is seen); dicts are
 *     walked with PyDict_Next plus the dict iterator's own checks (size
 *     change -> RuntimeError, same message); values are copied before keys,
 *     because `y[deepcopy(k)] = deepcopy(v)` evaluates the right side first.
 *   - tuples copy every item, then look themselves up in the memo (a
 *     recursive tuple reached through a list), then return the original when
 *     every item came back identical.
 *   - a frame holds strong references to its source, its copy and the item
 *     in flight; nothing is read through a borrowed cursor across a call
 *     into Python.
 *   - a dict copied while the memo is native starts as x.copy() ("prefill")
 *     and only its non-atomic values are replaced as their copies arrive:
 *     cloning the key table is far cheaper than inserting key by key.  The
 *     stdlib's half-built dict holds just the entries copied so far, so the
 *     moment the difference could matter -- the memo is about to be shown
 *     to Python code, a key needs copying, or the source dict was mutated
 *     (its version tag moved) -- the frame is demoted: the entries not yet
 *     copied are deleted, which leaves exactly the stdlib's dict, and the
 *     frame goes on inserting.  Until then nothing can see the difference.
 *   - a reduce value that is not a tuple of 2 to 5 items with a tuple of
 *     args is handed to the stdlib's own _reconstruct (with our deepcopy),
 *     so malformed values fail exactly as they do in the stdlib.
 */
#include "fastcopy.h"
#include "deepcopy.h"
#include "memo.h"
#include "plan.h"
#include "watch.h"
#include "reduce.h"
#include "buffers.h"
#include "defer.h"
#include "state.h"
#include "hooks.h"
#include "profile.h"

/* The walk and its stack check ("Entry", "Stack headroom"): reached from
   below only through FcWalkOps. */
static PyObject *fc_walk(FcCtx *c, PyObject *x);
static int fc_stack_check(void);
#if !FC_PY312_PLUS
#  include "structmember.h"   /* PyMember_GetOne, PyMember_SetOne */
#endif

enum { FR_LIST = 1, FR_DICT, FR_TUPLE, FR_RECON, FR_METHOD };

/* FR_RECON phases */
enum {
    R_ARGS = 0, R_STATE_REQ, R_STATE_GOT, R_LIST_START, R_LIST_NEXT,
    R_LIST_GOT, R_DICT_START, R_DICT_NEXT, R_DICT_KEY, R_DICT_VAL, R_SLOTS, R_PYD
};

/* FR_DICT phases */
enum { D_NEXT = 0, D_VAL, D_KEY };

struct FcRecon {
    PyObject *func, *args, *state, *listiter, *dictiter;  /* NULL = None */
    PyObject *newargs;      /* tuple being filled with copied args */
    PyObject *key;          /* dictiter: copied key waiting for its value */
    PyObject *pval;         /* dictiter: source value waiting to be copied */
    Py_ssize_t i;
    PyTypeObject *ptype;    /* FP_PLAIN: the planned type and its tag, to */
    unsigned int ptag;      /*   skip hasattr(y, "__setstate__") safely */
    unsigned int shows;     /* fresh: c->shows when y was made */
    int fresh;              /* y made by object.__new__ with the memo native */
    int hook;               /* FP_STATEHOOK: whose state (FH_*), applied
                               natively while y's hook is still it (hooks.c) */
    int variant;            /* R_PYD: the hook's variant (FC_PD_V*) */
    /* R_SLOTS (fc_deep_slots): sl holds sl_cap names, then as many values,
       then as many copies (strong; the first sl_n of each used, copies made
       up to sl_i); sl_pos: the slot dict's entry place in the native memo,
       still empty while sl_open; sl_d, sl_d2: that dict and its copy once
       made for real (strong) */
    PyObject **sl;
    Py_ssize_t sl_cap, sl_n, sl_i, sl_pos;
    PyObject *sl_d, *sl_d2;
    int sl_open;
};

/* fc_deep_atomic for a caller with the state and no context (the
   small-tree road).  1 | 0 */
FC_INLINE int
fc_deep_atomic_st(FcState *st, PyObject *x)
{
    int k = fc_kind(Py_TYPE(x));
    return (FK_BIT(k) & FC_DEEP_ATOMIC & st->deep_ok) != 0;
}

/* Is x copied as itself by deepcopy, with no memo involved? (native mode) */
FC_INTERNAL_INLINE int
fc_deep_atomic(FcCtx *c, PyObject *x)
{
    return fc_deep_atomic_st(c->st, x);
}

/* Are all of tuple x's items atomic (native mode)?  _deepcopy_tuple then
   returns x itself and stores nothing.  1 | 0 */
static int
fc_tuple_atomic_st(FcState *st, PyObject *x)
{
    Py_ssize_t n = PyTuple_GET_SIZE(x);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!fc_deep_atomic_st(st, PyTuple_GET_ITEM(x, i))) {
            return 0;
        }
    }
    return 1;
}

FC_INTERNAL int
fc_tuple_atomic(FcCtx *c, PyObject *x)
{
    return fc_tuple_atomic_st(c->st, x);
}

/* An exact tuple of atomic items whose copy is the walker's to make (no
   share predicate to ask, no copier registered for tuples): its own copy,
   and the native memo cannot hold it (the walker memoizes a tuple only when
   its copy differs; a hook that stores keys of its own leaves the memo a
   dict).  1 | 0 */
FC_NOINLINE int
fc_flat_tuple(FcCtx *c, PyObject *x)
{
    return (c->st->deep_ok & FK_BIT(FK_TUPLE)) && c->share == NULL && fc_tuple_atomic(c, x);
}

/* fc_memo_get_own for x, not atomic, which a frame reads through `own`
   references (native mode).  While proven misses are in use, a flat tuple
   is answered as itself: the earlier copies of a source share its flat
   tuples (they returned them), so the reference count proves nothing, and
   the lookup would index every pending entry ("Proven misses" in memo.c)
   -- the dict of a record holding a (i, j) tuple, copied while an earlier
   copy lives, did so once a record.  borrowed | NULL */
FC_INTERNAL_INLINE PyObject *
fc_read_lookup(FcCtx *c, PyObject *x, Py_ssize_t own)
{
    FcMemo *m = &c->native;
    int proof = fc_memo_prove_miss(m, x, own);
    if (proof > 0) {
        return NULL;
    }
    if (FC_UNLIKELY(proof == 0) && Py_TYPE(x) == &PyTuple_Type && fc_flat_tuple(c, x)) {
        return x;
    }
    return fc_memo_get(m, x);
}

/* x missed the memo: is it a flat tuple (fc_flat_tuple), its own copy with
   nothing to store?  Then the list or tuple frame places it and the walker
   never enters it: some 80 of our instructions less a tuple, and 4 more for
   a tuple that misses and whose first item is not atomic.  Dict frames
   leave it to the walker: there the test cost the atomic values of a big
   dict 3 instructions each (callgrind, dict_int_str). */
FC_INTERNAL_INLINE int
fc_flat_missed(FcCtx *c, PyObject *x)
{
    return Py_TYPE(x) == &PyTuple_Type
           && (PyTuple_GET_SIZE(x) == 0 || fc_deep_atomic(c, PyTuple_GET_ITEM(x, 0)))
           && fc_flat_tuple(c, x);
}

/* Syncs owed (3.14).  _atomic_types is a set that nothing watches, so
   fc_after_user_code compares it whole with fc_refresh's snapshot
   (plan.c, fc_set_moved: about 125 instructions).  Where a reconstruct
   frame's next steps classify nothing before more user code runs or the
   walk ends, its user code's sync checks the watched dicts only and
   leaves the set's compare owed (FcCtx.sets_due,
   fc_after_user_code_owed): after the reductor when the args are empty
   and the class call is user code (fc_deep_generic), after the class
   call when there is no state, and after __setstate__, when a list or
   dict iterator follows or the frame is the bottom one
   (fc_recon_tail_quiet).  The debt is paid by the next user code's sync,
   by a nested walk as it returns (fc_walk), and first thing by the work
   fc_before_user_code does for the memo; a top-level walk returns owing
   (nothing is classified after it).  One compare later sees every change
   made since the snapshot, so nothing is missed by waiting.  Debug
   builds assert that nothing is owed where the frame hands the walk its
   state or its copy for a parent frame.  A reduce object with no args
   and a state in a list now takes two compares where it took three; a
   call of one such object two (its entry's, its class call's) where it
   took four.  Paying wherever the walk classifies instead (in its loop,
   or at every object a frame hands it) cost shared_refs 2% and
   replay_deque's namedtuples 1.5% of our instructions.  Through 3.13
   and on 3.15 (frozensets) there is no set, and both syncs are one. */
#if FC_COPY_SETS_MUTABLE
#  define fc_sets_owed(c) FC_UNLIKELY((c)->sets_due)
FC_NOINLINE int
fc_pay_sets(FcCtx *c)
{
    c->sets_due = 0;
    return fc_sync_deep(c->st);
}

#else
#  define fc_sets_owed(c) 0
#  define fc_pay_sets(c) 0
#endif

/* fc_before_user_code's work when there is some: the entries below the
   small subtrees copied so far ("Small subtrees"), then the byte copies
   recorded (defer.c).  0 | -1+exc */
FC_NOINLINE int
fc_before_user_code_work(FcCtx *c, int show)
{
    /* what follows reads the tables as an eager sync leaves them */
    if (fc_sets_owed(c) && fc_pay_sets(c) < 0) {
        return -1;
    }
    if (c->native.nsubs > 0 && fc_memo_expand(&c->native) < 0) {
        return -1;
    }
    if (fc_defer_flush(c) < 0) {
        return -1;
    }
#if FC_MEMO_ADOPT
    /* a caller's dict: what its holders find there (memo.c, "A caller's
       dict"); a hook's show does it */
    if (c->native.adopted && !show && fc_memo_adopt_sync(c) < 0) {
        return -1;
    }
#else
    (void)show;
#endif
    return 0;
}

FC_INTERNAL_INLINE int
fc_before_user_code(FcCtx *c, int show)
{
    /* one test for both (fc_defer_flush's own, inlined at each of these
       calls, and a second one for the memo's deferred entries cost
       dict_int_str 1.5% of our instructions: the walker's loop compiled
       differently) */
    c->ambient = 0;
    if (FC_UNLIKELY((c->nops | c->native.nsubs | c->native.adopted) != 0)
        && fc_before_user_code_work(c, show) < 0) {
        return -1;
    }
    if (show) {
        return fc_memo_show(c);   /* every copy tracked again: no sweep */
    }
#if !FC_GC_ANY_ALLOC
    return fc_gc_before_user_code(c);
#else
    return 0;
#endif
}

/* Was a prefilled frame's source written since its snapshot?  (pyver.h,
   FC_PREFILL: its version tag through 3.13; the source stamp on 3.14+) */
#if FC_HAVE_DICT_VERSION
#  define fc_src_moved(c, f) (fc_dict_version((f)->x) != (f)->u.dict.ver)
#else
#  define fc_src_moved(c, f) (fc_src_stamp((c)->st) != (f)->u.dict.ver)
#endif

/* A dict key whose __hash__/__eq__ may be user code is about to be
   stored: no tape holds it either (FcCtx.off_tape).  0 | -1+exc */
static int
fc_before_loud_key(FcCtx *c)
{
    c->off_tape = 1;
    return fc_before_user_code(c, 0);
}

/* User code just returned (a hook, a reductor, __setstate__, an
   iterator's __next__, a __setitem__).  The stdlib's next lookup in
   copy._deepcopy_dispatch or copyreg.dispatch_table sees whatever it
   changed there, within the same copy; so must ours: fc_sync_deep, a
   watcher counter on 3.12+ (and _atomic_types on 3.14), five version tags
   before.  0 | -1+exc */
/* What every sync after user code does first: copy()'s tables are no
   longer known current, and a caller's dict may have been written.
   0 | -1+exc */
FC_INLINE int
fc_user_code_returned(FcCtx *c)
{
    c->copy_synced = 0;
#if FC_MEMO_ADOPT
    if (FC_UNLIKELY(c->native.adopted) && fc_memo_adopt_check(c) < 0) {
        return -1;
    }
#endif
    return 0;
}

FC_INLINE int
fc_after_user_code(FcCtx *c)
{
#if FC_COPY_SETS_MUTABLE
    c->sets_due = 0;   /* compared here */
#endif
    if (fc_user_code_returned(c) < 0) {
        return -1;
    }
    return fc_sync_deep(c->st);
}

/* fc_after_user_code where the frame's next steps classify nothing
   ("Syncs owed", above).  0 | -1+exc */
#if FC_COPY_SETS_MUTABLE
FC_NOINLINE int
fc_after_user_code_owed(FcCtx *c)
{
    if (fc_user_code_returned(c) < 0) {
        return -1;
    }
    int r = fc_sync_dicts(c->st);
    if (r < 0) {
        return -1;
    }
    c->sets_due = r == 0;   /* a refresh read the sets again */
    return 0;
}
#endif

/* owe: the frame's next steps let the set's compare wait */
#if FC_COPY_SETS_MUTABLE
#  define fc_after_user_code_or_owe(c, owe) \
    ((owe) ? fc_after_user_code_owed(c) : fc_after_user_code(c))
#else
#  define fc_after_user_code_or_owe(c, owe) ((void)(owe), fc_after_user_code(c))
#endif

/* After a reconstruct frame's class call (with no state) or its
   __setstate__: its next steps run user code again (its list iterator,
   a dict iterator other than OrderedDict's own) or end the walk (the
   bottom frame) before anything is classified ("Syncs owed").  Elsewhere
   the debt would be paid at once, for a few instructions more than the
   eager sync. */
#define fc_recon_tail_quiet(c, r)                                           \
    ((r)->listiter != NULL                                                  \
     || ((r)->dictiter != NULL && (r)->func != (PyObject *)&PyODict_Type)   \
     || (c)->nframes == 1)

/* ------------------------------------------------------------------ */
/* The work stack                                                      */
/* ------------------------------------------------------------------ */

/* A reconstruct frame's state block: the last one freed is kept in the
   spare buffers (a reduce per call needs no malloc).  zeroed | NULL+exc */
static FcRecon *
fc_recon_alloc(FcSpare *sp)
{
    size_t got;
    FcRecon *r = fc_spare_take(sp, FC_SPARE_RECON, sizeof(FcRecon), &got);
    if (r == NULL && (r = PyMem_Malloc(sizeof(FcRecon))) == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memset(r, 0, sizeof(FcRecon));
    return r;
}

static void
fc_recon_free(FcSpare *sp, FcRecon *r)
{
    if (r == NULL) {
        return;
    }
    Py_XDECREF(r->func);
    Py_XDECREF(r->args);
    Py_XDECREF(r->state);
    Py_XDECREF(r->listiter);
    Py_XDECREF(r->dictiter);
    Py_XDECREF(r->newargs);
    Py_XDECREF(r->key);
    Py_XDECREF(r->pval);
    if (r->sl != NULL) {
        for (Py_ssize_t j = 0; j < 3 * r->sl_cap; j++) {
            Py_XDECREF(r->sl[j]);
        }
        PyMem_Free(r->sl);
    }
    Py_XDECREF(r->sl_d);
    Py_XDECREF(r->sl_d2);
    fc_spare_give(sp, FC_SPARE_RECON, r, sizeof(FcRecon));
}

static void fc_slots_abandon(FcCtx *c, FcRecon *r);

/* A reconstruct frame's block, an R_SLOTS one still holding an empty memo
   place first given what the stdlib's memo would hold there. */
static void
fc_recon_release(FcCtx *c, FcRecon *r)
{
    if (r != NULL && r->sl_open) {
        fc_slots_abandon(c, r);
    }
    fc_recon_free(c->native.spare, r);
}

FC_INLINE void
fc_frame_release(FcCtx *c, FcFrame *f)
{
#if FC_PREFILL && !FC_HAVE_DICT_VERSION
    if (f->src_watched) {
        fc_src_unwatch(c->st, f->x);
        f->src_watched = 0;
    }
#endif
    Py_CLEAR(f->x);
    Py_CLEAR(f->y);
    if (f->kind == FR_DICT) {
        Py_CLEAR(f->u.dict.key);
        Py_CLEAR(f->u.dict.val);
    }
    else if (f->kind == FR_RECON) {
        fc_recon_release(c, f->u.recon.r);
        f->u.recon.r = NULL;
    }
}

/* Pop the top frame. */
FC_INLINE void
fc_pop(FcCtx *c)
{
    FcFrame *f = &c->frames[--c->nframes];
    c->hook_depth -= f->hooked;
    fc_frame_release(c, f);
}

/* Room for one more frame.  0 | -1+exc */
static int
fc_frames_grow(FcCtx *c)
{
    /* leaving the inline frames: go straight to a useful size */
    Py_ssize_t ncap = c->frames == c->small_frames ? 256 : c->capframes * 2;
    FcFrame *nf;
    if (c->frames == c->small_frames) {
        size_t got;
        nf = fc_spare_take(c->native.spare, FC_SPARE_FRAMES,
                           sizeof(FcFrame) * (size_t)ncap, &got);
        if (nf != NULL) {
            ncap = (Py_ssize_t)(got / sizeof(FcFrame));
        }
        else {
            nf = PyMem_Malloc(sizeof(FcFrame) * (size_t)ncap);
        }
        if (nf != NULL) {
            memcpy(nf, c->small_frames, sizeof(FcFrame) * (size_t)c->nframes);
        }
    }
    else {
        nf = (ncap > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(FcFrame)) ? NULL
             : PyMem_Realloc(c->frames, sizeof(FcFrame) * (size_t)ncap);
    }
    if (nf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    c->frames = nf;
    c->capframes = ncap;
    return 0;
}

/* A new top frame for x (x and y: new references are taken).
   the frame | NULL+exc */
FC_INLINE FcFrame *
fc_push(FcCtx *c, int kind, PyObject *x, PyObject *y)
{
    if (FC_UNLIKELY(c->nframes == c->capframes) && fc_frames_grow(c) < 0) {
        return NULL;
    }
    FcFrame *f = &c->frames[c->nframes++];
    /* field by field: a memset of the whole 88 bytes compiles to a `rep
       stos`, several times the cost of these stores */
    memset(&f->u, 0, sizeof(f->u));
    f->flags = 0;
    f->kind = (uint8_t)kind;
    f->x = Py_NewRef(x);
    f->y = Py_XNewRef(y);
    return f;
}

/* ------------------------------------------------------------------ */
/* Frames                                                              */
/* ------------------------------------------------------------------ */

/* y.append(v) (v borrowed): a slot the list has room for is filled in
   place, as 3.12+'s _PyList_AppendTakeRef does; else PyList_Append.  A
   list frame's copy is allocated for the whole source list
   (fc_enter_list), so it is filled without a resize and ends allocated to
   its size, as a copy whose items are all atoms does.  (3.10/3.11's
   PyList_Append would first give back the room of a list less than half
   full, then grow it again by reallocations: 1,400 instructions on
   pyperformance's [l] * 100.)  A list whose allocation exceeds its size
   is a valid list at every step, whoever holds it.  No user code but what
   PyList_Append's allocation may run.  0 | -1+exc */
FC_INLINE int
fc_list_append(PyObject *y, PyObject *v)
{
#if !FC_FT
    PyListObject *l = (PyListObject *)y;
    Py_ssize_t n = Py_SIZE(l);
    if (FC_LIKELY(n < l->allocated)) {
        l->ob_item[n] = Py_NewRef(v);
        Py_SET_SIZE(l, n + 1);
        return 0;
    }
#endif
    return PyList_Append(y, v);
}

#if FC_FT
/* y.append(item), taking over the caller's reference to item (also on
   failure), as the interpreter's own _PyList_AppendTakeRef does: a slot
   the list has room for is filled in place, else PyList_Append.  No user
   code.  0 | -1+exc */
FC_INLINE int
fc_list_append_take(PyObject *y, PyObject *item)
{
    PyListObject *l = (PyListObject *)y;
    int done = 0;
    /* under y's lock, as PyList_Append: a thread that was handed y (a
       hook's memo) may be changing it; uncontended, it costs a write to
       y's own line, not item's */
    Py_BEGIN_CRITICAL_SECTION(y);
    Py_ssize_t n = Py_SIZE(l);
    if (n < l->allocated) {
        _Py_atomic_store_ptr_release(&l->ob_item[n], item);
        Py_SET_SIZE(l, n + 1);
        done = 1;
    }
    Py_END_CRITICAL_SECTION();
    if (done) {
        return 0;
    }
    int r = PyList_Append(y, item);
    Py_DECREF(item);
    return r;
}
#endif

/* _deepcopy_list: y = []; memo[id(x)] = y; for a in x: y.append(deepcopy(a)) */
FC_INLINE int
fc_list_resume(FcCtx *c, FcFrame *f, PyObject *res, PyObject **out)
{
    PyObject *x = f->x, *y = f->y;
    if (res != NULL) {
        int r = fc_list_append(y, res);
        Py_DECREF(res);
        if (r < 0) {
            return -1;
        }
    }
    int native = c->mode == FC_MEMO_NATIVE;
#if !FC_FT
    /* this loop's last memo hit ([l] * 100 is l 100 times): the same item
       again gets the same answer, as nothing is stored in the loop and
       nobody else can write a native memo; the item is alive (its entry
       keeps it so), so its address is its own.  Borrowed. */
    PyObject *hit_src = NULL, *hit_copy = NULL;
#endif
    /* the stdlib iterates the live list: a hook's append is copied too */
    for (;;) {
        PyObject *item = NULL;
        FC_CS_BEGIN(x);
        if (f->u.list.i < PyList_GET_SIZE(x)) {
            item = PyList_GET_ITEM(x, f->u.list.i);
            FC_FT_INCREF(item);
        }
        FC_CS_END();
        if (item == NULL) {
            break;
        }
#if FC_FT
        if (native && fc_deep_atomic(c, item)) {
            /* deepcopy(item) is item: the reference taken under x's lock
               becomes y's, with no pin -- one count on item's line where
               pin, unpin and append made three ("Shared atoms" in
               docs/free-threading.md) */
            f->u.list.i++;
            if (fc_list_append_take(y, item) < 0) {
                return -1;
            }
            continue;
        }
#endif
        FC_FT_PIN2(c, item, NULL);
        f->u.list.i++;
        if (native) {
#if !FC_FT
            if (item == hit_src) {
                if (fc_list_append(y, hit_copy) < 0) {
                    return -1;
                }
                /* and the run of it that follows, as far as y has room:
                   the same answer each time, and nothing runs in between,
                   so neither list can change under this loop */
                PyListObject *yl = (PyListObject *)y;
                Py_ssize_t i = f->u.list.i, n = Py_SIZE(yl);
                Py_ssize_t lim = PyList_GET_SIZE(x) - i, k = 0;
                if (lim > yl->allocated - n) {
                    lim = yl->allocated - n;
                }
                PyObject **from = ((PyListObject *)x)->ob_item + i, **to = yl->ob_item + n;
                while (k < lim && from[k] == item) {
                    to[k++] = hit_copy;
                }
                fc_incref_n(hit_copy, k);
                Py_SET_SIZE(yl, n + k);
                f->u.list.i = i + k;
                c->native.hits += k + 1;
                continue;
            }
#endif
            /* item is borrowed from x's slot i: that one reference */
            PyObject *v = fc_deep_atomic(c, item) ? item : fc_read_lookup(c, item, 1);
            if (v == NULL && fc_flat_missed(c, item)) {
                v = item;
            }
            if (v != NULL) {
#if !FC_FT
                if (v != item) {
                    hit_src = item;
                    hit_copy = v;
                }
#endif
                if (fc_list_append(y, v) < 0) {
                    return -1;
                }
                continue;
            }
        }
        *out = Py_NewRef(item);
        return 1;
    }
    /* the stdlib's loop variable goes with its loop */
    FC_FT_PIN2(c, NULL, NULL);
    if (fc_memo_finish_stored(c, x, y) < 0) {
        return -1;
    }
    *out = Py_NewRef(y);
    return 0;
}

/*
 * Values put in place
 * -------------------
 * A prefilled copy is x.copy(): for a combined-table x (not an instance's
 * split __dict__) CPython clones the key table, so entry i of y is entry i
 * of x, and PyDict_Next's position after yielding it is i + 1.  Replacing
 * that value with its copy by PyDict_SetItem hashes and looks the key up
 * again (~170 instructions); writing the entry's value directly does what
 * insertdict's replacement does for a dict nobody else has seen -- y's
 * version tag is not moved, which no one can tell: only this frame holds y
 * while it is prefilled (it is demoted before anything shows it).
 *
 * The table layout is the interpreter's private one, the same on
 * 3.11-3.15 (Include/internal/pycore_dict.h: the keys object's header,
 * the indices -- 1 << dk_log2_index_bytes bytes -- then the entries,
 * {key, value} for str-only tables and {hash, key, value} otherwise).  It
 * is checked at import on dicts made for the purpose (fc_dict_slots_probe:
 * any difference and the feature stays off), and each write checks that
 * the entry holds the key and the value it replaces, that the table is
 * y's alone and that tracking needs no change (else PyDict_SetItem).
 * 3.10's layout differs, and free-threaded builds lock dicts: both keep
 * PyDict_SetItem (pyver.h, FC_DICT_SLOT_LAYOUT).  3.14+ have no version
 * tag to leave unmoved; a prefilled y is never watched.
 */
#define FC_DICT_SLOTS FC_DICT_SLOT_LAYOUT

#if FC_DICT_SLOTS
typedef struct {
    Py_ssize_t dk_refcnt;
    uint8_t dk_log2_size;
    uint8_t dk_log2_index_bytes;
    uint8_t dk_kind;               /* 0 general, 1 str keys, 2 split */
    uint32_t dk_version;
    Py_ssize_t dk_usable;
    Py_ssize_t dk_nentries;
    char dk_indices[];
} FcDictKeys;

typedef struct { Py_hash_t hash; PyObject *key, *value; } FcDictEntry;
typedef struct { PyObject *key, *value; } FcDictStrEntry;

/* d's keys when its table is combined (not an instance's split one) |
   NULL */
FC_INLINE FcDictKeys *
fc_dict_combined(PyObject *d)
{
    PyDictObject *mp = (PyDictObject *)d;
    FcDictKeys *dk = (FcDictKeys *)(void *)mp->ma_keys;
    return mp->ma_values == NULL && dk->dk_kind <= 1 ? dk : NULL;
}

/* Entry ix (0 <= ix < dk_nentries: the shared empty table's entries are
   not even aligned) of a combined table, as its key's place; the value's
   is the next one ({key, value} or {hash, key, value}), and entries are
   `*stride` places apart */
FC_INLINE PyObject **
fc_dict_entry(FcDictKeys *dk, Py_ssize_t ix, Py_ssize_t *stride)
{
    char *entries = dk->dk_indices + ((size_t)1 << dk->dk_log2_index_bytes);
    if (dk->dk_kind == 1) {
        *stride = 2;
        return &((FcDictStrEntry *)(void *)entries)[ix].key;
    }
    *stride = 3;
    return &((FcDictEntry *)(void *)entries)[ix].key;
}

/* The place of entry ix's value in combined dict d, when its key is `key`
   | NULL */
FC_INLINE PyObject **
fc_dict_value_at(PyObject *d, Py_ssize_t ix, PyObject *key)
{
    FcDictKeys *dk = fc_dict_combined(d);
    Py_ssize_t stride;
    if (dk == NULL || dk->dk_refcnt != 1 || ix < 0 || ix >= dk->dk_nentries) {
        return NULL;
    }
    PyObject **e = fc_dict_entry(dk, ix, &stride);
    return e[0] == key ? &e[1] : NULL;
}

/* PyDict_Next(d, ppos, pk, pv) on a combined table: its entries read where
   fc_dict_entry finds them, deleted ones (no value) skipped as PyDict_Next
   skips them.  Borrowed *pk, *pv.  1 | 0 at the end | -1 not a combined
   table (an instance's split one): use PyDict_Next */
FC_INLINE int
fc_dict_next_raw_ents(PyObject *d, Py_ssize_t *ppos, PyObject **pk, PyObject **pv,
                      PyObject ***ents, uint8_t *ents_stride)
{
    FcDictKeys *dk = fc_dict_combined(d);
    if (dk == NULL) {
        return -1;
    }
    Py_ssize_t i = *ppos, n = dk->dk_nentries, stride;
    if (i < 0 || i >= n) {
        return 0;
    }
    PyObject **e = fc_dict_entry(dk, i, &stride);
    if (ents != NULL) {
        /* (fc_dict_next_ents) */
        *ents = e - i * stride;
        *ents_stride = (uint8_t)stride;
    }
    while (e[1] == NULL) {
        if (++i >= n) {
            return 0;
        }
        e += stride;
    }
    *pk = e[0];
    *pv = e[1];
    *ppos = i + 1;
    return 1;
}

FC_INLINE int
fc_dict_next_raw(PyObject *d, Py_ssize_t *ppos, PyObject **pk, PyObject **pv)
{
    return fc_dict_next_raw_ents(d, ppos, pk, pv, NULL, NULL);
}
#endif

/* PyDict_Next for a dict frame's source: read directly while the layout
   is the one checked at import (~50 instructions less an entry).
   Borrowed *pk, *pv.  1 | 0 at the end */
FC_INTERNAL_INLINE int
fc_dict_next_st(FcState *st, PyObject *d, Py_ssize_t *ppos, PyObject **pk, PyObject **pv)
{
#if FC_DICT_SLOTS
    if (FC_LIKELY(st->dict_slots_ok)) {
        int r = fc_dict_next_raw(d, ppos, pk, pv);
        if (r >= 0) {
            return r;
        }
    }
#else
    (void)st;
#endif
    return PyDict_Next(d, ppos, pk, pv);
}

FC_INTERNAL_INLINE int
fc_dict_next(FcCtx *c, PyObject *d, Py_ssize_t *ppos, PyObject **pk, PyObject **pv)
{
    return fc_dict_next_st(c->st, d, ppos, pk, pv);
}

#if FC_DICT_SLOTS
/* fc_dict_next that also gives the place of entry 0's key in d's entry
   array, and the places between entries, where it read the array
   directly (else leaves them).  Borrowed *pk, *pv.  1 | 0 at the end */
FC_INLINE int
fc_dict_next_ents(FcCtx *c, PyObject *d, Py_ssize_t *ppos, PyObject **pk, PyObject **pv,
                  PyObject ***ents, uint8_t *stride)
{
    if (FC_LIKELY(c->st->dict_slots_ok)) {
        int r = fc_dict_next_raw_ents(d, ppos, pk, pv, ents, stride);
        if (r >= 0) {
            return r;
        }
    }
    return PyDict_Next(d, ppos, pk, pv);
}
#endif

/* y[key] = value in the prefilled copy y, where entry ix (cloned from x's
   entry ix) should hold key: a live entry with that very key object is
   y's entry for it.  1 done (a new reference taken) | 0 not so, nothing
   changed: use PyDict_SetItem */
FC_INTERNAL_INLINE int
fc_dict_put_at_st(FcState *st, PyObject *y, Py_ssize_t ix, PyObject *key, PyObject *value)
{
#if FC_DICT_SLOTS
    if (!st->dict_slots_ok) {
        return 0;
    }
    PyObject **slot = fc_dict_value_at(y, ix, key);
    if (slot == NULL || *slot == NULL) {
        return 0;
    }
    /* insertdict tracks an untracked dict that gets a value the collector
       may have to see: left to it */
    if (!PyObject_GC_IsTracked(y) && PyObject_IS_GC(value)
        && (!PyTuple_CheckExact(value) || PyObject_GC_IsTracked(value))) {
        return 0;
    }
    PyObject *old = *slot;
    st->test.dict_puts++;
    *slot = Py_NewRef(value);
    Py_DECREF(old);   /* x holds it still (else x moved: demoted first) */
    return 1;
#else
    (void)st; (void)y; (void)ix; (void)key; (void)value;
    return 0;
#endif
}

FC_INTERNAL_INLINE int
fc_dict_put_at(FcCtx *c, PyObject *y, Py_ssize_t ix, PyObject *key, PyObject *value)
{
    return fc_dict_put_at_st(c->st, y, ix, key, value);
}

/* y[key] = value for a dict frame's copy: in place while it is prefilled
   (entry f->u.dict.pos - 1 is the one just read), else PyDict_SetItem.
   0 | -1+exc */
FC_INLINE int
fc_dict_store(FcCtx *c, FcFrame *f, PyObject *key, PyObject *value)
{
    if (f->prefill && fc_dict_put_at(c, f->y, f->u.dict.pos - 1, key, value)) {
        return 0;
    }
    return PyDict_SetItem(f->y, key, value);
}

FC_INTERNAL int
fc_dict_slots_probe(FcState *st)
{
    st->dict_slots_ok = 0;
#if FC_DICT_SLOTS
    /* a str-keyed and a general table, each with a deleted entry first
       (so positions are not just insertion counts), copied as prefill
       copies them; every entry must be where PyDict_Next finds it */
    PyObject *src[2] = {PyDict_New(), PyDict_New()}, *cp[2] = {NULL, NULL};
    int ok = src[0] != NULL && src[1] != NULL;
    for (int t = 0; ok && t < 2; t++) {
        for (long i = 0; ok && i < 7; i++) {
            PyObject *k = t == 0 ? PyUnicode_FromFormat("k%ld", i) : PyLong_FromLong(1000 + i);
            PyObject *v = PyLong_FromLong(i);
            ok = k != NULL && v != NULL && PyDict_SetItem(src[t], k, v) == 0
                 && (i != 0 || PyDict_DelItem(src[t], k) == 0);
            Py_XDECREF(k);
            Py_XDECREF(v);
        }
        ok = ok && (cp[t] = PyDict_Copy(src[t])) != NULL;   /* lint: own container */
        Py_ssize_t pos = 0, n = 0;
        PyObject *k, *v;
        Py_ssize_t pos2 = 0;
        PyObject *k2, *v2;
        while (ok && PyDict_Next(src[t], &pos, &k, &v)) {
            PyObject **slot = fc_dict_value_at(cp[t], pos - 1, k);
            ok = slot != NULL && *slot == v;
            /* and fc_dict_next's walk (read as if the layout were proven)
               is PyDict_Next's, deleted entry skipped */
            ok = ok && fc_dict_next_raw(src[t], &pos2, &k2, &v2) == 1
                 && pos2 == pos && k2 == k && v2 == v;
            n++;
        }
        ok = ok && fc_dict_next_raw(src[t], &pos2, &k2, &v2) == 0;
        ok = ok && n == 6 && ((FcDictKeys *)(void *)((PyDictObject *)cp[t])->ma_keys)->dk_kind
                             == (t == 0 ? 1 : 0);
    }
    Py_XDECREF(src[0]);
    Py_XDECREF(src[1]);
    Py_XDECREF(cp[0]);
    Py_XDECREF(cp[1]);
    if (PyErr_Occurred()) {
        return -1;
    }
    st->dict_slots_ok = ok;
#endif
    return 0;
}

/* Turn a prefilled dict frame into an ordinary one: y keeps only the
   f->u.dict.done entries already copied (y's order is x's order at the
   time of the copy, and only values were replaced since).  y is emptied
   and those entries put back: deleting the others would hash their keys,
   and a key that is not quiet (fc_key_quiet) may be user code the stdlib
   never calls there.  The entries put back all have quiet keys: prefill
   demotes at the first key that is not.  0 | -1+exc */
static int
fc_dict_demote(FcFrame *f)
{
    PyObject *y = f->y, *k, *v, *keep;
    Py_ssize_t pos = 0, i = 0, done = f->u.dict.done;
    f->prefill = 0;
    if (PyDict_GET_SIZE(y) <= done) {
        return 0;
    }
    keep = PyList_New(0);
    if (keep == NULL) {
        return -1;
    }
    while (i++ < done && PyDict_Next(y, &pos, &k, &v)) {
        FC_ASSERT(fc_key_quiet(k));
        Py_INCREF(k);
        Py_INCREF(v);
        int r = PyList_Append(keep, k) < 0 || PyList_Append(keep, v) < 0 ? -1 : 0;
        Py_DECREF(k);
        Py_DECREF(v);
        if (r < 0) {
            Py_DECREF(keep);
            return -1;
        }
    }
    PyDict_Clear(y);
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(keep); j += 2) {
        if (PyDict_SetItem(y, PyList_GET_ITEM(keep, j), PyList_GET_ITEM(keep, j + 1)) < 0) {
            Py_DECREF(keep);
            return -1;
        }
    }
    Py_DECREF(keep);
    return 0;
}

/* An R_SLOTS frame's slot dict and its copy so far, made for real and put in
   their memo place: what the stdlib's memo holds while _deepcopy_dict is
   copying the values (the copy gets each value's copy as it is made).
   0 | -1+exc */
static int
fc_slots_demote(FcCtx *c, FcRecon *r)
{
    PyObject **sl = r->sl;
    Py_ssize_t cap = r->sl_cap;
    PyObject *d = fc_memo_pairs_dict(r->sl_n, sl, sl + cap);
    PyObject *d2 = d != NULL ? fc_memo_pairs_dict(r->sl_i, sl, sl + 2 * cap) : NULL;
    if (d2 == NULL) {
        Py_XDECREF(d);
        return -1;
    }
    fc_memo_fill(&c->native, r->sl_pos, d, d2);
    r->sl_d = d;
    r->sl_d2 = d2;
    r->sl_open = 0;
    return 0;
}

/* An R_SLOTS frame popped with its place still empty (the walk failed):
   the place gets what the stdlib's memo would hold.  Keeps the pending
   exception. */
static void
fc_slots_abandon(FcCtx *c, FcRecon *r)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (fc_slots_demote(c, r) < 0) {
        PyErr_Clear();
        fc_memo_fill(&c->native, r->sl_pos, NULL, NULL);   /* dropped */
        r->sl_open = 0;
    }
    PyErr_Restore(et, ev, tb);
}

/* Before the memo is shown to Python code: no half-built dict may differ
   from the stdlib's.  0 | -1+exc */
static int
fc_demote_all(FcCtx *c)
{
    for (Py_ssize_t i = 0; i < c->nframes; i++) {
        FcFrame *f = &c->frames[i];
        if (f->kind == FR_DICT && f->prefill && fc_dict_demote(f) < 0) {
            return -1;
        }
        if (f->kind == FR_RECON && f->u.recon.r != NULL && f->u.recon.r->sl_open
            && fc_slots_demote(c, f->u.recon.r) < 0) {
            return -1;
        }
    }
    return 0;
}

/* References to the key and value of the entry a dict frame just read
   (before f->u.dict.pos) that the frame can vouch for: x's entry; a
   prefilled y's entry too while it still holds that value (checked).
   0: not known (an ordinary lookup). */
FC_NOINLINE Py_ssize_t
fc_dict_own(FcCtx *c, FcFrame *f, PyObject *k, PyObject *v)
{
    if (!f->prefill) {
        return 1;
    }
#if FC_DICT_SLOTS
    PyObject **slot = c->st->dict_slots_ok ? fc_dict_value_at(f->y, f->u.dict.pos - 1, k) : NULL;
    return slot != NULL && *slot == v ? 2 : 0;
#else
    (void)c;
    (void)k;
    (void)v;
    return 0;
#endif
}

#if FC_HAVE_FROZENDICT
static int fc_frozendict_finish(FcCtx *c, FcFrame *f, PyObject **out);
#endif

/* _deepcopy_dict: y = {}; memo[id(x)] = y;
   for key, value in x.items(): y[deepcopy(key)] = deepcopy(value)
   (the value is copied first) */
FC_INLINE int
fc_dict_resume(FcCtx *c, FcFrame *f, PyObject *res, PyObject **out)
{
    PyObject *x = f->x, *y = f->y;
#if FC_PREFILL
    if (f->prefill && fc_src_moved(c, f) && fc_dict_demote(f) < 0) {
        Py_XDECREF(res);
        return -1;
    }
#endif
    if (res != NULL) {
        if (f->phase == D_VAL) {
            f->u.dict.val = res;
            f->phase = D_KEY;
            PyObject *k = f->u.dict.key;   /* hand over our reference */
            f->u.dict.key = NULL;
            if (!(c->mode == FC_MEMO_NATIVE && fc_deep_atomic(c, k))) {
                *out = k;
                return 1;
            }
            res = k;                       /* deepcopy(k) is k: no round trip */
        }
        /* D_KEY: res is the copied key; its __hash__ may be user code */
        int r = fc_key_quiet(res) ? 0 : fc_before_loud_key(c);
        if (r == 0) {
            r = fc_dict_store(c, f, res, f->u.dict.val);
        }
        Py_DECREF(res);
        Py_CLEAR(f->u.dict.val);
        if (r < 0) {
            return -1;
        }
        f->u.dict.done++;
        f->phase = D_NEXT;
    }
    int native = c->mode == FC_MEMO_NATIVE;
    for (;;) {
        PyObject *k, *v;
        if (f->prefill && f->u.dict.left == 0) {
            /* x's version tag has not moved since the copy began (else the
               frame was demoted): the iterator's last step would find the
               same size and no further entry */
            break;
        }
#if FC_FT
        /* another thread may write x: each step reads it under its lock,
           with references of our own (pinned until the next step) */
        int step;   /* 1 an entry | 0 the end | -1 size changed | -2 x moved
                       | 2 prefilled entries to the last skipped */
        FC_CS_BEGIN(x);
        for (;;) {
#  if FC_PREFILL
            if (f->prefill && fc_src_moved(c, f)) {
                /* written since y was made from it */
                step = -2;
                break;
            }
#  endif
            if (PyDict_GET_SIZE(x) != f->u.dict.used) {
                step = -1;
                break;
            }
            step = PyDict_Next(x, &f->u.dict.pos, &k, &v);
            if (step && native && f->prefill && f->u.dict.left > 0
                && (FK_BIT(fc_kind(Py_TYPE(k))) & FC_QUIET_KEYS & c->st->deep_ok)
                && fc_deep_atomic(c, k) && fc_deep_atomic(c, v)) {
                /* what the loop below does with it: y has it already (no
                   write, no user code), so stay under the lock */
                f->u.dict.left--;
                f->u.dict.done++;
                if (f->u.dict.left == 0) {
                    step = 2;
                    break;
                }
                continue;
            }
            if (step) {
                /* one of them already pinned (a run of one value, say)
                   needs no second reference: FC_FT_REPIN2 */
                if (k != c->pin[0]) {
                    Py_INCREF(k);
                }
                if (v != c->pin[1]) {
                    Py_INCREF(v);
                }
            }
            break;
        }
        FC_CS_END();
        if (step == 2) {
            continue;
        }
        if (step == -2) {
            if (fc_dict_demote(f) < 0) {
                return -1;
            }
            continue;
        }
        if (step < 0) {
            PyErr_SetString(PyExc_RuntimeError, "dictionary changed size during iteration");
            return -1;
        }
        if (!step) {
            break;
        }
        FC_FT_REPIN2(c, k, v);
#else
        if (PyDict_GET_SIZE(x) != f->u.dict.used) {
            PyErr_SetString(PyExc_RuntimeError, "dictionary changed size during iteration");
            return -1;
        }
#  if FC_PREFILL && FC_DICT_SLOTS
        if (f->u.dict.ents != NULL && f->prefill && !fc_src_moved(c, f)) {
            /* x is still its snapshot: its entries are where the frame
               found them, and `left` (over 0: the loop's top) of them are
               live from pos on.  No keys object, kind or entry offset to
               find again (fc_dict_next's work at every step). */
            PyObject **e = f->u.dict.ents + f->u.dict.pos * f->ents_stride;
            while (e[1] == NULL) {
                e += f->ents_stride;    /* a deleted entry */
                f->u.dict.pos++;
            }
            k = e[0];
            v = e[1];
            f->u.dict.pos++;
        }
        else if (f->prefill) {
            /* its first step, or x moved: the entry array is found as it is
               read, and kept for the next steps (used only while x is its
               snapshot, that is while it is the snapshot's array) */
            if (!fc_dict_next_ents(c, x, &f->u.dict.pos, &k, &v, &f->u.dict.ents,
                                   &f->ents_stride)) {
                break;
            }
        }
        else
#  endif
        if (!fc_dict_next(c, x, &f->u.dict.pos, &k, &v)) {
            break;
        }
#endif
        if (f->u.dict.left-- == 0) {
            PyErr_SetString(PyExc_RuntimeError, "dictionary keys changed during iteration");
            return -1;
        }
        if (f->prefill
            && !(FK_BIT(fc_kind(Py_TYPE(k))) & FC_QUIET_KEYS & c->st->deep_ok)) {
            /* the copied key might differ: insertion order would; or its
               hash is not the interpreter's own.  Demoting allocates (a
               collection's finalizers may change x), so this entry goes
               the ordinary way, on references of its own. */
            c->off_tape = 1;
            Py_INCREF(k);
            Py_INCREF(v);
            if (fc_dict_demote(f) < 0) {
                Py_DECREF(k);
                Py_DECREF(v);
                return -1;
            }
            f->u.dict.key = k;
            f->phase = D_VAL;
            *out = v;
            return 1;
        }
        if (native) {
            /* k and v are borrowed from x's entry.  How many references to
               them the frame vouches for (fc_dict_own: 25 instructions on a
               prefilled dict) is worked out only for one that is looked up
               while misses are proven -- and whether they are, only for a
               value or key looked up at all: an atomic one asks nothing
               (dict_int_str's entries).  own < 0: not worked out yet */
            Py_ssize_t own = -1;
            PyObject *cv = v;
            if (!fc_deep_atomic(c, v)) {
                /* a shared value: a count over 2 can equal nothing the frame
                   vouches for (1 or 2), so PY_SSIZE_T_MAX, a count no object
                   has, fails the proof without working it out.  The one
                   answer that differs from own 0's plain lookup is the flat
                   tuple's (itself), which the memo cannot hold
                   (fc_read_lookup) */
                Py_ssize_t ov = 0;
                if (FC_UNLIKELY(fc_memo_proving(&c->native))) {
                    ov = Py_REFCNT(v) > 2 ? PY_SSIZE_T_MAX : (own = fc_dict_own(c, f, k, v));
                }
                cv = fc_read_lookup(c, v, ov);
            }
            if (cv != NULL) {
                PyObject *ck = k;
                if (!fc_deep_atomic(c, k)) {
                    if (own < 0) {
                        own = FC_UNLIKELY(fc_memo_proving(&c->native)) ? fc_dict_own(c, f, k, v)
                                                                        : 0;
                    }
                    ck = fc_memo_get_own(&c->native, k, own);
                }
                if (ck != NULL) {
                    if (!(f->prefill && cv == v)) {
                        /* a key's __hash__/__eq__ may drop x's references:
                           hold ours (free-threaded builds pinned k and v,
                           so only a memo's copy needs one -- a shared
                           atom's line is not written twice more) */
                        int hold_k = !FC_FT || ck != k, hold_v = !FC_FT || cv != v;
                        if (hold_k) {
                            Py_INCREF(ck);
                        }
                        if (hold_v) {
                            Py_INCREF(cv);
                        }
                        int r = fc_key_quiet(ck) ? 0 : fc_before_loud_key(c);
                        if (r == 0) {
                            r = fc_dict_store(c, f, ck, cv);
                        }
                        if (hold_k) {
                            Py_DECREF(ck);
                        }
                        if (hold_v) {
                            Py_DECREF(cv);
                        }
                        if (r < 0) {
                            return -1;
                        }
                    }
                    f->u.dict.done++;
                    continue;
                }
                f->u.dict.val = Py_NewRef(cv);
                f->phase = D_KEY;
                *out = Py_NewRef(k);
                return 1;
            }
        }
        f->u.dict.key = Py_NewRef(k);
        f->phase = D_VAL;
        *out = Py_NewRef(v);
        return 1;
    }
    FC_FT_PIN2(c, NULL, NULL);
#if FC_HAVE_FROZENDICT
    if (f->frozen) {
        return fc_frozendict_finish(c, f, out);
    }
#endif
    if (fc_untrack(c, y) < 0 || fc_memo_finish_stored(c, x, y) < 0) {
        return -1;
    }
    *out = Py_NewRef(y);
    return 0;
}

#if FC_HAVE_FROZENDICT
/* ------------------------------------------------------------------ */
/* frozendict (3.15+)                                                  */
/* ------------------------------------------------------------------ */
/*
 * copy._deepcopy_frozendict(x, memo):
 *     y = {}
 *     for key, value in x.items():
 *         y[deepcopy(key, memo)] = deepcopy(value, memo)
 *     try: return memo[id(x)]       # a recursive structure may have put it
 *     except KeyError: pass
 *     return frozendict(y)
 * and deepcopy() then stores the result and keeps x alive, as for a tuple.
 * Natively: a dict frame (FcFrame.frozen) that fills a plain dict as
 * _deepcopy_dict would, without the memo store at its start (prefill never:
 * x.copy() would be a frozendict), then the tuple's ending.  A frozendict
 * cannot change while its items are copied, so the frame's size checks
 * never fire.
 */

/* deepcopy(x) of an exact frozendict whose stdlib copier is the original
   (FcState.fdict_ok).  FC_PUSHED | NULL+exc */
static PyObject *
fc_enter_frozendict(FcCtx *c, PyObject *x)
{
    PyObject *y = PyDict_New();
    if (y == NULL) {
        return NULL;
    }
    FcFrame *f = fc_push(c, FR_DICT, x, y);
    Py_DECREF(y);
    if (f == NULL) {
        return NULL;
    }
    f->frozen = 1;
    f->u.dict.used = f->u.dict.left = PyDict_GET_SIZE(x);
    return FC_PUSHED;
}

/* The end of a frozen frame: memo[id(x)] if a copy made meanwhile put it
   there, else frozendict(y); then deepcopy()'s store.  0 | -1+exc */
static int
fc_frozendict_finish(FcCtx *c, FcFrame *f, PyObject **out)
{
    PyObject *hit, *y;
    /* (0: a plain lookup; no miss of x was remembered when it began) */
    int r = fc_memo_getitem(c, f->x, 0, &hit);
    if (r < 0) {
        return -1;
    }
    if (r) {
        c->off_tape = 1;
        y = hit;
    }
    else if ((y = PyFrozenDict_New(f->y)) == NULL) {
        return -1;
    }
    if (fc_memo_finish(c, f->x, y) < 0) {
        Py_DECREF(y);
        return -1;
    }
    *out = y;
    return 0;
}
#endif

/* Item i of the tuple frame's copy is res (stolen).  f->y stays NULL until
   an item differs from the original.  0 | -1+exc */
static int
fc_tuple_put(FcFrame *f, PyObject *res)
{
    PyObject *x = f->x;
    Py_ssize_t i = f->u.tuple.i;
    if (f->y == NULL && res != PyTuple_GET_ITEM(x, i)) {
        f->y = PyTuple_New(PyTuple_GET_SIZE(x));
        if (f->y == NULL) {
            Py_DECREF(res);
            return -1;
        }
        for (Py_ssize_t j = 0; j < i; j++) {
            PyTuple_SET_ITEM(f->y, j, Py_NewRef(PyTuple_GET_ITEM(x, j)));
        }
    }
    if (f->y != NULL) {
        PyTuple_SET_ITEM(f->y, i, res);
    }
    else {
        Py_DECREF(res);
    }
    f->u.tuple.i++;
    return 0;
}

/* _deepcopy_tuple: copy every item; a memo entry for x made meanwhile wins;
   all items identical -> x itself. */
FC_INLINE int
fc_tuple_resume(FcCtx *c, FcFrame *f, PyObject *res, PyObject **out)
{
    PyObject *x = f->x;
    Py_ssize_t n = PyTuple_GET_SIZE(x);
    if (res != NULL && fc_tuple_put(f, res) < 0) {
        return -1;
    }
    int native = c->mode == FC_MEMO_NATIVE;
    while (f->u.tuple.i < n) {
        PyObject *item = PyTuple_GET_ITEM(x, f->u.tuple.i);
        if (native) {
            PyObject *v = fc_deep_atomic(c, item) ? item : fc_read_lookup(c, item, 1);
            if (v == NULL && fc_flat_missed(c, item)) {
                v = item;
            }
            if (v != NULL) {
                if (fc_tuple_put(f, Py_NewRef(v)) < 0) {
                    return -1;
                }
                continue;
            }
        }
        *out = Py_NewRef(item);
        return 1;
    }
    PyObject *hit;
    int r = fc_memo_getitem(c, x, f->u.tuple.since, &hit);
    if (r < 0) {
        return -1;
    }
    if (r) {
        c->off_tape = 1;    /* recursive: memoized by a copy of its items */
    }
    PyObject *y = r ? hit : Py_NewRef(f->y != NULL ? f->y : x);
    if ((y == f->y && fc_untrack(c, y) < 0) || fc_memo_finish(c, x, y) < 0) {
        Py_DECREF(y);
        return -1;
    }
    *out = y;
    return 0;
}

/* _deepcopy_method: type(x)(x.__func__, deepcopy(x.__self__, memo)) */
static int
fc_method_resume(FcCtx *c, FcFrame *f, PyObject *res, PyObject **out)
{
    if (res == NULL) {
        *out = Py_NewRef(PyMethod_GET_SELF(f->x));
        return 1;
    }
    PyObject *y = PyObject_CallFunctionObjArgs((PyObject *)Py_TYPE(f->x),
                                               PyMethod_GET_FUNCTION(f->x), res, NULL);
    Py_DECREF(res);
    *out = fc_memo_done(c, f->x, y);
    return *out == NULL ? -1 : 0;
}

/* The R_SLOTS phase of a reconstruct frame (fc_deep_slots): res is the
   last value's copy (stolen) or NULL.  1 (*out: the next value to copy) |
   0 done, the state applied | -1+exc.  Kept out of fc_recon_resume, which
   the walker's loop inlines. */
FC_NOINLINE int
fc_slots_resume(FcCtx *c, FcFrame *f, PyObject *res, PyObject **out)
{
    FcState *st = c->st;
    FcRecon *r = f->u.recon.r;
    /* _deepcopy_dict of the slot dict: y2[key] = deepcopy(value)
       for each, in order (fc_deep_slots) */
    PyObject **sl = r->sl;
    Py_ssize_t cap = r->sl_cap;
    if (res != NULL) {
        if (r->sl_d2 != NULL && PyDict_SetItem(r->sl_d2, sl[r->sl_i], res) < 0) {
            Py_DECREF(res);
            return -1;
        }
        sl[2 * cap + r->sl_i++] = res;
        res = NULL;
    }
    while (r->sl_i < r->sl_n) {
        PyObject *v = sl[cap + r->sl_i];
        if (c->mode != FC_MEMO_NATIVE || !fc_deep_atomic(c, v)) {
            *out = Py_NewRef(v);
            return 1;
        }
        if (r->sl_d2 != NULL && PyDict_SetItem(r->sl_d2, sl[r->sl_i], v) < 0) {
            return -1;
        }
        sl[2 * cap + r->sl_i++] = Py_NewRef(v);
    }
    int no_setstate = r->ptag != 0 && Py_TYPE(f->y) == r->ptype
                      && fc_type_tag(r->ptype) == r->ptag;
    if (r->sl_open && no_setstate && c->mode == FC_MEMO_NATIVE) {
        /* nobody saw the temporaries: they stay a ghost, and the
           state is applied from the copies -- `for key, value in
           slotstate.items(): setattr(y, key, value)` */
        if (fc_memo_ghost_slots(&c->native, r->sl_pos, r->sl_n, sl, sl + cap,
                                sl + 2 * cap) < 0) {
            return -1;
        }
        r->sl_open = 0;
        c->st->test.slot_ghosts++;
        int rc = fc_before_user_code(c, 0);
        for (Py_ssize_t j = 0; rc == 0 && j < r->sl_n; j++) {
            rc = PyObject_SetAttr(f->y, sl[j], sl[2 * cap + j]);
        }
        if (rc == 0) {
            rc = fc_after_user_code(c);
        }
        if (rc < 0) {
            return -1;
        }
        return 0;
    }
    /* made for real: the dict's keep-alive, then (None, dict) ->
       (None, copy), kept alive, and the state applied as
       R_STATE_GOT does */
    if (r->sl_open && fc_slots_demote(c, r) < 0) {
        return -1;
    }
    PyObject *t = NULL, *t2 = NULL;
    int rc = fc_memo_keep_alive(c, r->sl_d);
    if (rc == 0) {
        t = PyTuple_Pack(2, Py_None, r->sl_d);
        t2 = t != NULL ? PyTuple_Pack(2, Py_None, r->sl_d2) : NULL;
        rc = t2 == NULL || fc_memo_store(c, t, t2) < 0 || fc_memo_keep_alive(c, t) < 0
             ? -1 : 0;
    }
    Py_XDECREF(t);
    if (rc == 0) {
        rc = fc_before_user_code(c, 0);
    }
    if (rc == 0) {
        rc = fc_apply_state(st, f->y, t2, no_setstate ? FC_STATE_NO_SETSTATE : 0);
    }
    if (rc == 0) {
        rc = fc_after_user_code(c);
    }
    Py_XDECREF(t2);
    return rc < 0 ? -1 : 0;
}

/* R_STATE_GOT for a library's state hooks (fc_deep_statehook): the
   copied state applied by the library's own __setstate__, natively while
   y's type and the hook are still the ones planned, else called.
   0 | -1+exc */
FC_NOINLINE int
fc_statehook_apply(FcCtx *c, FcFrame *f, PyObject *state)
{
    FcRecon *r = f->u.recon.r;
    if (Py_TYPE(f->y) == r->ptype && fc_type_tag(r->ptype) == r->ptag) {
        int rc = fc_hook_setstate(c->st, r->hook, f->y, state);
        if (rc != 0) {
            return rc < 0 ? -1 : 0;
        }
    }
    /* hasattr(y, '__setstate__'): y.__setstate__(state) */
    if (fc_before_user_code(c, 0) < 0 || fc_apply_state(c->st, f->y, state, 0) < 0) {
        return -1;
    }
    return fc_after_user_code(c);
}

/* The pydantic steps below run in a deep copy (c: its walker's user-code
   guards) or in copy.copy's road (c NULL: copy() syncs on every entry). */
FC_INLINE int
fc_pd_before(FcCtx *c)
{
    return c != NULL ? fc_before_user_code(c, 0) : 0;
}

FC_INLINE int
fc_pd_after(FcCtx *c)
{
    return c != NULL ? fc_after_user_code(c) : 0;
}

/* getattr(x, name) for a slot of x's type: its value, no user code, when it
   is set; else the generic getattr, which runs x's __getattr__ (user code,
   guarded).  new ref | NULL+exc */
FC_INTERNAL PyObject *
fc_pd_get(FcCtx *c, PyObject *x, PyObject *name)
{
    PyObject *d = _PyType_Lookup(Py_TYPE(x), name);
    if (d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        Py_INCREF(d);
        PyObject *v = Py_TYPE(d)->tp_descr_get(d, x, (PyObject *)Py_TYPE(x));
        Py_DECREF(d);
        if (v != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return v;
        }
        PyErr_Clear();
    }
    if (fc_pd_before(c) < 0) {
        return NULL;
    }
    PyObject *v = PyObject_GetAttr(x, name);
    if (v != NULL && fc_pd_after(c) < 0) {
        Py_CLEAR(v);
    }
    return v;
}

/* `not hasattr(x, name) or x.name is None`, else x.name: *val NULL for the
   first; oneread (pydantic 2.5, 2.6): `x.name is None` alone, an error of
   that read raised.  0 | -1+exc */
FC_INTERNAL int
fc_pd_private(FcCtx *c, PyObject *x, PyObject *name, int oneread, PyObject **val)
{
    *val = NULL;
    PyObject *d = _PyType_Lookup(Py_TYPE(x), name);
    if (d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        Py_INCREF(d);
        PyObject *v = Py_TYPE(d)->tp_descr_get(d, x, (PyObject *)Py_TYPE(x));
        Py_DECREF(d);
        if (v != NULL) {
            if (v == Py_None) {
                Py_DECREF(v);
            }
            else {
                *val = v;
            }
            return 0;
        }
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1;
        }
        PyErr_Clear();
    }
    /* unset: hasattr() and the read each go through __getattr__ */
    if (fc_pd_before(c) < 0) {
        return -1;
    }
    PyObject *v = PyObject_GetAttr(x, name);
    if (oneread) {
        /* `x.name is None`, then `x.name.items()` reads it again */
        if (v != NULL && v != Py_None) {
            Py_SETREF(v, PyObject_GetAttr(x, name));
            if (v != NULL) {
                *val = v;
                return fc_pd_after(c);
            }
        }
        if (v == NULL) {
            return -1;
        }
        Py_DECREF(v);
        return fc_pd_after(c);
    }
    if (v == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1;
        }
        PyErr_Clear();
        return fc_pd_after(c);
    }
    Py_DECREF(v);
    v = PyObject_GetAttr(x, name);
    int third = v != NULL && v != Py_None;
    if (third) {
        /* `self.__pydantic_private__.items()` reads it a third time (what
           that read gives is used, None too: its .items() then fails) */
        Py_SETREF(v, PyObject_GetAttr(x, name));
    }
    if (v == NULL || fc_pd_after(c) < 0) {
        Py_XDECREF(v);
        return -1;
    }
    if (v == Py_None && !third) {
        Py_DECREF(v);
    }
    else {
        *val = v;
    }
    return 0;
}

/* {k: v for k, v in priv.items() if v is not PydanticUndefined}.
   new ref | NULL+exc */
FC_INTERNAL PyObject *
fc_pd_private_dict(FcCtx *c, PyObject *priv, PyObject *undefined)
{
    PyObject *k, *v, *d;
    Py_ssize_t pos = 0;
    int plain = PyDict_CheckExact(priv);
    while (plain && PyDict_Next(priv, &pos, &k, NULL)) {
        plain = PyUnicode_CheckExact(k);
    }
    if (plain) {
        /* exact str keys into a dict of our own: no user code */
        if ((d = PyDict_New()) == NULL) {
            return NULL;
        }
        pos = 0;
        while (PyDict_Next(priv, &pos, &k, &v)) {
            Py_INCREF(k);
            Py_INCREF(v);
            int r = v == undefined ? 0 : PyDict_SetItem(d, k, v);
            Py_DECREF(k);
            Py_DECREF(v);
            if (r < 0) {
                Py_DECREF(d);
                return NULL;
            }
        }
        return d;
    }
    if (fc_pd_before(c) < 0) {
        return NULL;
    }
    PyObject *items = PyMapping_Items(priv);
    d = items != NULL ? PyDict_New() : NULL;
    for (Py_ssize_t i = 0; d != NULL && i < PyList_GET_SIZE(items); i++) {
        PyObject *kv = PyList_GET_ITEM(items, i);
        if (!PyTuple_Check(kv) || PyTuple_GET_SIZE(kv) != 2) {
            PyErr_SetString(PyExc_TypeError, "items() must yield pairs");
            Py_CLEAR(d);
            break;
        }
        if (PyTuple_GET_ITEM(kv, 1) != undefined
            && PyObject_SetItem(d, PyTuple_GET_ITEM(kv, 0), PyTuple_GET_ITEM(kv, 1)) < 0) {
            Py_CLEAR(d);
        }
    }
    Py_XDECREF(items);
    if (d != NULL && fc_pd_after(c) < 0) {
        Py_CLEAR(d);
    }
    return d;
}

/* The R_PYD phase (fc_deep_pydantic): pydantic's BaseModel.__deepcopy__
   after `m = cls.__new__(cls); memo[id(self)] = m`, step r->i; res: the
   copy just made (stolen) or NULL.  1 (*out: the next part to copy) | 0
   done | -1+exc */
FC_NOINLINE int
fc_pyd_resume(FcCtx *c, FcFrame *f, PyObject *res, PyObject **out)
{
    FcState *st = c->st;
    FcHooksState *h = &st->hooks;
    FcRecon *r = f->u.recon.r;
    PyObject *x = f->x, *m = f->y, *v;
    int rc;
    switch (r->i) {
    case 0:
        /* deepcopy(self.__dict__, memo=memo) */
        r->i = 1;
        *out = Py_NewRef(r->state);
        return 1;
    case 1:
        /* _object_setattr(m, '__dict__', ...); deepcopy(self.__pydantic_extra__) */
        rc = PyObject_GenericSetAttr(m, st->s_dict, res);
        Py_DECREF(res);
        if (rc < 0) {
            return -1;
        }
        if (r->hook == FH_PYDROOT) {
            /* RootModel's hook: the fields set, and done */
            res = NULL;
            goto fields_set;
        }
        if ((v = fc_pd_get(c, x, h->s_pd[FC_PD_EXTRA])) == NULL) {
            return -1;
        }
        r->i = 2;
        *out = v;
        return 1;
    case 2: {
        rc = PyObject_GenericSetAttr(m, h->s_pd[FC_PD_EXTRA], res);
        Py_DECREF(res);
        if (rc < 0) {
            return -1;
        }
    fields_set:
        if ((v = fc_pd_get(c, x, h->s_pd[FC_PD_FSET])) == NULL) {
            return -1;
        }
        /* copy(self.__pydantic_fields_set__): set.copy() for a set while
           copy's table says so, else the copy module's copy() itself */
        PyObject *fs2;
        /* copy_ok: what copy() reads, which fc_sync_deep leaves alone;
           once a call, and again after user code (3.14: the full sync
           compares copy()'s two sets, 250 instructions a model) */
        if (!c->copy_synced) {
            if (fc_sync(st) < 0) {
                Py_DECREF(v);
                return -1;
            }
            c->copy_synced = 1;
        }
        if (PySet_CheckExact(v) && (st->copy_ok & FK_BIT(FK_SET))) {
            fs2 = PySet_New(v);
        }
        else {
            fs2 = fc_before_user_code(c, 0) < 0 ? NULL : PyObject_CallOneArg(h->pd_g[1], v);
            if (fs2 != NULL && fc_after_user_code(c) < 0) {
                Py_CLEAR(fs2);
            }
        }
        Py_DECREF(v);
        if (fs2 == NULL) {
            return -1;
        }
        rc = PyObject_GenericSetAttr(m, h->s_pd[FC_PD_FSET], fs2);
        Py_DECREF(fs2);
        if (r->hook == FH_PYDROOT) {
            return rc < 0 ? -1 : 0;
        }
        PyObject *priv;
        if (rc < 0 || fc_pd_private(c, x, h->s_pd[FC_PD_PRIVATE], r->variant == FC_PD_V5,
                                    &priv) < 0) {
            return -1;
        }
        if (priv == NULL) {
            return PyObject_GenericSetAttr(m, h->s_pd[FC_PD_PRIVATE], Py_None) < 0 ? -1 : 0;
        }
        PyObject *tmp = fc_pd_private_dict(c, priv, h->pd_g[3]);
        Py_DECREF(priv);
        if (tmp == NULL) {
            return -1;
        }
        r->i = 3;
        *out = tmp;
        return 1;
    }
    default:
        rc = PyObject_GenericSetAttr(m, h->s_pd[FC_PD_PRIVATE], res);
        Py_DECREF(res);
        return rc < 0 ? -1 : 0;
    }
}

/* _reconstruct(x, memo, func, args, state, listiter, dictiter), deep */
static int
fc_recon_resume(FcCtx *c, FcFrame *f, PyObject *res, PyObject **out)
{
    FcState *st = c->st;
    FcRecon *r = f->u.recon.r;
    for (;;) {
        switch (f->phase) {
        case R_ARGS:
            if (res != NULL) {
                PyTuple_SET_ITEM(r->newargs, r->i, res);
                res = NULL;
                r->i++;
            }
            if (r->i < PyTuple_GET_SIZE(r->args)) {
                *out = Py_NewRef(PyTuple_GET_ITEM(r->args, r->i));
                return 1;
            }
            /* a plan's object.__new__ and OrderedDict() run no user code */
            int user = r->ptype == NULL && r->func != (PyObject *)&PyODict_Type;
            if (user && fc_before_user_code(c, 0) < 0) {
                return -1;
            }
            f->y = fc_call_reduce_func(st, r->func, r->newargs);
            /* then the memo's store and maybe no state */
            if (f->y == NULL
                || (user && fc_after_user_code_or_owe(
                                c, r->state == NULL && fc_recon_tail_quiet(c, r)) < 0)) {
                return -1;
            }
            if (fc_memo_store(c, f->x, f->y) < 0) {
                return -1;
            }
            f->phase = R_STATE_REQ;
            break;
        case R_STATE_REQ:
            if (r->state != NULL) {
                FC_ASSERT(!fc_sets_owed(c));   /* owed only before user code */
                f->phase = R_STATE_GOT;
                *out = Py_NewRef(r->state);
                return 1;
            }
            f->phase = R_LIST_START;
            break;
        case R_STATE_GOT: {
            if (r->hook) {
                int rc = fc_statehook_apply(c, f, res);
                Py_CLEAR(res);
                if (rc < 0) {
                    return -1;
                }
                f->phase = R_LIST_START;
                break;
            }
            int no_setstate = r->ptype != NULL && r->ptag != 0 && Py_TYPE(f->y) == r->ptype
                              && fc_type_tag(r->ptype) == r->ptag;
            /* a plain __dict__ update runs no user code; __setstate__ and
               slot setattr may */
            int user = !(no_setstate && PyDict_CheckExact(res));
            int rc = user ? fc_before_user_code(c, 0) : 0;
            if (rc == 0) {
                int flags = no_setstate ? FC_STATE_NO_SETSTATE : 0;
#if FC_INLINE_ATTRS
                /* a memo shown since y was made can have handed y to a hook */
                if (r->fresh && c->mode == FC_MEMO_NATIVE && c->shows == r->shows) {
                    flags |= FC_STATE_FRESH;
                }
#endif
                rc = fc_apply_state(st, f->y, res, flags);
            }
            if (rc == 0 && user) {
                rc = fc_after_user_code_or_owe(c, fc_recon_tail_quiet(c, r));
            }
            Py_CLEAR(res);
            if (rc < 0) {
                return -1;
            }
            f->phase = R_LIST_START;
            break;
        }
        case R_PYD: {
            int rc = fc_pyd_resume(c, f, res, out);
            res = NULL;
            if (rc != 0) {
                return rc;          /* 1: the next part to copy; -1: error */
            }
            if (r->variant != FC_PD_V14) {
                /* the hook stored nothing: deepcopy()'s own store and
                   keep-alive, after it */
                if (fc_memo_finish(c, f->x, f->y) < 0) {
                    return -1;
                }
                *out = Py_NewRef(f->y);
                return 0;
            }
            goto done;
        }
        case R_SLOTS: {
            int rc = fc_slots_resume(c, f, res, out);
            res = NULL;
            if (rc != 0) {
                return rc;          /* 1: a value to copy; -1: error */
            }
            f->phase = R_LIST_START;
            break;
        }
        case R_LIST_START:
            if (r->listiter != NULL) {
                if (fc_before_user_code(c, 0) < 0) {
                    return -1;
                }
                Py_SETREF(r->listiter, PyObject_GetIter(r->listiter));
                if (r->listiter == NULL || fc_after_user_code(c) < 0) {
                    return -1;
                }
                f->phase = R_LIST_NEXT;
            }
            else {
                f->phase = R_DICT_START;
            }
            break;
        case R_LIST_GOT: {
            int user = !PyList_CheckExact(f->y);
            int rc = user ? fc_before_user_code(c, 0) : 0;
            if (rc == 0) {
                rc = fc_append(st, f->y, res);
            }
            if (rc == 0 && user) {
                rc = fc_after_user_code(c);
            }
            Py_CLEAR(res);
            if (rc < 0) {
                return -1;
            }
            f->phase = R_LIST_NEXT;
            break;
        }
        case R_LIST_NEXT: {
            if (fc_before_user_code(c, 0) < 0) {
                return -1;
            }
            PyObject *item = PyIter_Next(r->listiter);
            if (item == NULL) {
                if (PyErr_Occurred() || fc_after_user_code(c) < 0) {
                    return -1;
                }
                f->phase = R_DICT_START;
                break;
            }
            if (fc_after_user_code(c) < 0) {
                Py_DECREF(item);
                return -1;
            }
            f->phase = R_LIST_GOT;
            *out = item;
            return 1;
        }
        case R_DICT_START:
            if (r->dictiter == NULL) {
                goto done;
            }
            /* OrderedDict's own items iterator runs no user code */
            if (r->func != (PyObject *)&PyODict_Type && fc_before_user_code(c, 0) < 0) {
                return -1;
            }
            Py_SETREF(r->dictiter, PyObject_GetIter(r->dictiter));
            if (r->dictiter == NULL
                || (r->func != (PyObject *)&PyODict_Type && fc_after_user_code(c) < 0)) {
                return -1;
            }
            f->phase = R_DICT_NEXT;
            break;
        case R_DICT_NEXT: {
            if (r->func != (PyObject *)&PyODict_Type && fc_before_user_code(c, 0) < 0) {
                return -1;
            }
            PyObject *pair = PyIter_Next(r->dictiter);
            if (pair == NULL) {
                if (PyErr_Occurred()) {
                    return -1;
                }
                goto done;
            }
            PyObject *k;
            int rc = fc_unpack2(pair, &k, &r->pval);
            Py_DECREF(pair);
            if (rc < 0) {
                return -1;
            }
            if (r->func != (PyObject *)&PyODict_Type && fc_after_user_code(c) < 0) {
                Py_DECREF(k);
                return -1;
            }
            f->phase = R_DICT_KEY;
            *out = k;
            return 1;
        }
        case R_DICT_KEY:
            r->key = res;
            res = NULL;
            f->phase = R_DICT_VAL;
            *out = r->pval;
            r->pval = NULL;
            return 1;
        case R_DICT_VAL: {
            /* a key's __hash__/__eq__, a mapping's __setitem__ */
            int user = !(fc_key_quiet(r->key) && (PyDict_CheckExact(f->y)
                                                   || PyODict_CheckExact(f->y)));
            int rc = user ? fc_before_user_code(c, 0) : 0;
            if (rc == 0) {
                rc = PyObject_SetItem(f->y, r->key, res);
            }
            if (rc == 0 && user) {
                rc = fc_after_user_code(c);
            }
            Py_CLEAR(res);
            Py_CLEAR(r->key);
            if (rc < 0) {
                return -1;
            }
            f->phase = R_DICT_NEXT;
            break;
        }
        }
    }
done:
    if (fc_memo_finish_stored(c, f->x, f->y) < 0) {
        return -1;
    }
    /* a parent frame goes on with its items: owed only by the bottom
       frame, whose walk returns (fc_walk pays for a nested one) */
    FC_ASSERT(!fc_sets_owed(c) || c->nframes == 1);
    *out = Py_NewRef(f->y);
    return 0;
}

static int
fc_resume(FcCtx *c, FcFrame *f, PyObject *res, PyObject **out)
{
    switch (f->kind) {
    case FR_LIST:   return fc_list_resume(c, f, res, out);
    case FR_DICT:   return fc_dict_resume(c, f, res, out);
    case FR_TUPLE:  return fc_tuple_resume(c, f, res, out);
    case FR_RECON:  return fc_recon_resume(c, f, res, out);
    case FR_METHOD: return fc_method_resume(c, f, res, out);
    }
    Py_XDECREF(res);
    PyErr_SetString(PyExc_SystemError, "fastcopy: corrupt work stack");
    return -1;
}

/* ------------------------------------------------------------------ */
/* Entering one object                                                 */
/* ------------------------------------------------------------------ */

/* Push a reconstruct frame.  Steals the parts (any may be NULL = None).
   FC_PUSHED | NULL+exc */
static PyObject *
fc_push_recon(FcCtx *c, PyObject *x, PyObject *func, PyObject *args,
              PyObject *state, PyObject *listiter, PyObject *dictiter,
              PyObject *y)
{
    FcRecon *r = fc_recon_alloc(c->native.spare);
    if (r == NULL) {
        Py_XDECREF(func);
        Py_XDECREF(args);
        Py_XDECREF(state);
        Py_XDECREF(listiter);
        Py_XDECREF(dictiter);
        return NULL;
    }
    r->func = func;
    r->args = args;
    r->state = state;
    r->listiter = listiter;
    r->dictiter = dictiter;
    FcFrame *f = fc_push(c, FR_RECON, x, y);
    if (f == NULL) {
        fc_recon_free(c->native.spare, r);
        return NULL;
    }
    f->u.recon.r = r;
    if (y != NULL) {
        f->phase = R_STATE_REQ;
    }
    else if (PyTuple_GET_SIZE(args) == 0) {
        r->newargs = Py_NewRef(args);
        r->i = 0;
    }
    else {
        r->newargs = PyTuple_New(PyTuple_GET_SIZE(args));
        if (r->newargs == NULL) {
            return NULL;   /* the caller's unwind releases the frame */
        }
    }
    return FC_PUSHED;
}

/* Most slots a state is copied for without its temporaries (a longer
   list is checked for repeated names by pairs). */
#define FC_SLOTS_MAX 32

/* An FP_PLAIN instance with __slots__ and no __dict__, the memo native.
   object.__reduce_ex__(4) gives the state (None, {slot: value}), which
   _reconstruct deep-copies through the memo and applies with setattr; the
   pair, the dict and their copies are temporaries nobody else sees, so they
   are left a ghost (memo.c, "Ghosts") -- made, in the stdlib's order, only
   if a hook is shown the memo while or after the values are copied.  The
   values are read as the stdlib reads them (getattr, unset slots left
   out), copied in order by the R_SLOTS phase, and set on y once all are.
   Slot names that are not exact str or that repeat take fc_deep_plain's
   road.  FC_PUSHED | NULL+exc | NULL, no exc: that road (nothing done) */
FC_NOINLINE PyObject *
fc_deep_slots(FcCtx *c, PyObject *x, FcPlan *p)
{
    PyTypeObject *tp = Py_TYPE(x);
    PyObject *names = p->slotnames;
    Py_ssize_t cap = PyList_GET_SIZE(names);
    if (cap == 0 || cap > FC_SLOTS_MAX) {
        return NULL;
    }
    /* the names pairwise distinct (the list is the class's own: user code
       may have changed it in place since the plan was made).  Exact strs:
       their hashes are cached once computed, and two whose hashes differ
       are different -- only equal hashes need the compare */
    Py_hash_t hashes[FC_SLOTS_MAX];
    for (Py_ssize_t i = 0; i < cap; i++) {
        PyObject *a = PyList_GET_ITEM(names, i);
        if (!PyUnicode_CheckExact(a)) {
            return NULL;
        }
        hashes[i] = PyObject_Hash(a);           /* exact str: no code, no error */
    }
    if (PyList_GET_SIZE(names) != cap) {
        return NULL;                            /* (it cannot have changed) */
    }
    for (Py_ssize_t i = 1; i < cap; i++) {
        PyObject *a = PyList_GET_ITEM(names, i);
        for (Py_ssize_t j = 0; j < i; j++) {
            PyObject *b = PyList_GET_ITEM(names, j);
            if (a == b || (hashes[j] == hashes[i] && PyUnicode_Compare(a, b) == 0)) {
                return NULL;
            }
        }
    }
    unsigned int tag = p->tag;
    PyObject **sl = PyMem_Calloc((size_t)(3 * cap), sizeof(PyObject *));
    if (sl == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    /* _PyObject_GetState: getattr for each name, unset ones left out (names
       is a reference of our own: user code in getattr may rebind the plan) */
    Py_INCREF(names);
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(names); i++) {
        PyObject *name = Py_NewRef(PyList_GET_ITEM(names, i)), *v;
        int r = fc_lookup_attr(x, name, &v);
        if (r >= 0 && cap != PyList_GET_SIZE(names)) {
            if (r > 0) {
                Py_DECREF(v);
            }
            PyErr_SetString(PyExc_RuntimeError, "__slotsname__ changed size during iteration");
            r = -1;
        }
        if (r > 0) {
            sl[n] = name;
            sl[cap + n] = v;
            n++;
            continue;
        }
        Py_DECREF(name);
        if (r < 0) {
            Py_DECREF(names);
            goto fail;
        }
    }
    Py_DECREF(names);
    /* copyreg.__newobj__(cls) == object.__new__(cls); memo[id(x)] = y */
    PyObject *y = tp->tp_new(tp, c->st->empty_tuple, NULL);
    if (y == NULL || fc_untrack(c, y) < 0 || fc_memo_store(c, x, y) < 0) {
        Py_XDECREF(y);
        goto fail;
    }
    Py_ssize_t pos = -1;
    if (n > 0 && (pos = fc_memo_placeholder(&c->native)) < 0) {
        Py_DECREF(y);
        goto fail;
    }
    PyObject *res = fc_push_recon(c, x, NULL, NULL, NULL, NULL, NULL, y);
    Py_DECREF(y);
    if (res != FC_PUSHED) {
        if (pos >= 0) {
            /* the place taken: what the stdlib's memo would hold */
            FcRecon tmp = {0};
            tmp.sl = sl;
            tmp.sl_cap = cap;
            tmp.sl_n = n;
            tmp.sl_pos = pos;
            fc_slots_abandon(c, &tmp);
        }
        goto fail;
    }
    FcFrame *f = &c->frames[c->nframes - 1];
    FcRecon *rc = f->u.recon.r;
    rc->ptype = tp;
    rc->ptag = tag;
    if (n > 0) {
        /* state None when no slot is set: nothing to apply */
        rc->sl = sl;
        rc->sl_cap = cap;
        rc->sl_n = n;
        rc->sl_pos = pos;
        rc->sl_open = 1;
        f->phase = R_SLOTS;
    }
    else {
        PyMem_Free(sl);
    }
    return FC_PUSHED;
fail:
    for (Py_ssize_t j = 0; j < 3 * cap; j++) {
        Py_XDECREF(sl[j]);
    }
    PyMem_Free(sl);
    return NULL;
}

/* Frames whose objects can lead back to themselves without the memo
   stopping them (a reduce that runs user code, a pydantic hook that stores
   nothing in the memo) count towards the recursion limit: a chain of them
   recursing forever must end in RecursionError as in the stdlib, not grow
   without bound.  check: 0 | -1+RecursionError before pushing one;
   hooked: count the frame just pushed (fc_pop uncounts it). */
static int
fc_hook_depth_check(FcCtx *c)
{
    if (c->hook_depth >= Py_GetRecursionLimit()) {
        PyErr_SetString(PyExc_RecursionError,
                        "maximum recursion depth exceeded" FC_RECURSION_WHERE);
        return -1;
    }
    return 0;
}

FC_INLINE void
fc_hooked(FcCtx *c)
{
    c->frames[c->nframes - 1].hooked = 1;
    c->hook_depth++;
}

/* `y = cls.__new__(cls); memo[id(x)] = y` (object.__new__, checked by the
   plan; store 0: without the memo store), then a reconstruct frame for x
   and y holding `part` (stolen: the state, or what the frame's phase
   copies first).  FC_PUSHED | NULL+exc */
static PyObject *
fc_push_made(FcCtx *c, PyObject *x, PyObject *part, int store)
{
    PyTypeObject *tp = Py_TYPE(x);
    PyObject *y = tp->tp_new(tp, c->st->empty_tuple, NULL);
    if (y == NULL || fc_untrack(c, y) < 0 || (store && fc_memo_store(c, x, y) < 0)) {
        Py_XDECREF(y);
        Py_DECREF(part);
        return NULL;
    }
    PyObject *res = fc_push_recon(c, x, NULL, NULL, part, NULL, NULL, y);
    Py_DECREF(y);
    return res;
}

/* A pydantic model whose __deepcopy__ is BaseModel's own (hooks.c), the
   memo native: the hook's steps without the hook -- m = cls.__new__(cls),
   memo[id(self)] = m, then its parts copied with the same memo and set on
   m as it sets them (fc_pyd_resume).  Its getattr(x, '__deepcopy__') must
   find the class's hook: an instance dict entry of that name shadows it.
   A variant that stores nothing in the memo (FC_PD_V7, FC_PD_V5) makes m
   without the store; deepcopy()'s store follows the hook's last step, and
   a model met again meanwhile is copied again, a recursion that ends in
   RecursionError as the stdlib's does.
   FC_PUSHED | NULL+exc | NULL, no exc: the generic road (nothing done) */
static PyObject *
fc_deep_pydantic(FcCtx *c, PyObject *x, int hook)
{
    if (!fc_pd_ok(c->st, hook)) {
        return NULL;
    }
    FcHooksState *h = &c->st->hooks;
    int variant = hook == FH_PYDANTIC ? h->pd_variant : h->pr_variant;
    if (variant != FC_PD_V14 && fc_hook_depth_check(c) < 0) {
        return NULL;
    }
    PyObject *d = PyObject_GenericGetDict(x, NULL);
    if (d == NULL) {
        return NULL;
    }
    PyObject *own = PyDict_CheckExact(d) ? PyDict_GetItemWithError(d, c->st->s_deepcopy) : d;
    if (own != NULL || PyErr_Occurred()) {
        Py_DECREF(d);
        return NULL;
    }
    PyObject *res = fc_push_made(c, x, d, variant == FC_PD_V14);
    if (res == FC_PUSHED) {
        FcFrame *f = &c->frames[c->nframes - 1];
        f->phase = R_PYD;
        f->u.recon.r->hook = hook;
        f->u.recon.r->variant = variant;
        f->u.recon.r->i = 0;
        if (variant != FC_PD_V14) {
            fc_hooked(c);
        }
    }
    return res;
}

/* An instance whose __getstate__/__setstate__ a library made (a frozen
   slotted dataclass, an attrs slotted class), the memo native:
   object.__reduce_ex__(4) gives (copyreg.__newobj__, (cls,), state);
   _reconstruct makes y with object.__new__, memoizes it, deep-copies the
   state through the memo and calls __setstate__.  The state is read and
   applied natively (hooks.c) and copied by the walker's list or dict road,
   so the memo gets the stdlib's entries.  FC_PUSHED | NULL+exc | NULL, no
   exc: the generic road (nothing done) */
static PyObject *
fc_deep_statehook(FcCtx *c, PyObject *x, FcPlan *p)
{
    PyTypeObject *tp = Py_TYPE(x);
    unsigned int tag = p->tag;
    int hook = p->value;
    if (c->mode == FC_MEMO_MAPPING) {
        /* a mapping's own get/__setitem__ see every step: the generic road
           makes the stdlib's calls */
        return NULL;
    }
    if (c->mode == FC_MEMO_DICT) {
        /* A caller's dict (or one a hook kept): every lookup and store the
           road makes goes to it as the stdlib's would, and an exact dict
           runs no code on a lookup.  pydantic's hook never deep-copies its
           class; _reconstruct does (deepcopy((cls,), memo)), so an entry
           the caller seeded for the class would change the result: the
           generic road then */
        if (hook != FH_PYDANTIC && hook != FH_PYDROOT) {
            PyObject *seeded;
            int r = fc_memo_lookup_py(c, (PyObject *)tp, c->st->nil, &seeded);
            if (r != 0) {
                Py_XDECREF(seeded);
                return NULL;        /* seeded: the generic road; -1: exc */
            }
        }
    }
    if (hook == FH_PYDANTIC || hook == FH_PYDROOT) {
        return fc_deep_pydantic(c, x, hook);
    }
    PyObject *state = fc_hook_getstate(c->st, hook, x);
    if (state == NULL) {
        return NULL;
    }
    /* a state of our own making (not a live __dict__) is kept alive by the
       memo like the copies, and hidden from the collector as they are */
    if (Py_REFCNT(state) == 1 && fc_untrack(c, state) < 0) {
        Py_DECREF(state);
        return NULL;
    }
    PyObject *res = fc_push_made(c, x, state, 1);
    if (res == FC_PUSHED) {
        FcRecon *rc = c->frames[c->nframes - 1].u.recon.r;
        rc->ptype = tp;
        rc->ptag = tag;
        rc->hook = hook;
    }
    return res;
}

/* An instance of a FP_PLAIN type: what object.__reduce_ex__(4) and
   _reconstruct would do, without the Python-level calls.  Returns
   NULL with no exception set when x itself shadows a hook (the caller
   then takes the generic road).  FC_PUSHED | NULL(+exc) */
static PyObject *
fc_deep_plain(FcCtx *c, PyObject *x, FcPlan *p)
{
    PyTypeObject *tp = Py_TYPE(x);
    unsigned int tag = p->tag;
    PyObject *state, *y;
    if (c->mode == FC_MEMO_NATIVE && p->has_slots && tp->tp_dictoffset == 0) {
        PyObject *res = fc_deep_slots(c, x, p);
        if (res != NULL || PyErr_Occurred()) {
            return res;
        }
    }
    PyObject *names = p->has_slots ? Py_NewRef(p->slotnames) : NULL;
    int r = fc_plain_state(c->st, x, names, &state, 1);
    Py_XDECREF(names);
    if (r <= 0) {
        return NULL;
    }
    if (c->mode == FC_MEMO_NATIVE && PyTuple_CheckExact(state)) {
        /* (dict or None, slots dict): a pair and a dict of our own, which
           the memo keeps alive to the end like the copies -- hidden from
           the collector as they are (memo.c, "Copies and the cyclic GC") */
        if (fc_untrack(c, state) < 0 || fc_untrack(c, PyTuple_GET_ITEM(state, 1)) < 0) {
            Py_DECREF(state);
            return NULL;
        }
    }
    if (c->mode != FC_MEMO_NATIVE) {
        /* the memo is visible: _reconstruct's deepcopy(cls, memo) lookup is
           observable (a pre-seeded entry for the class changes the result),
           so rebuild through copyreg.__newobj__ with the arg copied by the
           walker, as the stdlib does */
        PyObject *args = PyTuple_Pack(1, (PyObject *)tp);
        if (args == NULL) {
            Py_DECREF(state);
            return NULL;
        }
        if (state == Py_None) {
            Py_CLEAR(state);
        }
        PyObject *res = fc_push_recon(c, x, Py_NewRef(c->st->copyreg_newobj), args,
                                      state, NULL, NULL, NULL);
        if (res == FC_PUSHED) {
            FcRecon *rc = c->frames[c->nframes - 1].u.recon.r;
            rc->ptype = tp;
            rc->ptag = tag;
        }
        return res;
    }
    /* copyreg.__newobj__(cls) == object.__new__(cls) */
    y = tp->tp_new(tp, c->st->empty_tuple, NULL);
    if (y == NULL || fc_untrack(c, y) < 0 || fc_memo_store(c, x, y) < 0) {
        Py_XDECREF(y);
        Py_DECREF(state);
        return NULL;
    }
    if (state == Py_None) {
        Py_CLEAR(state);
    }
    PyObject *res = fc_push_recon(c, x, NULL, NULL, state, NULL, NULL, y);
    Py_DECREF(y);
    if (res == FC_PUSHED) {
        FcRecon *rc = c->frames[c->nframes - 1].u.recon.r;
        rc->ptype = tp;
        rc->ptag = tag;
#if FC_INLINE_ATTRS
        rc->fresh = 1;
        rc->shows = c->shows;
#endif
    }
    return res;
}

/* An exact collections.OrderedDict with an empty instance __dict__.  Its
   __reduce_ex__(4) is object's, which calls OrderedDict.__reduce__ (C):
   (OrderedDict, (), None, None, iter(od.items())) -- the state is None for
   an empty __dict__ on every supported version.  Rebuilding from that value
   directly skips the reduce call and copyreg._slotnames, which cannot cache
   on a static type and so runs in Python on every copy in the stdlib.
   FC_PUSHED | NULL+exc | NULL, no exc: take the generic road */
static PyObject *
fc_deep_odict(FcCtx *c, PyObject *x)
{
    PyObject *d = PyObject_GenericGetDict(x, NULL);
    if (d == NULL) {
        return NULL;
    }
    int empty = PyDict_CheckExact(d) && PyDict_GET_SIZE(d) == 0;
    Py_DECREF(d);
    if (!empty) {
        return NULL;
    }
    PyObject *items = PyObject_CallMethodNoArgs(x, c->st->s_items);
    if (items == NULL) {
        return NULL;
    }
    PyObject *it = PyObject_GetIter(items);
    Py_DECREF(items);
    if (it == NULL) {
        return NULL;
    }
    return fc_push_recon(c, x, Py_NewRef((PyObject *)Py_TYPE(x)),
                         Py_NewRef(c->st->empty_tuple), NULL, NULL, it, NULL);
}

/* ------------------------------------------------------------------ */
/* Value types                                                         */
/* ------------------------------------------------------------------ */

/*
 * Sets, frozensets and the stdlib's value types have no copier in
 * copy._deepcopy_dispatch, so the stdlib reaches them through
 * getattr(x, "__deepcopy__") or x.__reduce_ex__(4).  For the exact types,
 * while nothing is registered for them in either table (plan.c), what that
 * road does is fixed by their C code, and is done here directly:
 *
 *   set / frozenset   set.__reduce__ is (type(s), (list(s),), None): the
 *       list is a temporary that _reconstruct deep-copies through the memo,
 *       so the memo gets id(list) -> its copy and keeps the list alive,
 *       before id(s) -> the new set.  A later hook can see all that.  All
 *       items atomic, memo native: the copy is made at once and the two
 *       lists are a ghost, made only if the memo is shown (memo.c,
 *       "Ghosts"); otherwise the list is made and walked by an ordinary
 *       reconstruct frame.  Building the new set runs
 *       the items' __hash__/__eq__ (user code, unless every item is quiet).
 *   Decimal     __deepcopy__ (C) returns self: no memo entry.
 *   numpy scalars (not void)   numpy.generic.__deepcopy__ (C) returns self
 *       on numpy 2.x: plan.c asks it once per type (fc_plan_numpy_scalar).
 *   Fraction    __deepcopy__ returns self for the exact type, while its
 *       globals still name the class and `type` (fc_frac_names_ok).
 *   date, timedelta, datetime, time   __reduce__/__reduce_ex__(4) give
 *       (cls, (bytes state[, tzinfo])) or (cls, (days, secs, us)): a new
 *       equal object, memoized and kept alive; a tzinfo is deep-copied first
 *       (its memo entry comes before the value's).
 *   timezone    (timezone, __getinitargs__(), None): the offset timedelta is
 *       deep-copied through the memo, then timezone(offset[, name]) -- which
 *       gives back the utc singleton itself for a zero offset with no name;
 *       _reconstruct memoizes it anyway, and only a new object is kept alive.
 * The datetime family is copied natively only while the memo is native (a
 * visible memo would see the lookups of the reduce value's temporaries);
 * Decimal and Fraction, which never touch the memo, in every mode.
 * Anything unexpected takes the generic road before any side effect.
 */

#define FC_SET_HASHES 32

#ifndef Py_GIL_DISABLED
/* The first n active entries of a set table in slot order, as the set
   iterator reads them (a dummy's hash is -1, Include/cpython/setobject.h;
   an active entry's never), and their hashes when `hashes` is not NULL.
   Compacted with no branch on whether a slot is full: which are is random,
   and such a branch is mispredicted half the time.  How many were found. */
FC_INLINE Py_ssize_t
fc_set_scan(const setentry *table, size_t last, Py_ssize_t n, PyObject **items,
            Py_hash_t *hashes)
{
    Py_ssize_t got = 0;
    for (size_t pos = 0; got < n && pos <= last; pos++) {
        PyObject *key = table[pos].key;
        Py_hash_t hash = table[pos].hash;
        items[got] = key;
        if (hashes != NULL) {
            hashes[got] = hash;
        }
        got += (key != NULL) & (hash != -1);
    }
    return got;
}
#endif

/* The items of an exact set or frozenset of atomic items, memo native:
   stored as strong references in n fresh ghost places (fc_memo_ghost_reserve)
   in the set's iteration order (*items: the first place), *quiet: whether
   hashing them runs no user code; the first FC_SET_HASHES hashes as the
   table holds them in `hashes` (not on a free-threaded build).
   n | -1 not all atomic, nothing kept (no exc) | -2+exc */
static Py_ssize_t
fc_set_ghost_items(FcCtx *c, PyObject *x, int *quiet, PyObject ***pitems, Py_hash_t *hashes)
{
    FcMemo *m = &c->native;
    Py_ssize_t n, i = 0;
    PyObject **items;
#ifdef Py_GIL_DISABLED
    /* another thread may change x: the items as list(x) reads them */
    PyObject *list = PySequence_List(x);
    if (list == NULL) {
        return -2;
    }
    n = PyList_GET_SIZE(list);
    items = fc_memo_ghost_reserve(m, n);
    if (items == NULL) {
        Py_DECREF(list);
        return -2;
    }
    for (; i < n; i++) {
        PyObject *key = PyList_GET_ITEM(list, i);
        if (!fc_deep_atomic(c, key)) {
            break;
        }
        *quiet &= fc_key_quiet(key);
        items[i] = Py_NewRef(key);
    }
    Py_DECREF(list);
#else
    n = PySet_GET_SIZE(x);
    /* fc_memo_ghost_reserve allocates no object (no collection, no user
       code), and neither does the scan: x is as it was when n was read */
    items = fc_memo_ghost_reserve(m, n);
    if (items == NULL) {
        return -2;
    }
    PySetObject *so = (PySetObject *)x;
    /* two inlined copies of one loop: with the hashes, and without */
    Py_ssize_t got = n <= FC_SET_HASHES
                     ? fc_set_scan(so->table, (size_t)so->mask, n, items, hashes)
                     : fc_set_scan(so->table, (size_t)so->mask, n, items, NULL);
    if (got < n) {
        return -1;                      /* not a consistent table */
    }
    for (; i < n; i++) {
        PyObject *key = items[i];
        if (!fc_deep_atomic(c, key)) {
            break;
        }
        *quiet &= fc_key_quiet(key);
        Py_INCREF(key);
    }
#endif
    if (i < n) {
        while (i > 0) {
            Py_DECREF(items[--i]);
        }
        return -1;
    }
    *pitems = items;
    return n;
}

/*
 * set(ylist) without the calls.  For items whose hashing and comparing
 * run only the interpreter's own code (fc_key_quiet), make_new_set() and
 * one set_add_key() per item in order (Objects/setobject.c, the same on
 * 3.10-3.13) come to a table fixed by the hashes alone: each item goes to
 * the first empty slot of its probe sequence -- its home slot hash & mask
 * and the LINEAR_PROBES slots after it (when they fit below the mask),
 * then i = i*5 + 1 + (perturb >>= PERTURB_SHIFT) -- since two distinct
 * items of a set never compare equal and a fresh table has no dummies;
 * once fill*5 >= mask*3 the table grows to the smallest power of two
 * above used*4 (used*2 past 50,000) and the entries are put in again in
 * the old table's slot order.  The set is made with PyObject_GC_New
 * (untracked: fc_untrack_fresh) rather than tp_alloc, which clears and
 * tracks the whole object; its fields are make_new_set()'s.
 * tests/test_values.py compares order and sys.getsizeof() with
 * set(list(s)) over sizes and colliding hashes.  Other versions: PySet_Add.
 */
#define FC_SET_FILL FC_SET_FILL_ORDER
#define FC_SET_PROBES 9
#define FC_SET_SHIFT 5

#if FC_SET_FILL
static void
fc_set_probe(setentry *table, size_t mask, PyObject *key, Py_hash_t hash)
{
    size_t perturb = (size_t)hash, i = (size_t)hash & mask;
    for (;;) {
        setentry *e = &table[i];
        int probes = i + FC_SET_PROBES <= mask ? FC_SET_PROBES : 0;
        do {
            if (e->key == NULL) {
                e->key = key;
                e->hash = hash;
                return;
            }
            e++;
        } while (probes--);
        perturb >>= FC_SET_SHIFT;
        i = (i * 5 + 1 + perturb) & mask;
    }
}

/* Put key in the first empty slot of its probe sequence (most often its
   home slot) */
FC_INLINE void
fc_set_put(setentry *table, size_t mask, PyObject *key, Py_hash_t hash)
{
    setentry *e = &table[(size_t)hash & mask];
    if (e->key == NULL) {
        e->key = key;
        e->hash = hash;
        return;
    }
    fc_set_probe(table, mask, key, hash);
}

/* set_table_resize(so, used > 50000 ? used*2 : used*4) on a table with
   no dummies.  0 | -1+exc (so unchanged) */
static int
fc_set_grow(PySetObject *so)
{
    size_t minused = (size_t)(so->used > 50000 ? so->used * 2 : so->used * 4);
    size_t size = PySet_MINSIZE;
    while (size <= minused) {
        size <<= 1;
    }
    setentry *old = so->table, *table = PyMem_Calloc(size, sizeof(setentry));
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t j = 0; j <= (size_t)so->mask; j++) {
        if (old[j].key != NULL) {
            fc_set_put(table, size - 1, old[j].key, old[j].hash);
        }
    }
    so->table = table;
    so->mask = (Py_ssize_t)(size - 1);
    if (old != so->smalltable) {
        PyMem_Free(old);
    }
    return 0;
}

/* A new untracked set or frozenset (tp: exactly one of them) of the n
   distinct quiet items, with their hashes when `hashes` is not NULL.
   new ref | NULL+exc */
static PyObject *
fc_set_build_quiet(PyTypeObject *tp, PyObject *const *items, const Py_hash_t *hashes,
                   Py_ssize_t n)
{
    PySetObject *so = PyObject_GC_New(PySetObject, tp);
    if (so == NULL) {
        return NULL;
    }
    so->fill = 0;
    so->used = 0;
    so->mask = PySet_MINSIZE - 1;
    so->table = so->smalltable;
    so->hash = -1;
    so->finger = 0;
    so->weakreflist = NULL;
    memset(so->smalltable, 0, sizeof(so->smalltable));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = items[i];
        Py_hash_t hash = hashes != NULL ? hashes[i] : PyObject_Hash(key);
        if (hash == -1 && PyErr_Occurred()) {
            Py_DECREF(so);
            return NULL;
        }
        fc_set_put(so->table, (size_t)so->mask, Py_NewRef(key), hash);
        so->fill++;
        so->used++;
        if ((size_t)so->fill * 5 >= (size_t)so->mask * 3 && fc_set_grow(so) < 0) {
            Py_DECREF(so);
            return NULL;
        }
    }
    return (PyObject *)so;
}
#endif

/* deepcopy of an exact set or frozenset (FcState.set_ok).
   new ref | FC_PUSHED | NULL+exc.  Not inlined: kept out of fc_dispatch,
   the walker's hot path (+8% of fastcopy's own instructions on set-free
   workloads when it was) */
FC_NOINLINE PyObject *
fc_deep_set(FcCtx *c, PyObject *x)
{
    PyObject *y, **ghost = NULL;
    int quiet = 1;
    Py_hash_t hashes[FC_SET_HASHES];
    Py_ssize_t n = c->mode == FC_MEMO_NATIVE ? fc_set_ghost_items(c, x, &quiet, &ghost, hashes)
                                             : -1;
    if (n == -2) {
        return NULL;
    }
    if (n >= 0) {
        /* All items atomic: _reconstruct's deepcopy of the list is a new
           list of the same items, memoized and kept alive -- a ghost until
           the memo is shown (memo.c, "Ghosts") -- then set(ylist) /
           frozenset(ylist): make_new_set(), an empty set and set_add_key()
           for each item in order.  So is this, and it ends with the same
           table. */
        PyObject *keep = NULL;
        if (fc_memo_ghost_add(&c->native, n) < 0) {
            return NULL;
        }
        c->st->test.set_ghosts++;
#if FC_SET_FILL
        if (quiet) {
            /* nothing runs that could add a ghost (and move the buffer)
               before y is built */
            y = fc_set_build_quiet(Py_TYPE(x), ghost, FC_FT || n > FC_SET_HASHES
                                                      ? NULL : hashes, n);
            if (y != NULL && fc_untrack_fresh(c, y) < 0) {
                Py_CLEAR(y);
            }
            return fc_memo_done(c, x, y);
        }
#endif
        if (!quiet) {
            /* user __hash__/__eq__ run while y is built: the items from a
               tuple of our own, not from the memo's buffer */
            keep = PyTuple_New(n);
            if (keep == NULL) {
                return NULL;
            }
            for (Py_ssize_t i = 0; i < n; i++) {
                PyTuple_SET_ITEM(keep, i, Py_NewRef(ghost[i]));
            }
            if (fc_before_user_code(c, 0) < 0) {
                Py_DECREF(keep);
                return NULL;
            }
        }
        /* quiet: no code runs that could add a ghost (and move the buffer)
           before y is built */
        PyObject *const *items = keep != NULL ? &PyTuple_GET_ITEM(keep, 0) : ghost;
        y = Py_IS_TYPE(x, &PySet_Type) ? PySet_New(NULL) : PyFrozenSet_New(NULL);
        for (Py_ssize_t i = 0; y != NULL && i < n; i++) {
            if (PySet_Add(y, items[i]) < 0) {
                Py_CLEAR(y);
            }
        }
        if (keep != NULL) {
            Py_DECREF(keep);
            (void)fc_after_user_code(c);
        }
        if (y != NULL && fc_untrack(c, y) < 0) {
            Py_CLEAR(y);
        }
        return fc_memo_done(c, x, y);
    }
    /* set.__reduce__'s list(x), which a reconstruct frame walks */
    PyObject *items = PySequence_List(x);
    if (items == NULL) {
        return NULL;
    }
    PyObject *args = PyTuple_Pack(1, items);
    Py_DECREF(items);
    if (args == NULL) {
        return NULL;
    }
    return fc_push_recon(c, x, Py_NewRef((PyObject *)Py_TYPE(x)), args,
                         NULL, NULL, NULL, NULL);
}

/* The end of _reconstruct and deepcopy for a rebuilt value y (stolen; NULL:
   the error of making it): `memo[id(x)] = y` always -- y may be x itself
   (3.13's timedelta(0), the utc timezone) -- then, when y is not x, the
   stdlib's second store and _keep_alive(x).  y | NULL+exc */
static PyObject *
fc_recon_done(FcCtx *c, PyObject *x, PyObject *y)
{
    if (y != NULL && (fc_memo_store(c, x, y) < 0
                      || (y != x && fc_memo_keep_alive(c, x) < 0))) {
        Py_CLEAR(y);
    }
    return y;
}

/* deepcopy of an exact datetime.timezone, memo native: the offset through
   the walker, then timezone(offset[, name]).  new ref | NULL+exc |
   NULL, no exc: take the generic road (nothing done yet) */
static PyObject *
fc_deep_timezone(FcCtx *c, PyObject *x)
{
    FcState *st = c->st;
    PyObject *ia = PyObject_CallMethodNoArgs(x, st->s_getinitargs);
    if (ia == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_CheckExact(ia) ? PyTuple_GET_SIZE(ia) : 0;
    if (n < 1 || n > 2 || !Py_IS_TYPE(PyTuple_GET_ITEM(ia, 0), st->dt_api->DeltaType)
        || (n == 2 && !(PyUnicode_CheckExact(PyTuple_GET_ITEM(ia, 1))
                        && (st->deep_ok & FK_BIT(FK_STR))))) {
        Py_DECREF(ia);
        return NULL;
    }
    PyObject *off = fc_walk(c, PyTuple_GET_ITEM(ia, 0));
    if (off == NULL) {
        Py_DECREF(ia);
        return NULL;
    }
    PyObject *tztype = (PyObject *)Py_TYPE(x);
    PyObject *y = n == 1 ? PyObject_CallOneArg(tztype, off)
                         : PyObject_CallFunctionObjArgs(tztype, off, PyTuple_GET_ITEM(ia, 1), NULL);
    Py_DECREF(off);
    Py_DECREF(ia);
    return fc_recon_done(c, x, y);
}

/* deepcopy of an exact uuid.UUID, memo native: what object.__reduce_ex__(4),
   UUID.__getstate__, _reconstruct and UUID.__setstate__ do (plan.c,
   fc_plan_uuid), their temporaries and memo entries included -- the state
   dict d and its copy (memo[id(d)], d kept alive), which a later hook
   shown the memo sees.  new ref | NULL+exc | NULL, no exc: take the
   generic road (nothing done yet).  Inlined into fc_dispatch on purpose:
   gcc did so on its own until the tuple frame grew (740a7cb), and the
   call then cost datetime_records 0.9% more of our instructions. */
FC_INLINE PyObject *
fc_deep_uuid(FcCtx *c, PyObject *x)
{
    FcState *st = c->st;
    /* the state dict's copy and the reduce value's (UUID,) go through
       _deepcopy_dict, _deepcopy_tuple and the atomic copier */
    const uint32_t need = FK_BIT(FK_DICT) | FK_BIT(FK_TUPLE) | FK_BIT(FK_TYPE)
                          | FK_BIT(FK_STR) | FK_BIT(FK_INT) | FK_BIT(FK_NONE);
    PyObject *info = fc_uuid_info(st);
    if ((st->deep_ok & need) != need || info == NULL || !fc_uuid_ok(st, info)) {
        return NULL;
    }
    PyMemberDef *mint = ((PyMemberDescrObject *)PyTuple_GET_ITEM(info, FC_UUID_DINT))->d_member;
    PyMemberDef *msafe = ((PyMemberDescrObject *)PyTuple_GET_ITEM(info, FC_UUID_DSAFE))->d_member;
    /* new references (another thread may set the slots meanwhile) */
    PyObject *iv = PyMember_GetOne((const char *)x, mint);
    PyObject *sv = iv != NULL ? PyMember_GetOne((const char *)x, msafe) : NULL;
    int k = 3;
    if (sv != NULL) {
        for (k = 0; k < 3 && sv != PyTuple_GET_ITEM(info, FC_UUID_MEMBERS + k); k++) {
        }
    }
    /* an unset slot, a non-int `int`, a foreign is_safe or a member whose
       value changed: the generic road gives the stdlib's result (or error).
       SafeUUID.unknown's value is not used (__getstate__ leaves it out) */
    if (iv == NULL || sv == NULL || k == 3 || !PyLong_CheckExact(iv)
        || (k != 2 && !fc_uuid_member_ok(st, info, k))) {
        PyErr_Clear();
        Py_XDECREF(iv);
        Py_XDECREF(sv);
        return NULL;
    }
    PyObject *d = PyDict_New(), *dc = NULL, *y = NULL;
    if (d == NULL || PyDict_SetItem(d, PyTuple_GET_ITEM(info, FC_UUID_KINT), iv) < 0
        || (k != 2 && PyDict_SetItem(d, PyTuple_GET_ITEM(info, FC_UUID_KSAFE),
                                     PyTuple_GET_ITEM(info, FC_UUID_VALUES + k)) < 0)
        || (dc = PyDict_Copy(d)) == NULL) {   /* lint: own container */
        goto done;
    }
    PyTypeObject *tp = Py_TYPE(x);
    y = tp->tp_new(tp, st->empty_tuple, NULL);
    /* _reconstruct's memo[id(u)] = y comes first; deepcopy's second store
       of the same entry changes nothing, only its _keep_alive(u) is left */
    if (y == NULL || fc_memo_store(c, x, y) < 0 || fc_memo_store(c, d, dc) < 0
        || fc_memo_keep_alive(c, d) < 0
        || PyMember_SetOne((char *)y, mint, iv) < 0
        || PyMember_SetOne((char *)y, msafe, sv) < 0
        || fc_memo_keep_alive(c, x) < 0) {
        Py_CLEAR(y);
    }
done:
    Py_XDECREF(d);
    Py_XDECREF(dc);
    Py_DECREF(iv);
    Py_DECREF(sv);
    return y;
}

/* deepcopy of an exact value type of kind v (FV_*).  new ref | NULL+exc |
   NULL, no exc: take the generic road (nothing done yet) */
static PyObject *
fc_deep_value(FcCtx *c, PyObject *x, int v)
{
    FcState *st = c->st;
    const PyDateTime_CAPI *api = st->dt_api;
    PyObject *y, *tz, *tzc;
    if (v == FV_DECIMAL || v == FV_NUMPY_SELF) {
        return Py_NewRef(x);
    }
    if (v == FV_FRACTION) {
        int r = fc_frac_names_ok(st, Py_TYPE(x));
        return r > 0 ? Py_NewRef(x) : NULL;
    }
    if (v == FV_UUID) {
        return c->mode == FC_MEMO_NATIVE ? fc_deep_uuid(c, x) : NULL;
    }
    if (c->mode != FC_MEMO_NATIVE || api == NULL) {
        return NULL;
    }
    switch (v) {
    case FV_DATE:
        y = api->Date_FromDate(PyDateTime_GET_YEAR(x), PyDateTime_GET_MONTH(x),
                               PyDateTime_GET_DAY(x), api->DateType);
        return fc_recon_done(c, x, y);
    case FV_TIMEDELTA:
        y = api->Delta_FromDelta(PyDateTime_DELTA_GET_DAYS(x), PyDateTime_DELTA_GET_SECONDS(x),
                                 PyDateTime_DELTA_GET_MICROSECONDS(x), 1, api->DeltaType);
        return fc_recon_done(c, x, y);
    case FV_TIMEZONE:
        return fc_deep_timezone(c, x);
    case FV_DATETIME:
    case FV_TIME:
        tz = v == FV_DATETIME ? PyDateTime_DATE_GET_TZINFO(x) : PyDateTime_TIME_GET_TZINFO(x);
        if (tz == Py_None) {
            tzc = Py_NewRef(Py_None);
        }
        else {
            tzc = fc_memo_get(&c->native, tz);
            if (tzc != NULL) {
                Py_INCREF(tzc);
            }
            else if (Py_IS_TYPE(tz, Py_TYPE(api->TimeZone_UTC))) {
                PyObject *tzref = Py_NewRef(tz);
                tzc = fc_deep_timezone(c, tzref);
                Py_DECREF(tzref);
            }
            if (tzc == NULL) {
                return NULL;
            }
            /* datetime(state, tz) refuses what is not a tzinfo: let the
               generic road raise it (the memo now answers for tz) */
            if (!PyObject_TypeCheck(tzc, api->TZInfoType)) {
                Py_DECREF(tzc);
                return NULL;
            }
        }
        if (v == FV_DATETIME) {
            y = api->DateTime_FromDateAndTimeAndFold(
                PyDateTime_GET_YEAR(x), PyDateTime_GET_MONTH(x), PyDateTime_GET_DAY(x),
                PyDateTime_DATE_GET_HOUR(x), PyDateTime_DATE_GET_MINUTE(x),
                PyDateTime_DATE_GET_SECOND(x), PyDateTime_DATE_GET_MICROSECOND(x),
                tzc, PyDateTime_DATE_GET_FOLD(x), api->DateTimeType);
        }
        else {
            y = api->Time_FromTimeAndFold(
                PyDateTime_TIME_GET_HOUR(x), PyDateTime_TIME_GET_MINUTE(x),
                PyDateTime_TIME_GET_SECOND(x), PyDateTime_TIME_GET_MICROSECOND(x),
                tzc, PyDateTime_TIME_GET_FOLD(x), api->TimeType);
        }
        Py_DECREF(tzc);
        return fc_recon_done(c, x, y);
    }
    return NULL;
}

/* The stdlib's road for everything not handled natively.
   new ref | FC_PUSHED | NULL+exc */
static PyObject *
fc_deep_generic_road(FcCtx *c, PyObject *x, int gflags)
{
    FcState *st = c->st;
    PyTypeObject *tp = Py_TYPE(x);
    PyObject *copier = NULL, *y = NULL;

    /* a copier, hook or reduce runs: results recorded so far must be
       complete (defer.c) */
    if (fc_before_user_code(c, 0) < 0) {
        return NULL;
    }
    if (!(gflags & FG_NO_DEEP_DISPATCH)
        && fc_table_get(st, st->deep_dispatch, (PyObject *)tp, &copier) < 0) {
        return NULL;
    }
    if (copier != NULL && copier != Py_None) {
        c->shown_x = x;
        if (fc_before_user_code(c, 1) < 0) {
            Py_DECREF(copier);
            return NULL;
        }
        PyObject *args[2] = {x, c->memo};
        fc_prof_hook(st);
        y = PyObject_Vectorcall(copier, args, 2, NULL);
        Py_DECREF(copier);
        fc_memo_hide(c);
        goto finish;
    }
    Py_CLEAR(copier);
    if (PyType_FastSubclass(tp, Py_TPFLAGS_TYPE_SUBCLASS)) {   /* issubclass(cls, type) */
        return Py_NewRef(x);
    }
    if (!(gflags & FG_NO_DEEPCOPY_HOOK) && fc_lookup_attr(x, st->s_deepcopy, &copier) < 0) {
        return NULL;
    }
    if (copier != NULL && copier != Py_None) {
        c->shown_x = x;
        if (fc_before_user_code(c, 1) < 0) {
            Py_DECREF(copier);
            return NULL;
        }
        fc_prof_hook(st);
        y = PyObject_CallOneArg(copier, c->memo);
        Py_DECREF(copier);
        fc_memo_hide(c);
        goto finish;
    }
    Py_CLEAR(copier);

    fc_prof_hook(st);
    PyObject *rv = fc_reduce(st, x, 1, gflags);
    if (rv == NULL) {
        return NULL;
    }
    if (PyUnicode_Check(rv)) {
        Py_DECREF(rv);
        return Py_NewRef(x);
    }
    if (!fc_rv_native(rv)) {
        c->shown_x = x;
        if (fc_before_user_code(c, 1) < 0) {
            Py_DECREF(rv);
            return NULL;
        }
        y = fc_reconstruct_py(st, x, c->memo, rv);
        Py_DECREF(rv);
        fc_memo_hide(c);
        goto finish;
    }
    /* this object's copy runs user code (its reduce, its func, maybe
       __setstate__) */
    if (fc_hook_depth_check(c) < 0) {
        Py_DECREF(rv);
        return NULL;
    }
    PyObject *res = fc_push_recon(c, x, fc_rv_item(rv, 0),
                                  Py_NewRef(PyTuple_GET_ITEM(rv, 1)),
                                  fc_rv_item(rv, 2), fc_rv_item(rv, 3),
                                  fc_rv_item(rv, 4), NULL);
    Py_DECREF(rv);
    if (res == FC_PUSHED) {
        fc_hooked(c);
    }
    return res;

finish:
    return fc_memo_done(c, x, y);
}

/* fc_deep_generic_road, whose every step may run user code (hooks,
   getattr, reductors): the rest of the copy sees what it changed in the
   stdlib's tables.  new ref | FC_PUSHED | NULL+exc */
static PyObject *
fc_deep_generic(FcCtx *c, PyObject *x, int gflags)
{
    PyObject *res = fc_deep_generic_road(c, x, gflags);
    int owe = 0;
    if (FC_COPY_SETS_MUTABLE && res == FC_PUSHED) {
        /* a pushed reconstruct frame with no args calls its func first:
           the reductor's sync can wait for that one ("Syncs owed") */
        FcFrame *f = &c->frames[c->nframes - 1];
        FcRecon *r = f->kind == FR_RECON && f->phase == R_ARGS ? f->u.recon.r : NULL;
        owe = r != NULL && r->args != NULL && PyTuple_GET_SIZE(r->args) == 0
              && r->ptype == NULL && r->func != (PyObject *)&PyODict_Type;
    }
    if (res != NULL && fc_after_user_code_or_owe(c, owe) < 0) {
        if (res != FC_PUSHED) {
            Py_DECREF(res);
        }
        return NULL;
    }
    return res;
}

static PyObject *fc_dispatch(FcCtx *c, PyObject *x, int k);
#if FC_MEMO_ABSORB
static PyObject *fc_enter_memo_itself(FcCtx *c, PyObject *x);
#endif

/* The frame copying dict x into y (stolen; NULL: the error of making it),
   y stored in the memo first, as _deepcopy_dict does.  prefill: y started
   as x.copy() (see "prefill" at the top).  FC_PUSHED | NULL+exc */
FC_INLINE PyObject *
fc_push_dict(FcCtx *c, PyObject *x, PyObject *y, int prefill, uint64_t ver)
{
    FcFrame *f;
    if (y == NULL) {
        return NULL;
    }
    if (fc_memo_store(c, x, y) < 0 || (f = fc_push(c, FR_DICT, x, y)) == NULL) {
        Py_DECREF(y);
        return NULL;
    }
    Py_DECREF(y);
    f->u.dict.used = f->u.dict.left = PyDict_GET_SIZE(x);
#if FC_PREFILL
    if (prefill) {
        f->prefill = 1;
        f->u.dict.ver = ver;
    }
#else
    (void)ver;
#endif
    return FC_PUSHED;
}

#if FC_PROVEN_MISS
/* fc_small_run's and fc_sub_run's "not a small tree": no error, nothing made */
#define FC_SMALL_NO ((PyObject *)(uintptr_t)2)
#endif
/* Small trees inside a walk ("Small subtrees" below): counted references,
   no collection inside the walk's allocations, and prefilled dicts (where
   the road is asked) */
#define FC_SUB_ROAD (FC_PROVEN_MISS && !FC_GC_ANY_ALLOC && FC_PREFILL)
#if FC_SUB_ROAD
static PyObject *fc_sub_run(FcCtx *c, PyObject *x);
#endif

#if FC_PREFILL
/* An exact dict, deep_ok, memo native, not shared, memo lookup missed: its
   copy starts as x.copy() (see "prefill" at the top).
   FC_PUSHED | NULL+exc */
static PyObject *
fc_enter_dict_prefill(FcCtx *c, PyObject *x)
{
#if FC_MEMO_ABSORB
    if (FC_UNLIKELY(x == c->native.mirror)) {
        return fc_enter_memo_itself(c, x);
    }
#endif
#if FC_SUB_ROAD
    /* a small tree below it: no frames ("Small subtrees").  Asked here, out
       of the walker's loop, which the test perturbed (dict_int_str +1.5% of
       our instructions, none of them on this road) */
    if (((PyDictObject *)x)->ma_values == NULL && c->sub_credit > 0 && c->hook_depth == 0
        && c->nframes > 0 && PyDict_GET_SIZE(x) > 1) {
        PyObject *y = fc_sub_run(c, x);
        if (y != FC_SMALL_NO) {
            return y;
        }
    }
#endif
#if !FC_HAVE_DICT_VERSION
    /* 3.14+: no version tag; x is watched while its frame lives, and the
       stamp is read before the snapshot (plan.h, source stamps) */
    FcState *st = c->st;
    int w = st->src_watcher >= 0 ? fc_src_watch(st, x) : -1;
    if (w < 0) {
        return fc_push_dict(c, x, _PyDict_NewPresized(PyDict_GET_SIZE(x)), 0, 0);
    }
    uint64_t stamp = fc_src_stamp(st);
    PyObject *res = fc_push_dict(c, x, fc_dict_copy(x), 1, stamp);
    if (res == NULL) {
        if (w > 0) {
            fc_src_unwatch(st, x);
        }
        return NULL;
    }
    c->frames[c->nframes - 1].src_watched = (uint8_t)(w > 0);
    return res;
#else
    /* the version of the snapshot: if a finalizer changes x after it, the
       first resume demotes */
#if FC_FT
    /* A split table (an instance's __dict__) is copied the ordinary way,
       into a table of its own as _deepcopy_dict builds one: x.copy() would
       share the class's keys, whose reference count every thread copying
       such instances writes (a hint: read without x's lock). */
    if (_Py_atomic_load_ptr_relaxed(&((PyDictObject *)x)->ma_values) != NULL) {
        return fc_push_dict(c, x, _PyDict_NewPresized(PyDict_GET_SIZE(x)), 0, 0);
    }
#endif
    uint64_t ver;
    PyObject *y = fc_dict_copy_ver(x, &ver);
    return fc_push_dict(c, x, y, 1, ver);
#endif
}
#endif

#if FC_ATOMIC_FIRST
/* 3.14+: `if cls in _atomic_types: return x` for a set that is not the
   stdlib's own (FcState.deep_atomic_std 0): asked of every type, before
   the memo.  1 atomic | 0 | -1+exc */
FC_NOINLINE int
fc_atomic_custom(FcState *st, PyObject *x)
{
    PyObject *set = Py_NewRef(st->deep_atomic);
    int r = fc_copy_set_has(set, (PyObject *)Py_TYPE(x));
    Py_DECREF(set);
    if (r >= 0 && !PyAnySet_CheckExact(st->deep_atomic) && fc_sync_deep(st) < 0) {
        return -1;   /* a container of the user's ran code */
    }
    return r;
}

/* deepcopy()'s first step on 3.14+ (gh-114264): the atomic test, before
   the memo is made or read.  1 atomic | 0 | -1+exc */
FC_INLINE int
fc_atomic_first(FcState *st, PyObject *x, int k)
{
    if (FK_BIT(k) & FC_DEEP_ATOMIC & st->deep_ok) {
        return 1;
    }
    if (FC_LIKELY(st->deep_atomic_std)) {
        return 0;   /* the stdlib's set: its members are all kinds */
    }
    return fc_atomic_custom(st, x);
}
#endif

/* One deepcopy(x, memo) step: a finished copy, or a pushed frame.
   new ref | FC_PUSHED | NULL+exc */
FC_INLINE PyObject *
fc_enter(FcCtx *c, PyObject *x)
{
    int k = fc_kind(Py_TYPE(x));
    PyObject *y;

    if (FC_LIKELY(c->mode == FC_MEMO_NATIVE)) {
        uint32_t bit = FK_BIT(k) & c->st->deep_ok;
        if (bit & FC_DEEP_ATOMIC) {
            return Py_NewRef(x);
        }
#if FC_ATOMIC_FIRST
        if (FC_UNLIKELY(!c->st->deep_atomic_std)) {
            int a = fc_atomic_custom(c->st, x);
            if (a != 0) {
                return a > 0 ? Py_NewRef(x) : NULL;
            }
        }
#endif
        /* a frame that just looked x up and missed need not look again */
        if (!fc_memo_missed(&c->native, x)
            && (y = fc_memo_get(&c->native, x)) != NULL) {
            return Py_NewRef(y);
        }
#if FC_PREFILL
        /* fc_dispatch's first step for the commonest container */
        if (k == FK_DICT && bit && c->share == NULL) {
            return fc_enter_dict_prefill(c, x);
        }
#endif
        return fc_dispatch(c, x, k);
    }
#if FC_ATOMIC_FIRST
    int a = fc_atomic_first(c->st, x, k);
    if (a != 0) {
        return a > 0 ? Py_NewRef(x) : NULL;
    }
#endif
    int r = fc_memo_lookup(c, x, &y);
    if (r != 0) {
        return r > 0 ? y : NULL;
    }
    return fc_dispatch(c, x, k);
}

#if FC_MEMO_ABSORB
/* x, met by the walk with the native memo, is the memo's own dict or its
   keep-alive list (a caller's dict the table took, or one a hook handed
   the walk).  The stdlib looks it up in the very dict (the dict itself is
   found under id(memo): the keep-alive list is its "copy") and copies it
   as it writes into it: the dict is the memo from now on, and x is
   entered again there.  new ref | FC_PUSHED | NULL+exc */
FC_NOINLINE PyObject *
fc_enter_memo_itself(FcCtx *c, PyObject *x)
{
    if (fc_memo_expose(c) < 0) {
        return NULL;
    }
    return fc_enter(c, x);
}
#endif

/* deepcopy(x) after its memo lookup missed.
   new ref | FC_PUSHED | NULL+exc */
static PyObject *
fc_enter_dispatch(FcCtx *c, PyObject *x)
{
    return fc_dispatch(c, x, fc_kind(Py_TYPE(x)));
}

/* fc_enter_dispatch, for x of kind k. */
/* An exact list, _deepcopy_list still the stdlib's: allocated for the
   whole list; while the memo is native no Python code runs in the first
   loop, and the list's size always counts the filled items only, so it is
   a valid list at every point.  All atomic: the copy is done.
   new ref | FC_PUSHED | NULL+exc */
FC_INLINE PyObject *
fc_enter_list(FcCtx *c, PyObject *x)
{
    FcFrame *f;
    PyObject *y;
    Py_ssize_t i = 0, cap = PyList_GET_SIZE(x), n;
    y = PyList_New(cap);
    if (y == NULL) {
        return NULL;
    }
    /* PyList_New can collect garbage (3.10/3.11) and a finalizer
       can shrink or grow x: read its size again, after it */
    FC_CS_BEGIN(x);
    n = PyList_GET_SIZE(x) < cap ? PyList_GET_SIZE(x) : cap;
    if (c->mode == FC_MEMO_NATIVE) {
        for (; i < n; i++) {
            PyObject *item = PyList_GET_ITEM(x, i);
#if FC_FT
            /* a run of one object, counted in one write to its line
               (docs/free-threading.md, "Shared atoms") */
            Py_ssize_t k = 1;
            while (i + k < n && PyList_GET_ITEM(x, i + k) == item) {
                k++;
            }
#endif
            if (!fc_deep_atomic(c, item)) {
                break;
            }
#if FC_FT
            fc_incref_n(item, k);
            for (Py_ssize_t j = 0; j < k; j++) {
                PyList_SET_ITEM(y, i + j, item);
            }
            i += k - 1;
#else
            PyList_SET_ITEM(y, i, Py_NewRef(item));
#endif
        }
    }
    FC_CS_END();
    Py_SET_SIZE(y, i);
    if (fc_untrack(c, y) < 0) {
        Py_DECREF(y);
        return NULL;
    }
    if (i == PyList_GET_SIZE(x) && c->mode == FC_MEMO_NATIVE) {
        if (fc_memo_finish(c, x, y) < 0) {
            Py_DECREF(y);
            return NULL;
        }
        return y;
    }
    if (fc_memo_store(c, x, y) < 0 || (f = fc_push(c, FR_LIST, x, y)) == NULL) {
        Py_DECREF(y);
        return NULL;
    }
    Py_DECREF(y);
    f->u.list.i = i;
    return FC_PUSHED;
}

/* An exact tuple, _deepcopy_tuple still the stdlib's.  With a native memo,
   every item atomic or already copied means no child is copied, so nothing
   can memoize x meanwhile: the tuple is done here.
   new ref | FC_PUSHED | NULL+exc */
FC_INLINE PyObject *
fc_enter_tuple(FcCtx *c, PyObject *x)
{
    PyObject *y;
    PyObject *missed = NULL;    /* x, if x was the last lookup, a miss (the items' own
                                   lookups append nothing, so the table keeps its size) */
    if (c->mode == FC_MEMO_NATIVE) {
        missed = c->native.miss;
        /* every item atomic or already copied: no child is copied,
           so nothing can memoize x meanwhile -- the tuple is done */
        Py_ssize_t i, n = PyTuple_GET_SIZE(x);
        PyObject *seen[8];     /* small tuples: each item looked up once */
        int same = 1;
        for (i = 0; i < n; i++) {
            PyObject *item = PyTuple_GET_ITEM(x, i), *v = item;
            if (!fc_deep_atomic(c, item)) {
                v = fc_memo_get_own(&c->native, item, 1);  /* x's slot i */
                if (v == NULL) {
                    break;
                }
                same &= v == item;
            }
            if (i < 8) {
                seen[i] = v;
            }
        }
        if (i == n) {
            if (same) {
                return Py_NewRef(x);
            }
            y = PyTuple_New(n);
            if (y == NULL) {
                return NULL;
            }
            for (i = 0; i < n; i++) {
                PyObject *item = PyTuple_GET_ITEM(x, i);
                PyObject *v = i < 8 ? seen[i]
                              : fc_deep_atomic(c, item) ? item
                              : fc_memo_get(&c->native, item);
                PyTuple_SET_ITEM(y, i, Py_NewRef(v));
            }
            if (fc_untrack(c, y) < 0 || fc_memo_finish(c, x, y) < 0) {
                Py_DECREF(y);
                return NULL;
            }
            return y;
        }
    }
    FcFrame *f = fc_push(c, FR_TUPLE, x, NULL);
    if (f == NULL) {
        return NULL;
    }
    /* x missed the table of so many entries, + 1 (fc_memo_getitem) */
    f->u.tuple.since = missed == x ? c->native.n + 1 : 0;
    return FC_PUSHED;
}

/* FP_NAMEDTUPLE: the reduce value object.__reduce_ex__(4) returns for a
   namedtuple, built here, then reconstructed as usual.
   FC_PUSHED | NULL+exc */
static PyObject *
fc_deep_namedtuple(FcCtx *c, PyObject *x)
{
    Py_ssize_t n = PyTuple_GET_SIZE(x);
    PyObject *args = PyTuple_New(n + 1);
    if (args == NULL) {
        return NULL;
    }
    PyTuple_SET_ITEM(args, 0, Py_NewRef((PyObject *)Py_TYPE(x)));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(args, i + 1, Py_NewRef(PyTuple_GET_ITEM(x, i)));
    }
    return fc_push_recon(c, x, Py_NewRef(c->st->copyreg_newobj), args,
                         NULL, NULL, NULL, NULL);
}

/* FP_IDENTITY: enum.Enum.__deepcopy__, `return self` (no memo entry),
   unless x shadows it in its own __dict__.
   new ref | NULL+exc | NULL: the generic road */
static PyObject *
fc_deep_identity(FcCtx *c, PyObject *x)
{
    PyObject *d = fc_instance_dict(x);   /* see fc_reduce */
    if (d == NULL) {
        return Py_NewRef(x);
    }
    int has = PyDict_Contains(d, c->st->s_deepcopy);
    Py_DECREF(d);
    return has == 0 ? Py_NewRef(x) : NULL;
}

/* An instance of a type that is not an exact builtin: the road its plan
   names.  *gflags: the plan's FG_* for the generic road.
   new ref | FC_PUSHED | NULL+exc | NULL: the generic road */
static PyObject *
fc_enter_planned(FcCtx *c, PyObject *x, int *gflags)
{
    FcPlan tmp, *p = fc_plan_get(c->st, Py_TYPE(x), &tmp);
    if (p == NULL) {
        return NULL;
    }
    *gflags = p->gflags;
    PyObject *res;
    switch (p->deep) {
    case FP_PLAIN:
        res = fc_deep_plain(c, x, p);
        break;
    case FP_BUFFER:
        res = fc_buffer_deep(c, x, p->buffer);
        break;
    case FP_ODICT:
        res = fc_deep_odict(c, x);
        break;
    case FP_VALUE:
        res = fc_deep_value(c, x, p->value);
        break;
    case FP_NAMEDTUPLE:
        res = fc_deep_namedtuple(c, x);
        break;
    case FP_IDENTITY:
        res = fc_deep_identity(c, x);
        break;
    case FP_STATEHOOK:
        res = fc_deep_statehook(c, x, p);
        break;
    default:
        res = NULL;
        break;
    }
    if (p == &tmp) {
        Py_CLEAR(tmp.slotnames);
    }
    return res;
}

/* share=: is x to be shared rather than copied?  A type or tuple of
   types is an isinstance() check (a metaclass's __instancecheck__ is user
   code), anything else a predicate called with x.  1 | 0 | -1+exc */
static int
fc_share_match(FcCtx *c, PyObject *x)
{
    PyObject *s = c->share;
    if (fc_before_user_code(c, 0) < 0) {
        return -1;
    }
    if (PyType_Check(s) || PyTuple_Check(s)) {
        return PyObject_IsInstance(x, s);
    }
    PyObject *r = PyObject_CallOneArg(s, x);
    if (r == NULL) {
        return -1;
    }
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    return t;
}

/* deepcopy(x)'s steps after the memo lookup: atomic kinds, share=, the
   builtin containers whose stdlib copier is still the original, a plan's
   road, and the stdlib's generic road for the rest.
   new ref | FC_PUSHED | NULL+exc */
static PyObject *
fc_dispatch(FcCtx *c, PyObject *x, int k)
{
    FcState *st = c->st;
    PyTypeObject *tp = Py_TYPE(x);
    uint32_t bit = FK_BIT(k) & st->deep_ok;

    if (bit & FC_DEEP_ATOMIC) {
        return Py_NewRef(x);
    }
    if (c->share != NULL) {
        int r = fc_share_match(c, x);
        if (r != 0) {
            return r > 0 ? Py_NewRef(x) : NULL;
        }
        /* the predicate is user code: x.__class__ may have been assigned,
           and the stdlib's tables edited */
        if (fc_sync_deep(st) < 0) {
            return NULL;
        }
        if (FC_UNLIKELY(Py_TYPE(x) != tp)) {
            tp = Py_TYPE(x);
            k = fc_kind(tp);
            bit = FK_BIT(k) & st->deep_ok;
            if (bit & FC_DEEP_ATOMIC) {
                return Py_NewRef(x);
            }
        }
    }
    if (bit) {
#if FC_MEMO_ABSORB
        if (FC_UNLIKELY(x == c->native.mirror || x == c->native.mirror_keep)) {
            return fc_enter_memo_itself(c, x);
        }
#endif
        switch (k) {
        case FK_LIST:
            return fc_enter_list(c, x);
        case FK_DICT:
#if FC_PREFILL
            if (c->mode == FC_MEMO_NATIVE) {
                return fc_enter_dict_prefill(c, x);
            }
#endif
            return fc_push_dict(c, x, _PyDict_NewPresized(PyDict_GET_SIZE(x)), 0, 0);
        case FK_TUPLE:
            return fc_enter_tuple(c, x);
        case FK_METHOD:
            c->off_tape = 1;
            return fc_push(c, FR_METHOD, x, NULL) ? FC_PUSHED : NULL;
        case FK_SET:
        case FK_FROZENSET:
            if (st->set_ok & bit) {
                c->off_tape = 1;
                return fc_deep_set(c, x);
            }
            break;
        default:
            break;
        }
    }
    /* no tape holds what the roads below copy */
    c->off_tape = 1;
#if FC_HAVE_FROZENDICT
    if (tp == &PyFrozenDict_Type && st->fdict_ok) {
        return fc_enter_frozendict(c, x);
    }
#endif
    int gflags = 0;
    if (k == FK_OTHER && !PyType_Check(x)) {
        PyObject *res = fc_enter_planned(c, x, &gflags);
        if (res != NULL || PyErr_Occurred()) {
            return res;
        }
    }
    return fc_deep_generic(c, x, gflags);
}

static PyObject *fc_enter_dispatch(FcCtx *c, PyObject *x);
static PyObject *fc_walk_from(FcCtx *c, Py_ssize_t base, PyObject *res);

/* fc_walk() for a top-level x whose memo lookup the caller already did. */
static PyObject *
fc_walk_looked_up(FcCtx *c, PyObject *x)
{
    PyObject *res = fc_enter_dispatch(c, x);
    if (res != FC_PUSHED) {
        return res;
    }
    return fc_walk_from(c, c->nframes - 1, res);
}

/* The top-level walk: it may return owing the sets' compare ("Syncs
   owed"), for nothing is classified after it. */
static PyObject *
fc_walk_top(FcCtx *c, PyObject *x)
{
    Py_ssize_t base = c->nframes;
    return fc_walk_from(c, base, fc_enter(c, x));
}

/* A walk nested in a step of another (FcWalkOps): its caller goes on
   classifying, so what it owes is paid. */
static PyObject *
fc_walk(FcCtx *c, PyObject *x)
{
    PyObject *y = fc_walk_top(c, x);
    if (y != NULL && fc_sets_owed(c) && fc_pay_sets(c) < 0) {
        Py_DECREF(y);
        return NULL;
    }
    return y;
}

/* The loop: run frames above `base`, starting with res (the first step's
   result or FC_PUSHED).  new ref | NULL+exc */
static PyObject *
fc_walk_from(FcCtx *c, Py_ssize_t base, PyObject *res)
{
    for (;;) {
        if (res == NULL) {
            goto error;
        }
        PyObject *give = NULL;
        if (res != FC_PUSHED) {
            if (c->nframes == base) {
                return res;
            }
            give = res;
        }
        PyObject *out;
        int r = fc_resume(c, &c->frames[c->nframes - 1], give, &out);
        if (r < 0) {
            goto error;
        }
        if (r == 0) {
            fc_pop(c);
            res = out;
            continue;
        }
        res = fc_enter(c, out);
        Py_DECREF(out);
    }
error:
    while (c->nframes > base) {
        fc_pop(c);
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Stack headroom                                                      */
/* ------------------------------------------------------------------ */

#include "platform.h"

#if FC_PLAT_HAVE_STACK_BOUNDS
static FC_PLAT_THREAD_LOCAL uintptr_t fc_stack_lo;   /* lowest usable address */

/* 0 | -1+RecursionError when this thread's C stack is nearly used up: a
   hook that recurses through deepcopy() must not crash a small thread. */
static int
fc_stack_check(void)
{
    /* the frame address, not a local's: ASan's fake stacks move locals */
    uintptr_t sp = FC_PLAT_FRAME_ADDRESS();
    if (FC_UNLIKELY(fc_stack_lo == 0)) {
        uintptr_t addr;
        size_t size;
        fc_stack_lo = 1;
        if (fc_plat_stack_bounds(&addr, &size) == 0) {
            size_t margin = size / 4 < (64 << 10) ? size / 4 : (64 << 10);
            fc_stack_lo = addr + margin;
        }
    }
    if (FC_UNLIKELY(sp < fc_stack_lo)) {
        PyErr_SetString(PyExc_RecursionError,
                        "maximum recursion depth exceeded" FC_RECURSION_WHERE);
        return -1;
    }
    return 0;
}
#else
static int
fc_stack_check(void)
{
    return 0;
}
#endif

/* ------------------------------------------------------------------ */
/* Small trees                                                         */
/* ------------------------------------------------------------------ */
/*
 * Most deepcopy() calls copy something small: a config, a message, a JSON
 * document, an RL step -- a few exact dicts and lists of atoms.  For them
 * the walker's fixed costs (a context, a memo made and cleared, a frame per
 * container, the memo entries and keep-alives) are most of the call.  A
 * call whose memo is fresh (memo=None) and whose x is such a tree is copied
 * by a plain recursion instead, with no memo at all:
 *
 *   - every container is an exact dict (combined table, keys of the quiet
 *     kinds, which are atomic), list or tuple whose stdlib copier is still
 *     the original (FcState.deep_ok); every other object is atomic.  A
 *     tuple of atoms is itself, as _deepcopy_tuple returns it;
 *   - every container but x has a reference count of exactly 1: the slot
 *     of its parent, which is read once.  So nothing is met twice, and
 *     there is no cycle (x met again inside itself counts 2): the memo
 *     would never be hit, and the copy has the stdlib's shape.  (Counted
 *     references: GIL builds, as the memo's proven misses -- pyver.h,
 *     FC_PROVEN_MISS.  An immortal's count is never 1.)
 *   - no user code can run: no hook, no key with a __hash__ of its own,
 *     and no collection inside an allocation -- 3.12+ collect only at the
 *     eval breaker, and on 3.10/3.11 the collector is held off for the
 *     call (a collection postponed to the next allocation is unobservable,
 *     as in fc_dict_copy_ver).  So the memo could never be shown to anyone
 *     either, and the source cannot change while it is read;
 *   - at most FC_SMALL_ITEMS containers and items in all, of which at
 *     most FC_SMALL_SEQ_ITEMS are list and tuple items.  The first
 *     FC_SMALL_DEPTH levels are plain recursion; below them the last dict
 *     or list in each dict or list, its tail, is read and copied by a loop
 *     at its parent's level, after the parent's other children, and only
 *     the other children take FC_SMALL_DEPTH more levels of recursion.  So
 *     the C stack stays a few KiB (32 levels at most), and a chain of
 *     dicts (a linked structure, a nested config's main branch) is limited
 *     by the budgets alone.  (The loop at every level cost shallow trees
 *     CPU time though it saved instructions: rl_step 1.68x -> 1.60x
 *     copium.)  A container's whole
 *     size is taken from the budgets as it is entered, so a big one ends
 *     the scan at once.  What the road saves is a frame and the memo's
 *     work per container (about 200 instructions); a dict's items cost
 *     about as much either way, since the scan reads a dict's entry array
 *     in one pass.  A list of atoms gains nothing: the walker copies it
 *     in one tight loop, and here it is read twice (scan, then copy).  So
 *     list items get the small budget, and a tree made of long lists
 *     (optimizer_state's 100-float lists: +26% instructions when 1,024
 *     containers were allowed) fails early, where a scan that fails late
 *     is wasted (+0.7% on optimizer_state's small size, which reads 256
 *     floats before it fails).  json_config (1,302 items, 200 of them in
 *     lists) qualifies: 352K -> 268K instructions, below its floor.
 *
 * fc_small_scan_flat reads the tree first and allocates nothing, so a tree
 * that does not qualify costs only that read (a few instructions an item, up to
 * the first thing that disqualifies it) before the walker takes it from
 * the top; fc_small_copy then copies what was read, with nothing run in
 * between.  A dict is x.copy() (its key table cloned) with only its
 * container values put back, in place where the table layout allows
 * (fc_dict_put_at).  A tail's copy is made once its parent's is, and put
 * in the place its parent's copy kept for it: the entry still holding the
 * source, or the list item still NULL (either is freed as it is if the
 * copy fails).  Which child is the tail, and at which level the loop
 * takes over, is decided the same way by the scan and the copy (the last
 * dict or list, by the type's flags: the scan then reads it and takes
 * exact ones only), so the copy's recursion is never deeper than the
 * scan's.  The walker's frame for a level of
 * a 400-level chain of two-key dicts costs about 520 instructions of
 * fastcopy's own; a level here about 200, a third of them the scan's:
 * 449K -> 332K instructions a copy on 3.11, 0.86x its floor.
 */
#if FC_PROVEN_MISS
#define FC_SMALL 1
#define FC_SMALL_ITEMS 2048
#define FC_SMALL_SEQ_ITEMS 256
#define FC_SMALL_DEPTH 16
#define FC_SMALL_KINDS (FK_BIT(FK_DICT) | FK_BIT(FK_LIST) | FK_BIT(FK_TUPLE))

static int fc_small_scan_flat(FcState *st, PyObject *x, int depth, int *budget);
static int fc_small_scan_chain(FcState *st, PyObject *x, int depth, int *budget);

/* A dict's entries as an array, read in one pass where the layout is known
   (fc_dict_next finds the keys object, its kind and its entries again at
   every step): the key place of entry 0 (its value's is the next place),
   with *n entries *stride places apart, deleted ones holding no value.
   Valid while the dict cannot change: nothing runs on the small road.
   NULL: use PyDict_Next (3.10, an unknown layout, an empty table) */
FC_INLINE PyObject **
fc_small_entries(FcState *st, PyObject *d, Py_ssize_t *n, Py_ssize_t *stride)
{
#if FC_DICT_SLOTS
    FcDictKeys *dk;
    if (FC_LIKELY(st->dict_slots_ok) && (dk = fc_dict_combined(d)) != NULL
        && (*n = dk->dk_nentries) > 0) {
        /* (the shared empty table's entries are not even aligned) */
        return fc_dict_entry(dk, 0, stride);
    }
#else
    (void)st; (void)d; (void)n; (void)stride;
#endif
    return NULL;
}

/* Is v a dict or a list: a container whose copy can be made after its
   parent's?  (A tuple's copy needs its items first.)  By the type's flags,
   one test: the scan reads such a v next, and takes exact ones only.
   1 | 0 */
FC_INLINE int
fc_small_spine(PyObject *v)
{
    return (Py_TYPE(v)->tp_flags & (Py_TPFLAGS_DICT_SUBCLASS | Py_TPFLAGS_LIST_SUBCLASS)) != 0;
}

/* Does a container's non-atomic child v keep the tree small?  It must be
   referenced by its parent's slot alone -- but a tuple of atoms is itself,
   wherever else it is held.  In a dict or a list (tail not NULL) a child
   that is a dict or a list is the container's tail until a later one
   replaces it: the tail is read by fc_small_scan_level's loop once its
   parent's other children are, the one replaced is read now, a level
   deeper.
   1 | 0 */
FC_INLINE int
fc_small_scan_child(FcState *st, PyObject *v, int depth, int *budget, PyObject **tail,
                    const int tails)
{
    if (Py_REFCNT(v) != 1) {
        return PyTuple_CheckExact(v) && fc_tuple_atomic_st(st, v);
    }
    if (!tails) {
        return fc_small_scan_flat(st, v, depth - 1, budget);
    }
    if (tail != NULL && fc_small_spine(v)) {
        PyObject *prev = *tail;
        *tail = v;
        if (prev == NULL) {
            return 1;
        }
        v = prev;
    }
    return fc_small_scan_chain(st, v, depth - 1, budget);
}

/* One entry of a dict that may be part of a small tree: a quiet, atomic
   key and an atomic value, or a value that is the root of one.  1 | 0 */
FC_INLINE int
fc_small_scan_entry(FcState *st, PyObject *k, PyObject *v, int depth, int *budget,
                    PyObject **tail, const int tails)
{
    return (FK_BIT(fc_kind(Py_TYPE(k))) & FC_QUIET_KEYS & FC_DEEP_ATOMIC & st->deep_ok)
           && (fc_deep_atomic_st(st, v)
               || fc_small_scan_child(st, v, depth, budget, tail, tails));
}

/* Is x (a container) the root of a small tree?  Reads only.  tails 0:
   its children are read by recursion, depth - 1 levels of it left to them.
   tails 1: the last dict or list in each dict and list (its tail) is read
   by this loop, at the same depth: a chain of dicts costs no C stack.
   Two instances, as fc_small_copy_level's (which decides the same way,
   level for level: the copy never recurses deeper than this).  1 | 0 */
FC_INLINE int
fc_small_scan_level(FcState *st, PyObject *x, int depth, int *budget, const int tails)
{
    do {
        PyTypeObject *tp = Py_TYPE(x);
        PyObject *tail = NULL;
        if (--*budget < 0) {
            return 0;
        }
        if (tp == &PyDict_Type) {
            PyObject *k, *v;
            Py_ssize_t pos = 0, n, stride;
            if ((*budget -= PyDict_GET_SIZE(x)) < 0 || ((PyDictObject *)x)->ma_values != NULL) {
                return 0;
            }
            PyObject **e = fc_small_entries(st, x, &n, &stride);
            if (e != NULL) {
                for (PyObject **end = e + n * stride; e != end; e += stride) {
                    if (e[1] != NULL
                        && !fc_small_scan_entry(st, e[0], e[1], depth, budget, &tail, tails)) {
                        return 0;
                    }
                }
            }
            else {
                while (PyDict_Next(x, &pos, &k, &v)) {
                    if (!fc_small_scan_entry(st, k, v, depth, budget, &tail, tails)) {
                        return 0;
                    }
                }
            }
        }
        else if (tp == &PyList_Type || tp == &PyTuple_Type) {
            Py_ssize_t n = Py_SIZE(x);
            PyObject **items = tp == &PyList_Type ? ((PyListObject *)x)->ob_item
                                                  : ((PyTupleObject *)x)->ob_item;
            PyObject **tailp = tp == &PyList_Type ? &tail : NULL;
            if ((budget[0] -= n) < 0 || (budget[1] -= n) < 0) {
                return 0;
            }
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *v = items[i];
                if (!fc_deep_atomic_st(st, v)
                    && !fc_small_scan_child(st, v, depth, budget, tailp, tails)) {
                    return 0;
                }
            }
        }
        else {
            return 0;
        }
        x = tail;
    } while (tails && x != NULL);
    return 1;
}

/* Plain recursion for FC_SMALL_DEPTH levels (all that most trees have),
   then the tails' loop, with FC_SMALL_DEPTH levels of recursion again for
   the children that are not tails */
static int
fc_small_scan_flat(FcState *st, PyObject *x, int depth, int *budget)
{
    if (depth <= 0) {
        return fc_small_scan_chain(st, x, FC_SMALL_DEPTH, budget);
    }
    return fc_small_scan_level(st, x, depth, budget, 0);
}

static int
fc_small_scan_chain(FcState *st, PyObject *x, int depth, int *budget)
{
    if (depth <= 0) {
        return 0;
    }
    return fc_small_scan_level(st, x, depth, budget, 1);
}


/* Is v, in a tree the scan accepted, a container?  Everything else
   there is atomic, of an exact type of the atomic kinds, none of which is
   flagged as a dict, list or tuple: one test of the type's flags instead
   of the kind's chain.  1 | 0 */
FC_INLINE int
fc_small_container(PyObject *v)
{
    return (Py_TYPE(v)->tp_flags & (Py_TPFLAGS_DICT_SUBCLASS | Py_TPFLAGS_LIST_SUBCLASS
                                    | Py_TPFLAGS_TUPLE_SUBCLASS)) != 0;
}

/* A container's tail (fc_small_scan_child) while its copy waits to be
   made: the source (NULL: no tail) and where the copy goes, entry ix of a
   dict's copy (key: its key) or item ix of a list's (key NULL).  Borrowed:
   nothing runs on this road, so the source tree holds them unchanged. */
typedef struct {
    PyObject *src;
    PyObject *key;
    Py_ssize_t ix;
} FcSmallTail;

static PyObject *fc_small_copy_flat(FcState *st, PyObject *x, int room);
static PyObject *fc_small_copy_chain(FcState *st, PyObject *x);
static PyObject *fc_small_copy_tuple(FcState *st, PyObject *x, int room);

/* The copy of a dict or list the scan accepted: by plain recursion
   while there is room for room more levels of it, then with its tails
   taken by a loop.  new ref | NULL+exc */
FC_INLINE PyObject *
fc_small_copy(FcState *st, PyObject *x, int room)
{
    return room > 0 ? fc_small_copy_flat(st, x, room) : fc_small_copy_chain(st, x);
}

/* y[k] = w, the copy of v, in the copy y of a scanned dict, where entry ix
   holds k.  0 | -1+exc */
FC_INLINE int
fc_small_put_entry(FcState *st, PyObject *y, Py_ssize_t ix, PyObject *k, PyObject *v,
                   PyObject *w)
{
    /* the key is quiet: PyDict_SetItem runs no user code */
    return w == v || fc_dict_put_at_st(st, y, ix, k, w) ? 0 : PyDict_SetItem(y, k, w);
}

/* The copy of a scanned tuple's item.  new ref | NULL+exc */
FC_INLINE PyObject *
fc_small_child(FcState *st, PyObject *v, int room)
{
    if (!fc_small_container(v)) {
        return Py_NewRef(v);
    }
    return fc_small_spine(v) ? fc_small_copy(st, v, room) : fc_small_copy_tuple(st, v, room);
}

/* y[k] = the copy of v, a tuple, in the copy y of a scanned dict, where
   entry ix holds k.  0 | -1+exc */
static int
fc_small_copy_entry(FcState *st, PyObject *y, Py_ssize_t ix, PyObject *k, PyObject *v,
                    int room)
{
    PyObject *w = fc_small_copy_tuple(st, v, room);
    if (w == NULL) {
        return -1;
    }
    int r = fc_small_put_entry(st, y, ix, k, v, w);
    Py_DECREF(w);
    return r;
}

/* Puts w, the copy of tail t's source (or NULL: it failed), in place in y.
   Either way y holds what it must to be freed.  0 | -1+exc */
FC_INLINE int
fc_small_put_tail(FcState *st, PyObject *y, const FcSmallTail *t, PyObject *w)
{
    if (t->key == NULL) {
        PyList_SET_ITEM(y, t->ix, w);   /* the item was NULL; NULL stays */
        return w == NULL ? -1 : 0;
    }
    if (w == NULL) {
        return -1;   /* the entry still holds the source */
    }
    int r = fc_small_put_entry(st, y, t->ix, t->key, t->src, w);
    Py_DECREF(w);
    return r;
}

/* v, a dict or a list at entry or item ix of y's source (key: a dict's
   key, else NULL): copied into y now (tails 0, room levels of plain
   recursion left), or made the tail, the one it replaces copied now.
   0 | -1+exc */
FC_INLINE int
fc_small_set_tail(FcState *st, PyObject *y, FcSmallTail *t, Py_ssize_t ix, PyObject *key,
                  PyObject *v, int room, const int tails)
{
    FcSmallTail prev = {v, key, ix};
    if (tails) {
        prev = *t;
        t->src = v;
        t->key = key;
        t->ix = ix;
        if (prev.src == NULL) {
            return 0;
        }
    }
    return fc_small_put_tail(st, y, &prev, fc_small_copy(st, prev.src, room - 1));
}

/* The copy of a tuple the scan accepted, nothing having run since (a
   tuple has no tail: its copy needs its items first).  new ref | NULL+exc */
static PyObject *
fc_small_copy_tuple(FcState *st, PyObject *x, int room)
{
    if (fc_tuple_atomic_st(st, x)) {
        return Py_NewRef(x);   /* _deepcopy_tuple: every item is itself */
    }
    Py_ssize_t n = PyTuple_GET_SIZE(x);
    PyObject *y = PyTuple_New(n);
    if (y == NULL) {
        return NULL;
    }
    int same = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyTuple_GET_ITEM(x, i);
        PyObject *w = fc_small_child(st, v, room - 1);
        if (w == NULL) {
            Py_DECREF(y);
            return NULL;
        }
        same &= w == v;
        PyTuple_SET_ITEM(y, i, w);
    }
    if (same) {
        /* every item is itself (a nested tuple of atoms comes back as it
           is): _deepcopy_tuple returns x */
        Py_DECREF(y);
        return Py_NewRef(x);
    }
    return y;
}

/* The copy of a dict or list the scan accepted, nothing having run
   since.  tails 0: its children are copied by recursion, room - 1 levels
   of it left to them.  tails 1: each level's copy is made but for its
   tail (the entry there still holds the source, the item there is NULL),
   then the loop copies the tail and puts it in place, as the scan read it.
   Two instances (a constant tails), so that plain recursion, all that the
   shallow trees most calls copy need, pays nothing for the loop.
   new ref | NULL+exc */
FC_INLINE PyObject *
fc_small_copy_level(FcState *st, PyObject *x, int room, const int tails)
{
    PyObject *root = NULL, *parent = NULL, *y;   /* parent: in root's tree */
    FcSmallTail t = {NULL, NULL, 0}, at;
    for (;;) {
        PyTypeObject *tp = Py_TYPE(x);
        at = t;
        t.src = NULL;
        if (tp == &PyDict_Type) {
            PyObject *k, *v;
            Py_ssize_t pos = 0, n, stride;
            y = fc_dict_copy(x);
            if (y == NULL) {
                goto fail;
            }
            PyObject **e = fc_small_entries(st, x, &n, &stride);
            if (e != NULL) {
                for (Py_ssize_t i = 0; i < n; i++, e += stride) {
                    if (e[1] == NULL || !fc_small_container(e[1])) {
                        continue;
                    }
                    v = e[1];
                    if (fc_small_spine(v)
                            ? fc_small_set_tail(st, y, &t, i, e[0], v, room, tails) < 0
                            : fc_small_copy_entry(st, y, i, e[0], v, room - 1) < 0) {
                        goto fail_y;
                    }
                }
            }
            else {
                while (PyDict_Next(x, &pos, &k, &v)) {
                    if (!fc_small_container(v)) {
                        continue;
                    }
                    /* nothing runs on this road, but references cost little
                       on this rare one (3.10, an unknown layout) */
                    Py_INCREF(k);
                    Py_INCREF(v);
                    int r = fc_small_spine(v)
                            ? fc_small_set_tail(st, y, &t, pos - 1, k, v, room, tails)
                            : fc_small_copy_entry(st, y, pos - 1, k, v, room - 1);
                    Py_DECREF(k);
                    Py_DECREF(v);
                    if (r < 0) {
                        goto fail_y;
                    }
                }
            }
        }
        else {
            /* a list */
            Py_ssize_t n = PyList_GET_SIZE(x);
            y = PyList_New(n);
            if (y == NULL) {
                goto fail;
            }
            if (PyList_GET_SIZE(x) != n) {
                /* cannot happen (nothing runs here), but costs nothing to know */
                PyErr_SetString(PyExc_RuntimeError, "list changed size during copy");
                goto fail_y;
            }
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *v = PyList_GET_ITEM(x, i), *w;
                if (!fc_small_container(v)) {
                    w = Py_NewRef(v);
                }
                else if (fc_small_spine(v)) {
                    if (fc_small_set_tail(st, y, &t, i, NULL, v, room, tails) < 0) {
                        goto fail_y;   /* the items not filled are NULL */
                    }
                    continue;
                }
                else if ((w = fc_small_copy_tuple(st, v, room - 1)) == NULL) {
                    goto fail_y;
                }
                PyList_SET_ITEM(y, i, w);
            }
        }
        if (root == NULL) {
            root = y;
        }
        else if (fc_small_put_tail(st, parent, &at, y) < 0) {
            goto fail;
        }
        if (t.src == NULL) {
            return root;
        }
        parent = y;
        x = t.src;
    }
fail_y:
    Py_DECREF(y);
fail:
    /* the tail's place in parent holds the source or NULL: freed with root */
    Py_XDECREF(root);
    return NULL;
}

static PyObject *
fc_small_copy_flat(FcState *st, PyObject *x, int room)
{
    return fc_small_copy_level(st, x, room, 0);
}

static PyObject *
fc_small_copy_chain(FcState *st, PyObject *x)
{
    return fc_small_copy_level(st, x, 0, 1);
}

/* Does the small road copy as the stdlib would today: dict, list and tuple
   copiers the stdlib's, and (3.14) its atomic types the shipped ones (a
   user's _atomic_types is asked per type).  1 | 0 */
FC_INLINE int
fc_small_allowed(FcState *st)
{
    if ((st->deep_ok & FC_SMALL_KINDS) != FC_SMALL_KINDS) {
        return 0;
    }
#if FC_ATOMIC_FIRST
    return st->deep_atomic_std != 0;
#else
    return 1;
#endif
}

/* deepcopy(x) with a fresh memo, x an exact dict or list, as a small tree
   if it is one.  new ref | FC_SMALL_NO | NULL+exc */
static PyObject *
fc_small_run(FcState *st, PyObject *x)
{
    if (!fc_small_allowed(st)) {
        return FC_SMALL_NO;
    }
    int budget[2] = {FC_SMALL_ITEMS, FC_SMALL_SEQ_ITEMS};
    if (!fc_small_scan_flat(st, x, FC_SMALL_DEPTH, budget)) {
        return FC_SMALL_NO;
    }
    /* the scan allocated nothing: no collection can have run since */
    if (Py_EnterRecursiveCall(FC_RECURSION_WHERE)) {
        return NULL;
    }
    st->test.small_trees++;
#if FC_GC_ANY_ALLOC
    int was = PyGC_Disable();
#endif
    PyObject *y = fc_small_copy(st, x, FC_SMALL_DEPTH);
#if FC_GC_ANY_ALLOC
    if (was) {
        PyGC_Enable();
    }
#endif
    Py_LeaveRecursiveCall();
    return y;
}

/*
 * Small subtrees.  A call the small road does not take (too big, a hook
 * somewhere) still meets small trees as it walks: the rows of a table, the
 * messages of a log, the sections of a big config, each a dict of atoms
 * with a list or a dict or two inside.  The walker spends a frame, a
 * dispatch and the memo's work on each of those containers, about 720
 * instructions of our own for a row {"a": i, "b": "x", "c": [i, 2]}; the
 * small road's scan and copy of it cost about 410.  So a dict the walker
 * enters after its memo lookup missed is scanned as a small tree, within
 * budgets of its own, and if it is one, copied by fc_small_copy.
 *
 * What differs from a whole call is the memo: it lives on.  The stdlib's
 * would hold an entry and a keep-alive for every container below the dict,
 * and filling those at once cost as much as the frames saved (tried: 253
 * instructions a row, on top of the road's 410).  But nobody can tell
 * whether they are there until code other than ours runs: a lookup of one
 * of them needs a second reference to it, and the scan took only
 * containers referenced once, by their parent, which the road read once;
 * only user code can make another (a reductor handing one back, a hook
 * storing one where the walk goes next), and only user code can look at
 * the memo.  So the road stores the dict's own entry and keep-alive as
 * the walker would, and records the subtree (memo.c, "Deferred
 * subtrees"); the entries below it are made, in the stdlib's order and in
 * their place, just before anything else runs (fc_before_user_code) or the
 * memo is read as a whole (fc_memo_sync, a ghost's place) -- and never, in
 * a call that runs nothing after its rows.  Where user code does run after
 * subtrees, the entries after them move up and the index is built again:
 * the road is then off for the rest of the call, so that a walk that
 * alternates rows and hooks does not pay that once a row.
 *
 * Two more ways for other code to run, which must find the entries made:
 * a buffer backend may release the GIL for a big copy (another thread may
 * then make references), so they are made before one is called; and the
 * last reference to an object user code handed the walker (a reduce
 * value, its args and state, a hook frame's parts) may be dropped when
 * its frame ends, running a finalizer without fc_before_user_code, so the
 * road is taken only while no such frame is on the stack (FcCtx.hook_depth
 * 0).  Only on 3.12+ with the GIL (FC_PROVEN_MISS: counted references; and
 * no collection outside the eval breaker -- on 3.10/3.11 a finalizer could
 * run inside any allocation of the walk, where nothing would fill the
 * entries first), where the memo is the native table of a call given no
 * memo (a caller's dict or mapping is asked by its own methods, and a
 * lent table lives on after the call), with no deep=/share= (user code
 * per object), no profiler and no replicate() tape (they count frames).
 * The scan of a dict that is not a small tree is lost work: every one
 * that fails takes a credit, every one that succeeds gives one back, and
 * a call out of credit stops trying, so a copy made of big or shared
 * dicts pays at most FC_SUB_CREDIT failed scans of FC_SUB_ITEMS items
 * more than any that succeed (8: with 32, optimizer_state's dicts of
 * 100-float lists paid 1.1% more of our instructions).  A dict of atoms
 * alone is copied with no record (nothing below it to make later).  A
 * dict of one entry is not even scanned (pyperformance's {'a': True}),
 * nor an instance's split __dict__, which the scan turns down
 * (pyperformance's dataclass states, scanned 30 times a round, cost its
 * copy 2.5% more of our instructions).  Lists are not tried: a list of
 * atoms is already one tight loop in the walker, and a list of dicts has
 * its dicts tried.  Measured: docs/performance.md, "Small trees inside a
 * walk".
 */
#if FC_SUB_ROAD
#define FC_SUB_ITEMS 128
#define FC_SUB_SEQ_ITEMS 64
#define FC_SUB_CREDIT 8

/* x, an exact dict the walker enters with the native memo, its lookup
   just missed, no frame of user code's objects open (FcCtx.hook_depth 0)
   and x not the call's own root (the small road's wider scan turned that
   down already): copied on the small road if it is a small tree ("Small
   subtrees").  new ref | FC_SMALL_NO | NULL+exc */
FC_NOINLINE PyObject *
fc_sub_run(FcCtx *c, PyObject *x)
{
    FcState *st = c->st;
    if (c->native.sub_off) {
        c->sub_credit = 0;      /* some were expanded: no more (memo.c) */
        return FC_SMALL_NO;
    }
    if (!fc_small_allowed(st)) {
        return FC_SMALL_NO;
    }
    int budget[2] = {FC_SUB_ITEMS, FC_SUB_SEQ_ITEMS};
    if (!fc_small_scan_flat(st, x, FC_SMALL_DEPTH, budget)) {
        c->sub_credit--;
        return FC_SMALL_NO;
    }
    /* nothing but atoms in it (the scan took no container below it): no
       entries below its own to make later */
    int atoms = budget[0] == FC_SUB_ITEMS - 1 - PyDict_GET_SIZE(x);
    if (c->sub_credit < FC_SUB_CREDIT) {
        c->sub_credit++;
    }
    st->test.small_subtrees++;
    PyObject *y = fc_small_copy(st, x, FC_SMALL_DEPTH);
    if (y == NULL) {
        return NULL;
    }
    /* x's own entry (its lookup's miss is still the last one: the road
       touched no table), then, its copy complete, its keep-alive */
    FcMemo *m = &c->native;
    int first_keep = m->keep_pos < 0;
    Py_ssize_t pos = m->n;
    if (fc_untrack(c, y) < 0 || fc_memo_store(c, x, y) < 0) {
        Py_DECREF(y);
        return NULL;
    }
    Py_ssize_t kpos = m->nkeep;
    if (fc_memo_keep_alive(c, x) < 0
        || (!atoms && fc_memo_sub_add(m, x, y, pos, kpos, first_keep) < 0)) {
        Py_DECREF(y);
        return NULL;
    }
    return y;
}
#endif
#else
#define FC_SMALL 0
#endif

/* ------------------------------------------------------------------ */
/* Entry                                                               */
/* ------------------------------------------------------------------ */

/* What the parts below the walker borrow from it (fastcopy.h, FcWalkOps). */
static const FcWalkOps fc_walk_ops = {
    .walk = fc_walk,
    .before_user_code = fc_before_user_code,
    .after_user_code = fc_after_user_code,
    .before_show = fc_demote_all,
    .stack_check = fc_stack_check,
};

FC_INTERNAL_INLINE void
fc_ctx_init(FcCtx *c, FcState *st)
{
    c->st = st;
    c->walk = &fc_walk_ops;
    c->mode = FC_MEMO_NATIVE;
    c->memo = NULL;
    c->memo_id = NULL;
    fc_memo_init(&c->native);
#if !FC_HAVE_DICT_VERSION && FC_MEMO_ABSORB
    c->native.mir_wid = st->mirror_watcher;
#endif
    c->lender = NULL;
    c->lent = 0;
    c->lent_mirror = NULL;
    c->adopt_dict = NULL;
    c->adopt_next = NULL;
    c->shown = 0;
    c->shown_x = NULL;
    c->shows = 0;
    c->shown_next = NULL;
#ifndef Py_GIL_DISABLED
    c->native.spare = &st->spare;
#endif
    c->frames = c->small_frames;
    c->nframes = 0;
    c->capframes = FC_FRAMES_INLINE;
    c->share = NULL;
    c->hook_depth = 0;
    c->untracked = NULL;
    c->nuntracked = c->capuntracked = 0;
    c->ops = NULL;
    c->nops = c->capops = 0;
    c->ambient = 0;
    c->gc_grace = FC_GC_GRACE;
    c->gc_due = 0;
    c->gc_swept = 0;
    c->copy_synced = 0;
    c->sets_due = 0;
    c->off_tape = 0;
    c->sub_credit = 0;
#if FC_FT
    c->pin[0] = c->pin[1] = NULL;
#endif
}

FC_INTERNAL_INLINE void
fc_ctx_fini(FcCtx *c)
{
    fc_memo_hide(c);   /* an error between showing and hiding */
    (void)fc_memo_return(c);   /* a borrowed table goes back (early exits) */
#if FC_MEMO_ADOPT
    if (c->adopt_dict != NULL) {
        fc_memo_adopt_release(c);
    }
#endif
    /* before anything is released: nothing may stay hidden from the GC */
    fc_retrack_all(c);
    /* every entry point ran fc_defer_end() already */
    FC_ASSERT(c->nops == 0);
    fc_defer_release(c);
    PyMem_Free(c->ops);
    while (c->nframes > 0) {
        fc_pop(c);
    }
    if (c->frames != c->small_frames) {
        fc_spare_give(c->native.spare, FC_SPARE_FRAMES, c->frames,
                      sizeof(FcFrame) * (size_t)c->capframes);
    }
    if (c->native.index != NULL) {
        c->st->test.memo_thin += fc_memo_caught_thinly(&c->native);
        c->st->test.memo_unindexed += c->native.n - c->native.nidx;
    }
    fc_memo_clear(&c->native);
    Py_CLEAR(c->memo);
    Py_CLEAR(c->memo_id);
    FC_FT_PIN2(c, NULL, NULL);
}

/* deepcopy(x, memo, _nil) as the stdlib defines it.  memo NULL = None.
   pc: the profiled call to count into (profile.c), NULL when profiling is
   off (then every use of it folds away).  new ref | NULL+exc */
static PyObject *
fc_deepcopy_run(FcState *st, PyObject *x, PyObject *memo, PyObject *nil, PyObject *share,
                FcProfCall *pc, FcTapeProbe *tape)
{
    if (tape != NULL) {
        tape->ok = 0;
        tape->containers = tape->hits = 0;
    }
    if (fc_sync_deep(st) < 0) {
        return NULL;
    }
#if FC_ATOMIC_FIRST
    {
        /* before the memo is made or read: a seeded entry is not asked,
           a caller's mapping not touched.  (Without a memo, a user's
           container in the set's place is asked by the walk's first step:
           once, as the stdlib asks it.) */
        int a = (memo != NULL && memo != Py_None)
                ? fc_atomic_first(st, x, fc_kind(Py_TYPE(x)))
                : (FK_BIT(fc_kind(Py_TYPE(x))) & FC_DEEP_ATOMIC & st->deep_ok) != 0;
        if (a != 0) {
            if (tape != NULL && a > 0) {
                tape->ok = 1;
            }
            return a > 0 ? Py_NewRef(x) : NULL;
        }
    }
#endif
    if (!FC_ATOMIC_FIRST && st->shown != NULL && memo != NULL && memo != Py_None
        && (FK_BIT(fc_kind(Py_TYPE(x))) & FC_DEEP_ATOMIC & st->deep_ok)) {
        /* an atomic x with the memo a hook was shown (pydantic's
           deepcopy(self.__pydantic_extra__, memo) of None): memo.get(id(x)),
           then x itself, stored nowhere.  The lender's table answers the
           lookup and nothing is added to it, so no context is needed */
        FcCtx *lender = fc_memo_borrow(st, memo);
        if (lender != NULL) {
            PyObject *v = fc_memo_get(&lender->native, x);
            return Py_NewRef(v != NULL && v != nil ? v : x);
        }
    }
#if FC_SMALL
    if ((memo == NULL || memo == Py_None) && share == NULL && pc == NULL && tape == NULL
        && (Py_TYPE(x) == &PyDict_Type || Py_TYPE(x) == &PyList_Type)) {
        /* a fresh memo, and x may be a small tree ("Small trees") */
        PyObject *y = fc_small_run(st, x);
        if (y != FC_SMALL_NO) {
            return y;
        }
    }
#endif
    Py_ssize_t memo_start = 0;
    FcCtx c;
    fc_ctx_init(&c, st);
    c.share = share;
#if FC_SUB_ROAD
    /* deep=/share= decide per object, the profiler and a tape count frames,
       and a caller's memo is read after the call */
    c.sub_credit = share == NULL && pc == NULL && tape == NULL
                   && (memo == NULL || memo == Py_None) ? FC_SUB_CREDIT : 0;
#endif
    PyObject *y = NULL;
    FcCtx *lender = NULL;
    int adopted = 0;
    if (memo != NULL && memo != Py_None) {
        if (st->shown != NULL && (lender = fc_memo_borrow(st, memo)) != NULL) {
            /* a hook's deepcopy(y, memo) with the memo it was shown: go on
               with its call's native table (memo.c, "Showing the memo").
               The patched trampoline passes copy's own _nil. */
            fc_memo_take(&c, lender);
            PyObject *v = fc_memo_get(&c.native, x);
            if (v != NULL && v != nil) {
                v = Py_NewRef(v);
                fc_ctx_fini(&c);
                return v;
            }
        }
#if FC_MEMO_ADOPT
        else if (share == NULL && pc == NULL && tape == NULL
                 && (adopted = fc_memo_adopt(&c, memo, nil != NULL ? nil : st->nil)) != 0) {
            /* a caller's small dict, taken as the native table's mirror
               (memo.c, "A caller's dict"): the root's lookup is the
               table's */
            PyObject *v = adopted > 0 ? fc_memo_get(&c.native, x) : NULL;
            if (adopted < 0 || v != NULL) {
                v = Py_XNewRef(v);
                fc_ctx_fini(&c);
                return v;
            }
        }
#endif
        else {
            c.memo = Py_NewRef(memo);
            c.mode = PyDict_CheckExact(memo) ? FC_MEMO_DICT : FC_MEMO_MAPPING;
            int r = fc_memo_lookup_py(&c, x, nil != NULL ? nil : st->nil, &y);
            if (r != 0) {
                fc_ctx_fini(&c);
                return r > 0 ? y : NULL;
            }
            if (pc != NULL) {
                memo_start = fc_prof_memo_len(&c);
            }
        }
    }
    else {
        /* the hottest case: an atomic with a fresh memo */
        int k = fc_kind(Py_TYPE(x));
        if (FK_BIT(k) & FC_DEEP_ATOMIC & st->deep_ok) {
            if (tape != NULL) {
                tape->ok = 1;
            }
            return Py_NewRef(x);
        }
    }
    if (fc_stack_check() < 0 || Py_EnterRecursiveCall(FC_RECURSION_WHERE)) {
        fc_ctx_fini(&c);
        return NULL;
    }
    /* with a caller's memo the lookup above was deepcopy()'s own */
    y = (c.mode == FC_MEMO_NATIVE && lender == NULL && !adopted) ? fc_walk_top(&c, x)
                                                                 : fc_walk_looked_up(&c, x);
    y = fc_defer_end(&c, y);
#if FC_MEMO_ADOPT
    if (adopted && fc_memo_adopt_end(&c) < 0) {
        Py_CLEAR(y);
    }
#endif
    if (pc != NULL && y != NULL && lender == NULL
        && (pc->depth == 1 || memo == NULL || memo == Py_None)) {
        /* a nested call on a memo it was given adds to that memo, which
           the call that owns it counts */
        Py_ssize_t n = fc_prof_memo_len(&c);
        pc->objects += n - memo_start;
        if (n > pc->memo_max) {
            pc->memo_max = n;
        }
    }
    if (fc_memo_return(&c) < 0) {
        Py_CLEAR(y);
    }
    if (tape != NULL && y != NULL) {
        /* no deeper than a tape goes (its frames never outgrew that) */
        tape->ok = !c.off_tape && c.mode == FC_MEMO_NATIVE && c.shows == 0
                   && c.capframes <= FC_TAPE_MAX_DEPTH;
        tape->containers = c.native.n;
        tape->hits = c.native.hits;
    }
    Py_LeaveRecursiveCall();
    fc_ctx_fini(&c);
    return y;
}

/* deepcopy() while profiling is on (profile.c).  new ref | NULL+exc */
FC_NOINLINE PyObject *
fc_deepcopy_profiled(FcState *st, PyObject *x, PyObject *memo, PyObject *nil,
                     PyObject *share, FcTapeProbe *tape)
{
    int top = fc_prof_begin();
    PyObject *y = fc_deepcopy_run(st, x, memo, nil, share, &fc_prof_tls, tape);
    return fc_prof_end(st, top, FC_PROF_DEEPCOPY, NULL, y);
}

FC_INTERNAL PyObject *
fc_deepcopy(FcState *st, PyObject *x, PyObject *memo, PyObject *nil, PyObject *share)
{
    if (FC_UNLIKELY(st->prof)) {
        return fc_deepcopy_profiled(st, x, memo, nil, share, NULL);
    }
    return fc_deepcopy_run(st, x, memo, nil, share, NULL, NULL);
}

FC_INTERNAL PyObject *
fc_deepcopy_tape(FcState *st, PyObject *x, PyObject *share, FcTapeProbe *tape)
{
    if (FC_UNLIKELY(st->prof)) {
        return fc_deepcopy_profiled(st, x, NULL, NULL, share, tape);
    }
    return fc_deepcopy_run(st, x, NULL, NULL, share, NULL, tape);
}
