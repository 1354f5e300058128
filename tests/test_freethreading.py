"""Threads copying what other threads mutate (docs/free-threading.md).

On a free-threaded build (3.13t, ``PYTHON_GIL=0``) these threads really run at once; on the
GIL builds a tiny switch interval interleaves them as finely as the GIL allows.  Every test
holds fastcopy to what the stdlib can give on the same build for a container that changes
under it: its own exception (``RuntimeError: dictionary changed size during iteration`` or
``... keys changed ...``) or a copy made of values the source really held -- never a crash,
a value that was never there, or a write through one cowdict handle seen through another.

Each test runs for a fixed time (``FASTCOPY_FT_SECONDS``, 0.6 s by default), not a fixed
number of rounds, so the suite costs the same on every build.
"""
import copy
import os
import sys
import sysconfig
import threading
import time
import unittest

import fastcopy

try:
    import pytest
    thread_unsafe = pytest.mark.thread_unsafe
except ImportError:        # plain unittest: the marker means nothing there
    def thread_unsafe(reason=None):
        return lambda f: f

SECONDS = float(os.environ.get("FASTCOPY_FT_SECONDS", "0.6"))
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
DICT_ERRORS = ("dictionary changed size during iteration",
               "dictionary keys changed during iteration")


def _run(copiers, mutators, seconds=SECONDS):
    """Run copier and mutator callables in threads until the time is up; each copier is
    called repeatedly, each mutator gets (i, stop_event).  Returns the errors raised."""
    stop = threading.Event()
    errors = []
    barrier = threading.Barrier(len(copiers) + len(mutators))

    def copier(fn):
        try:
            barrier.wait()
            while not stop.is_set():
                fn()
        except BaseException as e:  # noqa: BLE001 - reported to the main thread
            errors.append(e)
            stop.set()

    def mutator(fn, i):
        try:
            barrier.wait()
            fn(i, stop)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
            stop.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=copier, args=(f,)) for f in copiers]
        threads += [threading.Thread(target=mutator, args=(f, i)) for i, f in enumerate(mutators)]
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join(60)
        alive = [t for t in threads if t.is_alive()]
    finally:
        sys.setswitchinterval(old)
    if alive:
        errors.append(AssertionError("%d threads still running" % len(alive)))
    return errors


