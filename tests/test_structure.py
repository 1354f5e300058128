"""The C core's structure holds what docs/internals.md and docs/backends.md promise: settings come
from one table (stub, docstring, docs and configure() agree with it), every buffer backend is in
the registry and the unity build, and backends() tells the truth about what a copy would do."""
import ast
import os
import re
import unittest

import fastcopy
from fastcopy import _fastcopy

from shape import run_python

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
HAVE_SRC = os.path.isfile(os.path.join(SRC, "_fastcopy.c"))
HAVE_DOCS = os.path.isfile(os.path.join(ROOT, "docs", "api.md"))
STUB = os.path.join(os.path.dirname(os.path.abspath(fastcopy.__file__)), "__init__.pyi")


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


class SettingsTable(unittest.TestCase):
    def setUp(self):
        self.rows = _fastcopy._settings()
        self.names = [r[0] for r in self.rows]

    def test_rows_are_well_formed(self):
        self.assertEqual(len(self.names), len(set(self.names)))
        for name, owner, kind, default, doc in self.rows:
            self.assertIn(kind, ("bool", "int", "seconds"))
            self.assertIsInstance(default, {"bool": bool, "int": int, "seconds": (float, type(None))}[kind])
            self.assertTrue(doc.strip(), name)
            self.assertIn(owner, ("core", "numpy", "torch", "cuda"))

    def test_configure_returns_every_row_in_order(self):
        self.assertEqual(list(fastcopy.configure()), self.names)

    def test_docstring_lists_every_row(self):
        doc = fastcopy.configure.__doc__
        for name in self.names:
            self.assertIn("\n%s (" % name, doc)
        import inspect
        sig = inspect.signature(fastcopy.configure)
        self.assertEqual(list(sig.parameters), self.names)
        self.assertTrue(all(p.kind is p.KEYWORD_ONLY and p.default is None
                            for p in sig.parameters.values()))
        self.assertIn("warn_slow", self.names)

    def test_defaults_apply_at_import(self):
        code = ("import fastcopy\nfrom fastcopy import _fastcopy\n"
                "cur = fastcopy.configure()\n"
                "for name, owner, kind, default, doc in _fastcopy._settings():\n"
                "    if name == 'numpy_threads':\n"
                "        assert 1 <= cur[name] <= 4, cur\n"
                "    else:\n"
                "        assert cur[name] == default, (name, cur[name], default)\n"
                "print('ok')\n")
        r = run_python(code)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ok", r.stdout)

    @unittest.skipUnless(os.path.isfile(STUB), "the package has no stub here")
    def test_stub_types_every_row(self):
        with open(STUB, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "configure")
        self.assertEqual([a.arg for a in fn.args.kwonlyargs], self.names)
        want = {"bool": "bool | None", "int": "int | None", "seconds": "float | None"}
        for arg, row in zip(fn.args.kwonlyargs, self.rows):
            self.assertEqual(ast.unparse(arg.annotation), want[row[2]], arg.arg)

    @unittest.skipUnless(HAVE_DOCS, "no docs/ here (the suite runs against an installed wheel)")
    def test_api_docs_list_every_row(self):
        api = read("docs", "api.md")
        for name in self.names:
            self.assertIn("`%s`" % name, api)

    def test_bad_values_change_nothing(self):
        before = fastcopy.configure()
        with self.assertRaises(TypeError):
            fastcopy.configure(numpy_pool=True, numpy_threads="4")
        with self.assertRaises(ValueError):
            fastcopy.configure(torch_defer=False, numpy_parallel_min_bytes=-1)
        with self.assertRaises(TypeError):
            fastcopy.configure(no_such_setting=1)
        with self.assertRaises(TypeError):
            fastcopy.configure(1)
        self.assertEqual(fastcopy.configure(), before)

    def test_round_trip(self):
        old = fastcopy.configure(numpy_threads=2, torch_defer=False, numpy_pool_max_bytes=1 << 20)
        try:
            cur = fastcopy.configure()
            self.assertEqual((cur["numpy_threads"], cur["torch_defer"], cur["numpy_pool_max_bytes"]),
                             (2, False, 1 << 20))
            self.assertEqual(fastcopy.configure(numpy_threads=10 ** 6)["numpy_threads"], 2)
            self.assertEqual(fastcopy.configure()["numpy_threads"], 64)
        finally:
            fastcopy.configure(**old)
        self.assertEqual(fastcopy.configure(), old)


