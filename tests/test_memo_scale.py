"""Big copies and the memo's proven misses (src/memo.c, "Proven misses").

An object referenced only by the container the walker reads cannot be in the memo, so its
lookup is answered without probing the index and its entry is indexed only when something
probes the index later.  These tests build copies past the index's first size (thousands of
objects) whose singly-referenced objects are met again -- through a hook shown the memo, a hook's
own deepcopy(v, memo), a prefilled dict copy's second reference, a memo shown at the end -- and
compare everything with the stdlib.
"""
import copy
import functools
import os
import sys
import sysconfig
import textwrap

import pytest

import shape
from shape import Case, assert_equivalent, run_python

# builds where reference counts are exact and misses are proven (src/memo.c, FC_PROVEN_MISS)
_PROVEN_MISSES = (not sysconfig.get_config_var("Py_GIL_DISABLED")
                  and sys.version_info < (3, 14))


def _records(n):
    return [{"id": i, "tags": ["a", str(i)], "meta": {"pos": (i, [i]), "l": [i, [i]]}}
            for i in range(n)]


class Grab:
    """A hook that reaches into the already-copied part of the source and deep-copies an
    object nothing else references, with the memo it is shown -- through the implementation
    under test (fastcopy's nested call then works on the outer call's native table)."""

    def __init__(self, holder, key, log, impl=copy):
        # log.append (opaque to shape.children), so the comparison never walks the log
        self.holder, self.key, self.record, self.impl = holder, key, log.append, impl

    def __deepcopy__(self, memo):
        inner = self.holder[self.key]
        self.record(len(memo))
        return [self.impl.deepcopy(inner, memo), self.impl.deepcopy(self.holder, memo)]


def test_records_match_the_stdlib():
    def scenario(impl):
        src = _records(3000)
        return Case(src, lambda: impl.deepcopy(src))
    assert_equivalent(scenario)


@pytest.mark.parametrize("where", [0, 1500, 2999])
def test_hook_meets_a_singly_referenced_object_again(where):
    for nested in ("stdlib", "same"):
        def scenario(impl):
            src = _records(3000)
            log = []
            inner = copy if nested == "stdlib" else impl
            src.append(Grab(src[where]["meta"], "l", log, inner))
            src.append(Grab(src[where], "tags", log, inner))
            return Case(src, lambda: impl.deepcopy(src), log=log)
        assert_equivalent(scenario)

    def visible(impl):
        src = _records(3000)
        memo = {}
        src.append(Grab(src[where]["meta"], "l", [], impl))
        return Case(src, lambda: impl.deepcopy(src, memo), memo=memo)
    assert_equivalent(visible)


def test_shared_values_in_prefilled_dicts():
    def scenario(impl):
        shared = [1, [2]]
        src = []
        for i in range(2000):
            once = [i]
            src.append({"a": once, "b": once, "s": shared, "t": (once,), "own": [i, [i]]})
        return Case(src, lambda: impl.deepcopy(src))
    assert_equivalent(scenario)


class Peek:
    """A hook that records the memo it is shown: every entry, in order, keep-alive list too."""

    def __init__(self, log, src):
        # log.append, not log: a builtin method is opaque to shape.children, so the
        # comparison does not walk the (large) memo pictures as part of the source
        self.record, self.src = log.append, src

    def __deepcopy__(self, memo):
        self.record(shape.memo_picture(memo, source=self.src[0]))
        return self


def test_the_memo_seen_after_a_big_copy():
    """A hook placed last is shown every entry, in the stdlib's order, keep-alive list too."""
    def scenario(impl):
        log, holder = [], [None]
        src = _records(2500) + [Peek(log, holder)]
        holder[0] = src
        return Case(src, lambda: impl.deepcopy(src), log=log)
    assert_equivalent(scenario)