class Item:
    """A non-atomic value, so that copies go through the walker's frames and the memo."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return type(other) is Item and other.v == self.v

    def __hash__(self):
        return hash(self.v)


class Node:
    pass


POOL = [i for i in range(32)] + ["s%d" % i for i in range(16)] \
    + [Item(i) for i in range(16)] + [[i, [i]] for i in range(8)] + [(i, [i]) for i in range(8)]


def _allowed(v):
    """Is v a (deep or shallow) copy of a value in POOL?"""
    return any(type(v) is type(p) and v == p for p in POOL)


@unittest.skipUnless(FREE_THREADED, "a free-threaded build")
class GilStaysOff(unittest.TestCase):

    def test_import_keeps_the_gil_off(self):
        # fastcopy declares Py_MOD_GIL_NOT_USED: importing it (and its CUDA module) does not
        # turn the GIL back on with a RuntimeWarning
        import fastcopy._fastcopy  # noqa: F401
        try:
            import fastcopy._cuda  # noqa: F401
        except ImportError:
            pass
        if os.environ.get("PYTHON_GIL") != "1":
            self.assertFalse(sys._is_gil_enabled())


class MutatedWhileCopied(unittest.TestCase):

    def _copy_checked(self, src, fn, check):
        out = []

        def copier():
            try:
                y = fn(src)
            except RuntimeError as e:
                if str(e) not in DICT_ERRORS:
                    raise
                out.append(None)
                return
            check(y)
            out.append(y)
        return copier, out

    def test_list_appended_popped_replaced(self):
        src = list(POOL)

        def check(y):
            self.assertIs(type(y), list)
            for v in y:
                self.assertTrue(_allowed(v), v)

        def mutate(i, stop):
            n = 0
            while not stop.is_set():
                n += 1
                src.append(POOL[n % len(POOL)])
                if len(src) > 80:
                    del src[: len(src) // 2]
                try:
                    src[n % max(1, len(src))] = POOL[(n * 7) % len(POOL)]
                except IndexError:
                    pass   # the other mutator shrank it meanwhile
                if n % 50 == 0:
                    src.clear()
                    src.extend(POOL)
        copiers = []
        for fn in (fastcopy.deepcopy, fastcopy.copy, copy.deepcopy):
            c, _ = self._copy_checked(src, fn, check)
            copiers.append(c)
        errors = _run(copiers, [mutate, mutate])
        self.assertEqual(errors, [])

    def test_dict_written_and_deleted(self):
        src = {i: POOL[i % len(POOL)] for i in range(40)}

        def check(y):
            self.assertIs(type(y), dict)
            for k, v in y.items():
                self.assertIsInstance(k, int)
                self.assertTrue(_allowed(v), v)

        def mutate(i, stop):
            n = 0
            while not stop.is_set():
                n += 1
                k = (n * 13 + i) % 60
                if n % 3:
                    src[k] = POOL[n % len(POOL)]
                else:
                    src.pop(k, None)
                if n % 200 == 0:
                    src.clear()
                    src.update({j: POOL[j] for j in range(40)})
        copiers = []
        for fn in (fastcopy.deepcopy, fastcopy.copy, copy.deepcopy):
            c, _ = self._copy_checked(src, fn, check)
            copiers.append(c)
        errors = _run(copiers, [mutate, mutate])
        self.assertEqual(errors, [])

    def test_nested_containers_rebuilt(self):
        # the inner lists and dicts are replaced and mutated while copies walk into them
        src = {"a": [list(POOL[:8]) for _ in range(4)], "b": {i: [i] for i in range(8)}}

        def check(y):
            self.assertEqual(set(y), {"a", "b"})
            for lst in y["a"]:
                self.assertIs(type(lst), list)
                for v in lst:
                    self.assertTrue(_allowed(v), v)

        def mutate(i, stop):
            n = 0
            while not stop.is_set():
                n += 1
                a = src["a"]
                a[n % len(a)] = list(POOL[n % 16: n % 16 + 8])
                a[(n + 1) % len(a)].append(POOL[n % len(POOL)])
                if len(a[(n + 1) % len(a)]) > 30:
                    a[(n + 1) % len(a)] = []
                src["b"][n % 12] = [n]
                src["b"].pop((n + 5) % 12, None)
        copiers = []
        for fn in (fastcopy.deepcopy, fastcopy.deepcopy, copy.deepcopy):
            c, _ = self._copy_checked(src, fn, check)
            copiers.append(c)
        errors = _run(copiers, [mutate])
        self.assertEqual(errors, [])

    def test_objects_attributes_changed(self):
        objs = [Node() for _ in range(6)]
        for i, o in enumerate(objs):
            o.x = i
            o.items = [Item(i)]
            o.peer = objs[(i + 1) % len(objs)]

        def check(y):
            self.assertEqual(len(y), len(objs))
            if y[0] is objs[0]:
                # copy.copy: the same (live) objects
                self.assertEqual([id(o) for o in y], [id(o) for o in objs])
                return
            for o in y:
                self.assertIs(type(o), Node)
                for k, v in vars(o).items():
                    if k == "peer":
                        self.assertIs(type(v), Node)
                    elif k == "items":
                        self.assertIs(type(v), list)
                    else:
                        self.assertTrue(_allowed(v), (k, v))

        def mutate(i, stop):
            n = 0
            while not stop.is_set():
                n += 1
                o = objs[n % len(objs)]
                setattr(o, "a%d" % (n % 9), POOL[n % len(POOL)])
                if n % 4 == 0:
                    o.__dict__.pop("a%d" % ((n + 3) % 9), None)
                o.items.append(Item(n % 16))
                if len(o.items) > 20:
                    o.items = [Item(n % 16)]
        copiers = []
        for fn in (fastcopy.deepcopy, fastcopy.copy, copy.deepcopy):
            c, _ = self._copy_checked(objs, fn, check)
            copiers.append(c)
        errors = _run(copiers, [mutate, mutate])
        self.assertEqual(errors, [])

    def test_cowdicts_copied_and_written(self):
        base = fastcopy.cowdict({i: POOL[i % len(POOL)] for i in range(32)})
        shared = [base]
        lock = threading.Lock()

        def worker(i, stop):
            # each thread's own copies must read back exactly its own writes, whatever the
            # other threads do to the handles they share the table with
            n = 0
            while not stop.is_set():
                n += 1
                with lock:
                    src = shared[n % len(shared)]
                mine = src.copy() if n % 2 else fastcopy.deepcopy(src)
                before = dict(mine)
                key = ("t", i, n)
                mine[key] = n
                mine.pop(n % 32, None)
                expect = dict(before)
                expect[key] = n
                expect.pop(n % 32, None)
                self.assertEqual(dict(mine), expect)
                self.assertNotIn(key, src)
                self.assertEqual(len(mine), len(expect))
                list(mine.items())
                with lock:
                    if len(shared) < 8:
                        shared.append(mine)
                    else:
                        shared[n % 8] = mine
                # a handle written by everyone at once: no crash, a consistent dict after
                base[n % 40] = POOL[n % len(POOL)]
                base.pop((n + 3) % 40, None)
                copy.deepcopy(base)
                fastcopy.copy(base)

        errors = _run([], [worker] * 4)
        self.assertEqual(errors, [])
        for k, v in base.items():
            self.assertTrue(_allowed(v), (k, v))

    def test_cowdict_iterated_while_written(self):
        d = fastcopy.cowdict({i: i for i in range(50)})

        def reader():
            try:
                for k in d:
                    self.assertIsInstance(k, int)
                list(d.items())
                d.keys() & {1, 2}
            except RuntimeError as e:
                if "changed size" not in str(e) and "keys changed" not in str(e):
                    raise

        def writer(i, stop):
            n = 0
            while not stop.is_set():
                n += 1
                d[n % 70] = n
                d.pop((n * 3) % 70, None)
                d.copy()

        errors = _run([reader, reader], [writer, writer])
        self.assertEqual(errors, [])


class PlansWhileCopying(unittest.TestCase):

    def test_plans_recomputed_and_evicted(self):
        # instances of many classes (with and without __slots__) copied while another thread
        # changes those classes (a new version tag: the plan is made again) and makes new
        # ones (other entries of the plan cache are evicted)
        classes = []
        for i in range(40):
            if i % 2:
                classes.append(type("S%d" % i, (), {"__slots__": ("a", "b")}))
            else:
                classes.append(type("D%d" % i, (), {}))
        objs = []
        for i, cls in enumerate(classes):
            o = cls()
            o.a = [i]
            o.b = (i, "x")
            objs.append(o)

        def copier():
            for fn in (fastcopy.deepcopy, fastcopy.copy):
                y = fn(objs)
                for o, c in zip(objs, y):
                    self.assertIs(type(c), type(o))
                    self.assertEqual(c.a, o.a)
                    self.assertEqual(c.b, o.b)
                    if fn is fastcopy.deepcopy:
                        self.assertIsNot(c.a, o.a)

        def churn(i, stop):
            n = 0
            keep = []
            while not stop.is_set():
                n += 1
                classes[n % len(classes)].marker = n      # a new version tag
                k = type("T%d" % n, (), {"__slots__": ("a",)} if n % 2 else {})
                t = k()
                t.a = [n]
                self.assertEqual(fastcopy.deepcopy(t).a, [n])
                keep.append(k)
                if len(keep) > 100:
                    keep = keep[50:]
        errors = _run([copier, copier], [churn])
        self.assertEqual(errors, [])


@thread_unsafe(reason="global state: configure() settings, the profiler, copy's tables; each "
                      "test runs its own threads and checks the settings it restores")
class SettingsWhileCopying(unittest.TestCase):

    def test_configure_and_trim_during_copies(self):
        tree = {"a": [Item(i) for i in range(20)], "b": {i: [i, (i,)] for i in range(20)}}
        ref = copy.deepcopy(tree)
        start = fastcopy.configure()

        def copier():
            self.assertEqual(fastcopy.deepcopy(tree), ref)

        def tweak(i, stop):
            n = 0
            while not stop.is_set():
                n += 1
                fastcopy.configure(numpy_pool=bool(n % 2), torch_defer=bool(n % 3),
                                   numpy_parallel_min_bytes=(1 << 20) * (1 + n % 8))
                fastcopy.trim()
                fastcopy.backends()
        try:
            errors = _run([copier, copier], [tweak])
        finally:
            fastcopy.configure(**start)
        self.assertEqual(errors, [])
        self.assertEqual(fastcopy.configure(), start)

    def test_profiling_started_and_stopped_during_copies(self):
        # fastcopy.profile() and warn_slow switched on and off while other threads copy:
        # the recorder hook is read by copies without a lock (profile.c), never freed under them
        tree = {"a": [Item(i) for i in range(20)], "b": {i: [i, (i,)] for i in range(20)}}
        ref = copy.deepcopy(tree)
        start = fastcopy.configure()

        def copier():
            self.assertEqual(fastcopy.deepcopy(tree), ref)
            self.assertEqual(fastcopy.copy(tree), tree)

        def toggle(i, stop):
            n = 0
            while not stop.is_set():
                n += 1
                # a threshold no copy reaches: the warn path is armed, nothing is printed
                fastcopy.configure(warn_slow=1e3 if n % 2 else None)
                with fastcopy.profile(patch=False) as prof:
                    fastcopy.deepcopy(tree)
                prof.report()
        try:
            errors = _run([copier, copier], [toggle])
        finally:
            fastcopy.configure(**start)
        self.assertEqual(errors, [])

    def test_stdlib_tables_changed_during_copies(self):
        # copy's and copyreg's tables edited while other threads copy: every copy follows the
        # tables as they were at some moment (the watch and refresh are thread-safe)
        class Special:
            pass

        def special_copy(x, memo):
            return "special"

        tree = [Item(1), Special(), {"k": Special()}]

        def copier():
            y = fastcopy.deepcopy(tree)
            self.assertIn(y[1] if isinstance(y[1], str) else type(y[1]), ("special", Special))

        def flip(i, stop):
            n = 0
            while not stop.is_set():
                n += 1
                if n % 2:
                    copy._deepcopy_dispatch[Special] = special_copy
                else:
                    copy._deepcopy_dispatch.pop(Special, None)
        try:
            errors = _run([copier, copier], [flip])
        finally:
            copy._deepcopy_dispatch.pop(Special, None)
        self.assertEqual(errors, [])
        self.assertIsNot(type(fastcopy.deepcopy(Special())), str)


class SharedAtoms(unittest.TestCase):
    """Records that share one non-immortal atom (docs/free-threading.md, "Shared atoms"): a
    run of the same object in a list or among a dict's values is counted with fewer writes to
    its line (the reference read under the source's lock handed to the copy, a pin kept for
    the next entry) -- every count must still balance, and a source rewritten meanwhile must
    never leave the copy holding an object it has no reference to."""

    def test_counts_balance(self):
        a = float(len(POOL)) + 0.5          # made here: not immortal, owned by this thread
        b = [a]

        def make():
            return [[a] * 40 + [1, a, "s", a, b, a],
                    {i: a for i in range(30)},
                    {"k%d" % i: (a if i % 3 else b) for i in range(20)},
                    Item(a), (a, a, [a, a])]
        before = sys.getrefcount(a)
        srcs = [make() for _ in range(4)]
        held = sys.getrefcount(a)
        refs = [copy.deepcopy(s) for s in srcs]
        keep = []

        def copier_for(i):
            def copier():
                y = fastcopy.deepcopy(srcs[i])
                self.assertEqual(y, refs[i])
                self.assertIs(y[0][0], a)
                self.assertIs(y[1][29], a)
                if len(keep) < 200:
                    keep.append(y)
            return copier
        errors = _run([copier_for(i) for i in range(4)], [])
        self.assertEqual(errors, [])
        del keep[:]
        del refs[:]
        self.assertEqual(sys.getrefcount(a), held)
        del srcs[:]
        self.assertEqual(sys.getrefcount(a), before)

    def test_runs_rewritten_while_copied(self):
        # the values a copy is reading are replaced by fresh objects, so one that lost its last
        # reference in the source lives on only through what the copier holds
        src_list = [float(i) + 0.5 for i in range(8)] * 6
        src_dict = {i: src_list[0] for i in range(48)}

        def check(y):
            for v in (y if isinstance(y, list) else y.values()):
                self.assertIs(type(v), float)
                self.assertGreater(v, 0.0)

        def copier_list():
            check(fastcopy.deepcopy(src_list))

        def copier_dict():
            try:
                check(fastcopy.deepcopy(src_dict))
            except RuntimeError as e:
                if str(e) not in DICT_ERRORS:
                    raise

        def mutate(i, stop):
            n = 0
            while not stop.is_set():
                n += 1
                v = float(n % 97) + 0.5          # a new object each time
                for j in range(n % 5, len(src_list), 5):
                    src_list[j] = v
                for j in range(n % 7, 48, 7):
                    src_dict[j] = v
        errors = _run([copier_list, copier_dict, copier_list], [mutate])
        self.assertEqual(errors, [])


class SharedAtomsUserCode(unittest.TestCase):
    """The pins that stand in for a second count of a repeated value (FC_FT_REPIN2) must keep it
    alive while a key's __hash__/__eq__ -- user code in the middle of the copy -- rewrites the
    source so that nothing else holds the value; each case in a child process, against the
    stdlib on the same data, on every build."""

    CODE = r"""