@unittest.skipUnless(HAVE_SRC, "needs the source tree")
class Registry(unittest.TestCase):
    def test_every_backend_is_registered_and_built(self):
        tables = {}
        for name in sorted(os.listdir(SRC)):
            if name.endswith(".c"):
                for b in re.findall(r"const FcBackend fc_(\w+)_backend = \{", read("src", name)):
                    tables[b] = name
        self.assertEqual(set(tables), {"numpy", "torch", "cuda"})
        # the registry is one list (backend.h), which buffers.c's table and
        # the state's slots are made from
        listed = re.search(r"#define FC_BACKEND_LIST\(X\)(.*?)\n\n", read("src", "backend.h"),
                           re.S).group(1)
        self.assertEqual(re.findall(r"X\((\w+)\)", listed), ["numpy", "torch", "cuda"])
        self.assertIn("FC_BACKEND_LIST(FC_BK_ROW_)", read("src", "buffers.c"))
        self.assertEqual(set(_fastcopy.backends()), set(tables))
        unity = read("src", "_fastcopy.c")
        for f in os.listdir(SRC):
            if f.endswith(".c") and f != "_fastcopy.c":
                self.assertIn('#include "%s"' % f, unity)

    def test_no_part_declares_another_parts_functions(self):
        # a cross-part function is declared once, in its area's header
        defined = {}
        for name in os.listdir(SRC):
            if name.endswith(".c"):
                for fn in re.findall(r"^FC_INTERNAL(?:_INLINE)? [^\n]*\n(fc_\w+)\(", read("src", name), re.M):
                    defined[fn] = name
        for name in os.listdir(SRC):
            if not name.endswith(".c"):
                continue
            text = read("src", name)
            for fn, home in defined.items():
                if home != name:
                    self.assertIsNone(re.search(r"^(?:static|FC_\w+)[^\n(]*\b%s\([^)]*\);" % fn,
                                                text, re.M), "%s declares %s" % (name, fn))


def _strip_c(text):
    """C source without comments, string and character literals."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(?:\\.|[^'\\\n])*'", "''", text)


def part_graph(sources):
    """{part: {other part: reasons}} for C parts given as {name: text}: a part uses another when
    it includes the other's header, or names a function or a datum the other defines for the
    rest of the core (FC_INTERNAL, FC_INTERNAL_INLINE, FC_INTERNAL_DATA)."""
    parts = {n[:-2]: _strip_c(t) for n, t in sources.items() if n.endswith(".c")}
    defined = {}
    for part, text in parts.items():
        for sym in re.findall(r"^FC_INTERNAL(?:_INLINE)?\b[^;{]*?\b(fc_\w+)\s*\([^;]*?\)\s*\{",
                              text, re.M | re.S):
            defined.setdefault(sym, part)
        for sym in re.findall(r"^FC_INTERNAL_DATA\b[^;=(]*?\b(fc_\w+)\b[^;]*?=", text, re.M):
            defined.setdefault(sym, part)
    graph = {part: {} for part in parts}
    for part, text in parts.items():
        for inc in re.findall(r'^\s*#\s*include\s+"(\w+)\.h"', sources[part + ".c"], re.M):
            if inc in parts and inc != part:
                graph[part].setdefault(inc, set()).add(inc + ".h")
        names = set(re.findall(r"\bfc_\w+\b", text))
        if re.search(r"\bFC_BACKEND_LIST\(", text):
            # the registry's X-macro (backend.h) names every backend's table
            listed = re.search(r"#define FC_BACKEND_LIST\(X\)(.*?)\n\n", sources.get("backend.h", ""),
                               re.S)
            names |= {"fc_%s_backend" % b for b in re.findall(r"X\((\w+)\)",
                                                             listed.group(1) if listed else "")}
        for sym in names:
            home = defined.get(sym)
            if home is not None and home != part:
                graph[part].setdefault(home, set()).add(sym)
    return graph


def find_cycle(graph):
    """A list [a, b, ..., a] of parts that depend on each other in a circle, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