def _shared_rows(n, thin):
    # each row meets a shared list for the first time after two fresh containers (thin: the
    # catch-up passes index two entries at a time) or seven: a miss (it has a second
    # reference, the next row's), which catches up; then the one met in the row before: a
    # hit, which past 2^17 slots catches nothing up (memo.c, fc_memo_get_pending)
    pool = [[i] for i in range(n)]
    if thin:
        return [(pool[i], [i], pool[i - 1 if i else 0]) for i in range(n)]
    return [(pool[i], [[i], [i], [i]], {"d": [i]}, pool[i - 1 if i else 0]) for i in range(n)]


def _counted(scenario, counter):
    """How much one more fastcopy run of scenario moved the test counter
    _sysinfo()[counter], or None where misses are not proven or the core is not built."""
    fc = shape.fastcopy_module()
    if fc is None or not _PROVEN_MISSES:
        return None
    before = fc._fastcopy._sysinfo()[counter]
    scenario(fc).call()
    return fc._fastcopy._sysinfo()[counter] - before


def _thin_switches(scenario):
    """Calls that went back to proving misses from 2^17 (memo.c, FC_THIN_CATCH)."""
    return _counted(scenario, "memo_thin")


def _unindexed(scenario):
    """Entries the calls left pending, never indexed (memo.c, "Proven misses")."""
    return _counted(scenario, "memo_unindexed")


def _hub_graph(n):
    # the scale benchmark's graph: every node's edges lead to the first three nodes
    # ((7i + j) % i is j % i), so after them each node and its edge list are met through
    # their only reference
    from fastcopy import _scale
    return _scale.build_graph(n)