import copy, sys, fastcopy

SRC = {}      # the dict being copied: a global, so that the keys' copies reach it too

class Key:
    armed = False
    def __init__(self, name):
        self.name = name
    def __hash__(self):
        if Key.armed and self.name == "k3":
            Key.armed = False
            # the repeated value's last references go: every entry gets a fresh one
            for k in list(SRC):
                SRC[k] = float(len(SRC)) + 0.25 + (k.name == "k9")
        return hash(self.name)
    def __eq__(self, other):
        return isinstance(other, Key) and other.name == self.name
    def __repr__(self):
        return self.name

def make():
    shared = float(7) + 0.5                  # one object, only the dict holds it
    SRC.clear()
    for i in range(12):
        k = Key("k%d" % i)
        SRC[k] = shared if k.name != "k5" else [shared]
    return SRC

def flat(d):
    return sorted((k.name, repr(v)) for k, v in d.items())

for fn in (copy.deepcopy, fastcopy.deepcopy):
    src = make()
    Key.armed = True
    y = fn(src)
    assert not Key.armed and src[Key("k0")] != 7.5      # the rewrite happened mid-copy
    print(fn.__module__, flat(y))
    vals = [v for v in y.values() if isinstance(v, float)]
    assert all(type(v) is float and v > 0 for v in vals), vals
print("ok")
"""

    def test_key_hash_frees_the_repeated_value(self):
        from shape import run_python
        r = run_python(self.CODE)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[-1], "ok")
        std = [ln.split(" ", 1)[1] for ln in lines if ln.startswith("copy ")]
        fc = [ln.split(" ", 1)[1] for ln in lines if ln.startswith("fastcopy")]
        self.assertEqual(fc, std)


class OwnStructuresInParallel(unittest.TestCase):
    """What the scaling benchmark does (benchmarks/bench_threads.py): every thread copies its
    own structure; each result must equal the stdlib's copy."""

    def test_each_thread_its_own(self):
        def make(i):
            return {"id": i, "rows": [{"x": j, "o": Item(j), "t": (j, [j])} for j in range(30)]}
        mine = threading.local()

        def copier():
            if not hasattr(mine, "src"):
                mine.src = make(threading.get_ident() % 1000)
                mine.ref = copy.deepcopy(mine.src)
            y = fastcopy.deepcopy(mine.src)
            self.assertEqual(y, mine.ref)
            self.assertIsNot(y["rows"][0]["o"], mine.src["rows"][0]["o"])
        errors = _run([copier] * 4, [])
        self.assertEqual(errors, [])


if __name__ == "__main__":
    unittest.main()