@unittest.skipUnless(HAVE_SRC, "needs the source tree")
class PartsDependOneWay(unittest.TestCase):
    """docs/internals.md: the module on top, then the walker, the buffer registry, the backends,
    and the memo, the deferred copies and the pool below them; every dependency runs one way."""

    def sources(self):
        return {n: read("src", n) for n in sorted(os.listdir(SRC))
                if n.endswith((".c", ".h")) and n != "_fastcopy.c"}

    def test_no_cycle(self):
        graph = part_graph(self.sources())
        cycle = find_cycle(graph)
        if cycle:
            why = ["%s -> %s (%s)" % (a, b, ", ".join(sorted(graph[a][b])[:4]))
                   for a, b in zip(cycle, cycle[1:])]
            self.fail("the C parts depend on each other in a circle:\n  " + "\n  ".join(why))

    def test_the_layers(self):
        graph = part_graph(self.sources())

        def below(a, b):
            """Does a reach b?"""
            seen, todo = set(), [a]
            while todo:
                n = todo.pop()
                for m in graph.get(n, ()):
                    if m == b:
                        return True
                    if m not in seen:
                        seen.add(m)
                        todo.append(m)
            return False

        for upper, lower in [("module", "deepcopy"), ("deepcopy", "buffers"), ("buffers", "numpy"),
                             ("buffers", "torch"), ("torch", "defer"), ("torch", "memo"),
                             ("deepcopy", "memo"), ("select", "deepcopy"), ("copy", "plan")]:
            self.assertTrue(below(upper, lower), "%s should use %s" % (upper, lower))
        for backend in ("numpy", "torch", "cuda_backend"):
            for core in ("deepcopy", "buffers", "plan", "select", "module", "settings"):
                self.assertFalse(below(backend, core), "%s reaches %s" % (backend, core))
        for low in ("memo", "defer", "pool"):
            for upper in ("deepcopy", "numpy", "torch", "cuda_backend", "buffers"):
                self.assertFalse(below(low, upper), "%s reaches %s" % (low, upper))

    def test_backend_state_is_the_backends_own(self):
        # FcState holds opaque blocks; only the backend's own file knows its layout
        state = _strip_c(read("src", "state.h"))
        for h in ("numpy.h", "torch.h", "cuda_backend.h"):
            self.assertNotIn('"%s"' % h, read("src", "state.h"))
        self.assertNotIn("FcTorchState", state)
        for name in os.listdir(SRC):
            if name.endswith(".c") and name not in ("numpy.c", "torch.c", "cuda_backend.c",
                                                    "_fastcopy.c"):
                text = _strip_c(read("src", name))
                for t in ("FcNumpyState", "FcTorchState", "FcCudaState"):
                    self.assertNotIn(t, text, "%s reads %s" % (name, t))

    def test_the_check_sees_a_cycle(self):
        # the checker itself: a call back up, an include back up, a datum
        src = {
            "a.c": '#include "a.h"\n#include "b.h"\nFC_INTERNAL int\nfc_a(void)\n{\n    return fc_b();\n}\n',
            "b.c": 'FC_INTERNAL int\nfc_b(void)\n{\n    return 0;\n}\n',
            "c.c": '/* fc_a() in a comment is no use */\nFC_INTERNAL_DATA const int fc_c_data = 1;\n',
        }
        self.assertIsNone(find_cycle(part_graph(src)))
        looped = dict(src, **{"b.c": src["b.c"] + "static int g(void) { return fc_c_data; }\n",
                              "c.c": src["c.c"] + '#include "a.h"\n'})
        self.assertEqual(find_cycle(part_graph(looped)), ["a", "b", "c", "a"])
        called = dict(src, **{"b.c": src["b.c"] + "static int g(void) { return fc_a(); }\n"})
        self.assertEqual(find_cycle(part_graph(called)), ["a", "b", "a"])