@pytest.mark.parametrize("hooks", [False, True], ids=["plain", "hooks"])
def test_hits_catch_nothing_up(hooks):
    """Past 2^17 slots a lookup that finds its key in the index needs none of the pending
    entries: every key is in the table once (memo.c, fc_memo_get_pending).  A graph whose
    nodes all point to three hubs looks them up three times a node; below 2^17 those hits
    catch up thinly (FC_THIN_CATCH), past it they index nothing.  With hooks, one midway
    deep-copies through the memo it is shown an edge list met through its only reference
    (pending: the miss in the index catches up and finds it), and one last is shown the
    whole memo.  Same results, sharing, memos and logs as the stdlib's."""
    n = 40000       # 80,000 entries: the index passes 2^17 slots at some 32K

    def scenario(impl):
        log, holder = [], [None]
        src = _hub_graph(n)
        if hooks:
            src.insert(n // 2, Grab(src[n // 2 - 1], "edges", log, impl))
            src.append(Peek(log, holder))
            holder[0] = src
        return Case(src, lambda: impl.deepcopy(src), log=log)
    assert_equivalent(scenario)
    left = _unindexed(scenario)
    # where a prefilled dict's values are proven (not on 3.10, whose dict frames cannot read
    # the copy's entry: there each edge list is looked up, misses and catches up)
    if left is not None and shape.fastcopy_module()._fastcopy._sysinfo()["dict_slots_ok"]:
        # every entry from some 32K on stays pending, but those the hook midway caught up
        if hooks:
            assert n - 1000 <= left < n + 1000
        else:
            assert left > 2 * n - 34000
        assert _thin_switches(scenario) == 1


def test_hook_frees_the_source_and_meets_pending_entries_again():
    """Past 2^17 slots the entries proved fresh stay pending while hits find the hubs
    (memo.c, fc_memo_get_pending).  A hook midway frees the source's uncopied tail (nodes and
    edge lists the walker has not reached, their memory reused by what it allocates next) and
    appends new nodes that give already-copied nodes and edge lists -- pending, met once --
    a second reference; the walker meets them again, each lookup misses the index, catches
    up and finds the copy.  Results, sharing with the source and the memo sizes the hook saw
    are the stdlib's.  In a child process."""
    code = "import sys; sys.path.insert(0, %r)\n" % os.path.dirname(os.path.abspath(__file__))
    code += textwrap.dedent("""
    import copy, fastcopy
    from fastcopy import _scale
    from shape import shape
    def build(log):
        src = _scale.build_graph(40000)
        class Hook:
            def __deepcopy__(self, memo):
                log.append(len(memo))
                del src[30001:]
                for i in range(5, 25000, 997):
                    src.append({"id": -i, "edges": src[i]["edges"], "again": src[i],
                                "fresh": [[i], {"k": [i]}]})
                return "hooked"
        src.insert(25000, Hook())
        return src
    out = []
    for impl in (copy, fastcopy):
        log = []
        src = build(log)
        r = impl.deepcopy(src)
        out.append((len(r), shape(r, src), log))
    assert out[0] == out[1], [o[0] for o in out] + [o[2] for o in out]
    print("ok")
    """)
    r = run_python(code, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), (r.returncode, r.stdout,
                                                                  r.stderr[-3000:])


def test_tables_past_the_big_block_size():
    """A memo whose entries (16 bytes each), index and keep-alive list outgrow 2 MiB gets
    them from pages of their own (memo.c, FC_BLOCK_BIG), grown by moving the pages: 150,000
    entries, a hook in the middle and one last that are shown the memo (its dict built from
    those blocks).  Same results, memos and logs as the stdlib's."""
    def scenario(impl):
        log, holder = [], [None]
        src = [[i] for i in range(75000)] + [Peek(log, holder)]
        src += [{"k": [i]} for i in range(37500)] + [Peek(log, holder)]
        holder[0] = src
        return Case(src, lambda: impl.deepcopy(src), log=log)
    assert_equivalent(scenario)


@pytest.mark.parametrize("far", [False, True], ids=["below-2^17", "past-2^17"])
@pytest.mark.parametrize("thin", [True, False], ids=["thin", "thick"])
def test_catching_up_a_few_entries_at_a_time(far, thin):
    """Misses are proven from an index of 2^14 slots; a copy whose catch-up passes index a
    few entries each stops proving them until the index is past 2^17 (memo.c,
    FC_THIN_CATCH), with entries pending at the switch.  A hook midway copies, through the
    memo it is shown, an object first met through its only reference; another, last, is
    shown the whole memo.  Both see the stdlib's, and the sharing is the stdlib's."""
    # past 2^17: over 2^16 entries (the index is kept at most half full), at 2 entries
    # a row (thin) or 7 (thick), plus the row's shared list
    n = (40000 if thin else 12000) if far else 3000

    def scenario(impl):
        log, holder = [], [None]
        src = _shared_rows(n, thin)
        mid = len(src) // 2
        src.insert(mid, Grab(src[mid - 1], 1, log, impl))
        src.append(Peek(log, holder))
        holder[0] = src
        return Case(src, lambda: impl.deepcopy(src), log=log)
    assert_equivalent(scenario)
    # the shapes do what their names say: only the thin rows went back to 2^17
    assert _thin_switches(scenario) in (None, 1 if thin else 0)


def test_values_with_three_references_and_tuple_keys():
    """While misses are proven, a dict frame works out how many references it vouches for
    only for a value or key it looks up, and not for a value referenced 3 times or more,
    whose count proves nothing: shared lists, a shared flat tuple (its own copy) and a
    shared tuple that is not flat are found again as the stdlib finds them; a tuple key
    beside an atomic value, and one beside a fresh list, still get a count of their own.
    Copied alone, and while an earlier copy lives (every count one higher)."""
    def rows(n):
        shared, flat, deep = [0], (1, "f"), ([2],)
        # one shared lookup a row among eight new lists: the copy catches up thickly and
        # proves misses from 2^14 to the end
        out = []
        for i in range(n):
            d = {"s": shared, "f": flat, "d": deep if i % 50 == 0 else None, (i, "k"): i}
            d.update(("l%d" % j, [i]) for j in range(8))
            if i % 50 == 0:
                d[(i, ("n",))] = [i]
            out.append(d)
        return out

    def scenario(impl):
        src = rows(3000)
        return Case(src, lambda: impl.deepcopy(src))
    assert_equivalent(scenario)

    def kept(impl):
        src = rows(3000)
        earlier = impl.deepcopy(src)
        return Case(src, lambda: [impl.deepcopy(src), earlier][0])
    assert_equivalent(kept)
    # the copy proved misses from 2^14 to the end (it did not catch up thinly)
    assert _thin_switches(scenario) in (None, 0)


def _flat_tuple_records(n):
    # past the size where misses are proven whatever the copy (some 64K entries: 7 a
    # record); "s" is a tuple
    # that is not flat, met twice
    out = []
    for i in range(n):
        st = (i, [i])
        out.append({"pos": (i, i + 1), "l": [(i,), ((i, "a"), ())], "t": ((i, 0.5), [i]),
                    "s": st, "s2": [st]})
    return out


class Plant:
    """A hook that stores its own value for a tuple met later in the source: the stdlib
    returns that value for it from then on, however flat the tuple."""

    def __init__(self, target):
        self.target = target

    def __deepcopy__(self, memo):
        memo[id(self.target)] = ["planted"]
        return self


def test_flat_tuples_shared_with_earlier_copies():
    """A tuple of atomic items is its own deep copy, so an earlier copy of the source holds
    it too: its reference count proves nothing.  It is answered without the memo (which
    cannot hold it); a tuple that is not flat, met twice, is still one copy; a caller's memo
    and a hook's own entries are the stdlib's."""
    def scenario(impl):
        src = _flat_tuple_records(12000)
        earlier = impl.deepcopy(src)
        assert earlier[7]["pos"] is src[7]["pos"]
        return Case(src, lambda: [impl.deepcopy(src), earlier][0])
    assert_equivalent(scenario)

    def visible(impl):
        src = _flat_tuple_records(3000)
        earlier = impl.deepcopy(src)
        memo = {}
        return Case(src, lambda: [impl.deepcopy(src, memo), earlier][0], memo=memo)
    assert_equivalent(visible)

    def planted(impl):
        src = _flat_tuple_records(3000)
        a, b = src[2000]["pos"], src[2500]["l"][1][0]
        src[1500:1500] = [Plant(a), Plant(b)]
        return Case(src, lambda: impl.deepcopy(src))
    assert_equivalent(planted)
    src = planted(copy).source
    for impl in (copy, shape.fastcopy_module()):
        if impl is not None:
            y = impl.deepcopy(src)
            assert y[2002]["pos"] == ["planted"] and y[2502]["l"][1][0] == ["planted"]
            assert y[2003]["pos"] is src[2003]["pos"]
            assert y[2900]["s"] is y[2900]["s2"][0] is not src[2900]["s"]


def test_reduce_values_reach_inner_objects():
    """C reduce functions (functools.partial's) hand the walker a second reference to an
    object first met through its only container."""
    def scenario(impl):
        src = []
        for i in range(1500):
            inner = [i, {"k": [i]}]
            p = functools.partial(print, inner)
            src.append((p.args, p, {"inner": inner}))
        return Case(src, lambda: impl.deepcopy(src))
    assert_equivalent(scenario)


_FINALIZER_REREFERENCES = r"""
import copy, gc, random, sys
import fastcopy

N = 90000          # records: past the index size where misses are proven (64K entries)


class Fin:
    # cyclic garbage whose finalizer runs inside an allocation of the copy (3.10/3.11
    # collect there): it gives objects the walker may already have copied through
    # their only reference a second one, in the source's tail, which is copied last
    live = True

    def __init__(self, src, tail, rng):
        self.me, self.src, self.tail, self.rng = self, src, tail, rng

    def __del__(self):
        if not Fin.live:
            return
        for j in self.rng.sample(range(N), 50):
            rec = self.src[j]
            key = "l" if type(rec) is dict else 1
            if rec[key] is None:
                continue
            self.tail.append((j, rec[key]))
            if j % 5 == 0:
                # a third reference: a count that proves nothing (the dict frame does
                # not work out its own for it)
                self.tail.append((j, rec[key]))
            if j % 3 == 0 and type(rec) is not tuple:
                rec[key] = None          # moved: the tail holds its only reference now
        Fin(self.src, self.tail, self.rng)       # the next one, for a later collection


def run(impl, seed):
    rng = random.Random(seed)
    # tuples too: a tuple's check after its items reads the entries they added (the
    # list, proven absent, pending) -- the tail's second reference must still find it
    src = [{"id": i, "l": [i]} if i % 2 else [i, [i]] if i % 4 else (i, [i]) for i in range(N)]
    tail = []
    src.append(tail)
    Fin.live = True
    Fin(src, tail, rng)
    gc.set_threshold(500, 1, 1)
    try:
        y = impl.deepcopy(src)
    finally:
        gc.set_threshold(700, 10, 10)
        Fin.live = False
    gc.collect()
    ytail = y[-1]
    assert len(ytail) <= len(tail)
    for (j, obj), (cj, cobj) in zip(tail, ytail):
        assert cj == j
        rec = y[j]
        first = rec["l"] if type(rec) is dict else rec[1]
        # met twice in the source as the walk read it: one copy, as the memo gives
        # (None: moved before the walk reached its record)
        assert cobj is first or (first is None and j % 3 == 0), (impl.__name__, j)
        assert cobj is not obj and cobj == obj
    return len(ytail)


fired = {}
for impl in (copy, fastcopy):
    fired[impl.__name__] = sum(run(impl, seed) for seed in range(3))
print("FIRED", fired)
"""


@pytest.mark.thread_unsafe(reason="sets the collector's thresholds")
def test_finalizer_gives_a_proven_fresh_object_a_second_reference():
    # On 3.10/3.11 a collection (and its finalizers) may run inside any allocation of
    # the copy.  An object met through its only reference is proven absent from the
    # memo; a finalizer that then references it again from a part of the source still
    # to be copied must still get the one copy, as the stdlib's memo gives it.
    from shape import run_python
    p = run_python(_FINALIZER_REREFERENCES, timeout=600)
    assert p.returncode == 0, "rc %d\n%s\n%s" % (p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    assert "FIRED" in p.stdout
    if sys.version_info < (3, 12):
        # the finalizers did run inside the copies (their tails were copied)
        assert "'fastcopy': 0" not in p.stdout, p.stdout


class Reach:
    """A hook inside a tuple that deep-copies, with the memo it is shown, the tuple it
    sits in (read from the list that holds it), once; met again inside that copy, it
    copies to a marker."""

    def __init__(self, holder, key, impl):
        self.holder, self.key, self.impl, self.done = holder, key, impl, False

    def __deepcopy__(self, memo):
        if self.done:
            return "inner"
        self.done = True
        return [self.impl.deepcopy(self.holder[self.key], memo)]


def test_tuples_checked_after_their_items_while_misses_are_proven():
    """A tuple's check after its items (try: return memo[id(x)]) reads the few entries
    its items added instead of looking x up, while misses are proven: a copy of the
    tuple made meanwhile -- by a hook inside it, with the memo it was shown, or by the
    walker through a list that holds the tuple -- is found there, as the stdlib finds
    it; otherwise the tuple's entry joins the pending ones.  Rows of thick tuples (the
    copy proves misses from 2^14 to the end), some with such a hook or cycle, a tuple
    with many items between, and a hook last that is shown the whole memo."""
    def scenario(impl):
        log, holder = [], [None]
        pool = [[k] for k in range(300)]
        src = []
        for i in range(6000):
            # lists only: a dict's value is looked up on 3.10, which indexes the row's
            # entries before the tuple's check (nothing pending: a plain lookup)
            row = (pool[i * 7 % len(pool)], [i], [i], [[i]])
            if i % 500 == 250:
                row = row + (Reach(src, i, impl),)
            elif i % 500 == 400:
                back = []
                row = (back, [i])
                back.append(row)          # the tuple, reached again through its item
            elif i % 500 == 450:
                row = tuple([j] for j in range(40)) + (pool[0],)
            src.append(row)
        src.append(Peek(log, holder))
        holder[0] = src
        return Case(src, lambda: impl.deepcopy(src), log=log)
    assert_equivalent(scenario)
    # the rows keep entries pending: the copy proves misses to the end
    assert _thin_switches(scenario) in (None, 0)
