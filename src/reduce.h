/*
 * reduce.h: the reduce protocol pieces copy() and deepcopy() share
 * (reduce.c).  Every function here can run user code (reductors,
 * __reduce_ex__, __setstate__, setattr, an iterator's __next__).
 */
#ifndef FASTCOPY_REDUCE_H
#define FASTCOPY_REDUCE_H

#include "fastcopy.h"

/* The reduce value of x, as copy()/deepcopy() obtain it:
       reductor = dispatch_table.get(cls)   (deep: truthiness, copy: is not None)
       else x.__reduce_ex__(4), else x.__reduce__(), else Error.
   gflags: FcPlan.gflags, lookups known to find nothing.
   new ref | NULL+exc */
FC_INTERNAL PyObject *fc_reduce(FcState *st, PyObject *x, int deep, int gflags);
/* Is rv a reduce value taken apart natively (a tuple of 2 to 5 items whose
   args are a tuple)?  Others go to fc_reconstruct_py.  1 | 0 */
FC_INTERNAL_INLINE int fc_rv_native(PyObject *rv);
/* Item i of a native reduce value, None past its end.  borrowed */
FC_INTERNAL_INLINE PyObject *fc_rv_item(PyObject *rv, Py_ssize_t i);
/* The stdlib's own copy._reconstruct(x, memo, *rv, deepcopy=ours).
   new ref | NULL+exc */
FC_INTERNAL PyObject *fc_reconstruct_py(FcState *st, PyObject *x, PyObject *memo, PyObject *rv);
/* func(*args) for a reduce value (copyreg.__newobj__ called directly while
   it is the original).  new ref | NULL+exc */
FC_INTERNAL PyObject *fc_call_reduce_func(FcState *st, PyObject *func, PyObject *args);
/* fc_apply_state's flags: FC_STATE_NO_SETSTATE, the caller proved y has no
   __setstate__; FC_STATE_FRESH, y was made by object.__new__ and no user
   code has seen it since (deepcopy with the memo native throughout). */
enum { FC_STATE_NO_SETSTATE = 1, FC_STATE_FRESH = 2 };
/* Whether FC_STATE_FRESH is used (reduce.c, fc_store_inline_attrs): 3.13,
   whose dict and attribute code was read for the behaviour it matches;
   other versions take the dict road (3.11 and 3.12 keep other key objects:
   the share-mutating fuzz showed it). */
#define FC_INLINE_ATTRS FC_INLINE_ATTRS_ORDER
/* _reconstruct's state step for y and a (copied) state.  0 | -1+exc */
FC_INTERNAL int fc_apply_state(FcState *st, PyObject *y, PyObject *state, int flags);
/* for key, value in pairs: set(y, key, value), with the interpreter's
   unpacking errors.  0 | -1+exc */
FC_INTERNAL int fc_set_pairs(PyObject *y, PyObject *pairs,
                             int (*set)(PyObject *, PyObject *, PyObject *));
/* `a, b = pair` with the interpreter's messages (*a, *b new refs).
   0 | -1+exc */
FC_INTERNAL int fc_unpack2(PyObject *pair, PyObject **a, PyObject **b);
/* y.append(item), honouring overrides on list subclasses.  0 | -1+exc */
FC_INTERNAL int fc_append(FcState *st, PyObject *y, PyObject *item);
/* The state object.__reduce_ex__(4) gives a plain instance (its __dict__,
   None when empty, paired with its set slots).  names: slot names held by
   the caller (NULL: none), never a plan entry.  *state new ref.
   1 | 0 when x shadows a hook in its own __dict__ | -1+exc */
FC_INTERNAL int fc_plain_state(FcState *st, PyObject *x, PyObject *names,
                               PyObject **state, int deep);

#endif /* FASTCOPY_REDUCE_H */