@unittest.skipUnless(HAVE_SRC, "no C sources here (an installed wheel)")
class VersionFactsInOnePlace(unittest.TestCase):
    """src/pyver.h is the one place where the core asks which CPython it is built for
    (PY_VERSION_HEX): every other part reads the named facts it defines, so a port to a new
    CPython starts by reading that one file; and every fact it defines is in its essay."""

    def test_only_pyver_reads_the_version(self):
        for name in sorted(os.listdir(SRC)):
            if name.endswith((".c", ".h")) and name != "pyver.h":
                with self.subTest(name):
                    self.assertNotIn("PY_VERSION_HEX", read("src", name))

    def test_every_fact_is_in_the_essay(self):
        text = read("src", "pyver.h")
        essay, _, code = text.partition("*/")
        facts = re.findall(r"^#\s*define\s+(FC_\w+)", code, re.M)
        self.assertGreater(len(facts), 10)
        for fact in facts:
            if fact in ("FC_PYVER_H", "FC_PYVER_FT") or re.match(r"FC_PY3\d+_PLUS$", fact):
                continue
            with self.subTest(fact):
                self.assertIn(fact, essay)


class BackendsTellTheTruth(unittest.TestCase):
    def child(self, code, needs):
        """Run code in a fresh interpreter; skip when it printed 'no <needs>'."""
        r = run_python(code)
        self.assertEqual(r.returncode, 0, r.stderr)
        if "no " + needs in r.stdout:
            self.skipTest(needs + " not installed")
        self.assertIn("ok", r.stdout)

    def test_keys(self):
        b = fastcopy.backends()
        self.assertEqual(set(b), {"numpy", "torch", "cuda"})
        self.assertIn("native", b["numpy"])
        self.assertIn("native", b["torch"])

    def test_numpy_native_before_the_first_copy(self):
        code = ("import fastcopy\n"
                "b = fastcopy.backends()['numpy']\n"
                "assert b['native'] is False and b['version'] is None, b\n"
                "try:\n    import numpy\nexcept ImportError:\n    print('no numpy'); raise SystemExit\n"
                "b = fastcopy.backends()['numpy']\n"
                "assert b['version'] == numpy.__version__, b\n"
                "assert b['native'] is b['built'], b\n"
                "print('ok')\n")
        self.child(code, "numpy")

    def test_torch_native_false_when_its_deepcopy_is_replaced(self):
        code = ("import fastcopy\n"
                "b = fastcopy.backends()['torch']\n"
                "assert b['native'] is False and b['why_not'] == 'torch is not imported', b\n"
                "try:\n    import torch\nexcept ImportError:\n    print('no torch'); raise SystemExit\n"
                "b = fastcopy.backends()['torch']\n"
                "assert b['native'] is True and b['why_not'] is None, b\n"
                "orig = torch.Tensor.__deepcopy__\n"
                "torch.Tensor.__deepcopy__ = lambda self, memo: orig(self, memo)\n"
                "b = fastcopy.backends()['torch']\n"
                "assert b['native'] is False and 'Tensor' in b['why_not'], b\n"
                "torch.Tensor.__deepcopy__ = orig\n"
                "assert fastcopy.backends()['torch']['native'] is True\n"
                "print('ok')\n")
        self.child(code, "torch")


if __name__ == "__main__":
    unittest.main()
