"""Source lint for the C core (src/*.c, cuda/*.c): a conservative textual check.

1. Recursion guards: after ``Py_EnterRecursiveCall`` succeeds, every ``return`` and every
   ``goto`` must pass a ``Py_LeaveRecursiveCall`` first (or jump to a label whose straight-line
   code leaves before its next ``return``). A Leave only counts when it is on every path to the
   exit: it precedes the exit in the same block or in an enclosing block, never inside a sibling
   (conditional) block. The statement run when the Enter itself fails is exempt.
2. ``PyDict_Next`` loops: a loop body that calls something able to run Python code
   (``__hash__``/``__eq__``/hooks/our own recursive copiers) must first take strong references to
   the borrowed key and value (``Py_INCREF``/``Py_NewRef``). Best effort: only the loop's own
   braced body is checked.

3. Stale lengths: a list's size read into a local (``n = PyList_GET_SIZE(x)``), then an
   allocation or a call that can run Python code (on 3.10/3.11 any allocation can collect garbage
   and run finalizers), then an item of that list read (``PyList_GET_ITEM(x, ...)``,
   ``PySequence_Fast_ITEMS(x)``, ``->ob_item``) with no fresh ``PyList_GET_SIZE(x)`` in between.
4. Borrowed pointers into objects: a call able to run Python code whose first argument is a
   dereferenced pointer (``PyDict_Contains(*dp, ...)`` on ``_PyObject_GetDictPtr``'s slot): the
   code it runs may replace what the slot points to and free it mid-call.
5. CPython copies that read their source after allocating (``list.copy()``'s
   ``PyList_GetSlice``, ``PyList_AsTuple``, ``PyDict_Copy`` of a split dict): only through
   fastcopy.h's safe wrappers, or on a line marked ``lint: own container`` (a container only
   this code can reach).

The checker is tested on snippets below, so it is trusted before the core exists.
"""
import glob
import os
import re
import unittest

# the checkout, or $FASTCOPY_SOURCE_ROOT; none when the suite runs against an installed wheel
# from a copy of tests/ (the checker's own tests below still run)
ROOT = os.environ.get("FASTCOPY_SOURCE_ROOT") \
    or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = sorted(glob.glob(os.path.join(ROOT, "src", "*.c"))
                 + glob.glob(os.path.join(ROOT, "cuda", "*.c")))

ENTER = "Py_EnterRecursiveCall"
LEAVE = "Py_LeaveRecursiveCall"

# Calls inside a PyDict_Next body that can run arbitrary Python code.
RUNS_PYTHON = re.compile(
    r"\b(PyObject_(Call\w*|Vectorcall\w*|GetAttr\w*|SetAttr\w*|SetItem|GetItem|DelItem|Hash|"
    r"RichCompare\w*|Repr|Str|GetIter|IsTrue|Not)|PyDict_(SetItem|DelItem|GetItemWithError|"
    r"Contains|SetDefault\w*)|PyDict_GetItemRef|PySet_(Add|Contains|Discard)|PyList_Append|"
    r"PyIter_Next|PyNumber_\w+|PySequence_\w+|PyMapping_\w+|_PyObject_\w*Call\w*|"
    r"PyEval_\w+|fc_\w*(deep|copy|call|reduce|reconstruct|hook|memo_(set|store|put|insert))\w*)\s*\(")


def strip_c(text):
    """Blank out comments, string and char literals (keeping offsets and newlines)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    pattern = r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
    text = re.sub(pattern, blank, text, flags=re.S)
    # preprocessor lines can hold unbalanced braces in macros
    return re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", blank, text)


def functions(text):
    """Yield (name, body_start, body_end) for each top-level brace block that follows ')'.
    Offsets point at the '{' and just after the matching '}'."""
    depth = 0
    start = None
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and start is not None:
                head = text[max(0, start - 400):start]
                m = re.search(r"(\w+)\s*\([^;{}]*\)\s*$", head)
                if m:
                    yield m.group(1), start, i + 1
                start = None


def _match_brace(text, i):
    """Offset of the '}' matching the '{' at i."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text)


def _statement_end(text, i):
    """End of the statement starting at i: a ';' at nesting 0, or a braced block."""
    j = i
    while j < len(text) and text[j] in " \t\n":
        j += 1
    if j < len(text) and text[j] == "{":
        return _match_brace(text, j) + 1
    depth = 0
    while j < len(text):
        c = text[j]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == ";" and depth == 0:
            return j + 1
        j += 1
    return j


def _enter_failure_span(body, pos):
    """If the Enter at pos sits in an ``if`` condition (``if (Py_Enter...(...))``,
    ``if (check() < 0 || Py_Enter...(...))``, ``if (FC_UNLIKELY(Py_Enter...(...)))``), the span
    of the statement that condition guards; else None."""
    depth = 0
    j = pos
    while j > 0:
        j -= 1
        c = body[j]
        if c == ")":
            depth += 1
        elif c == "(":
            if depth:
                depth -= 1
                continue
            # an unclosed '(' around the Enter: the if's own, or a macro's inside it
            if re.search(r"\bif\s*$", body[:j]):
                close = j
                d = 0
                while close < len(body):
                    d += {"(": 1, ")": -1}.get(body[close], 0)
                    if d == 0:
                        break
                    close += 1
                return (close + 1, _statement_end(body, close + 1))
        elif c in ";{}":
            return None
    return None


def _enclosing_block_end(body, pos):
    """Offset of the '}' closing the block that contains pos: exits after it are outside
    the guarded region (an Enter/Leave pair inside a loop body)."""
    depth = 0
    for j in range(pos, len(body)):
        if body[j] == "{":
            depth += 1
        elif body[j] == "}":
            if depth == 0:
                return j
            depth -= 1
    return len(body)


def _leave_on_path(body, enter_end, pos):
    """True when a Leave lies on every path from the Enter (ending at enter_end) to pos:
    search backwards from pos through the enclosing blocks, skipping sibling blocks."""
    j = pos
    depth = 0  # > 0 while inside a sibling block we are skipping
    while j > enter_end:
        j -= 1
        c = body[j]
        if c == "}":
            depth += 1
        elif c == "{":
            if depth > 0:
                depth -= 1
            # depth 0: we step out into the enclosing block and keep going backwards
        elif depth == 0 and body.startswith(LEAVE, j):
            return True
    return False


def check_recursion_guards(text, filename="<src>"):
    """List of problems for Enter/Leave pairing in C source ``text``."""
    text = strip_c(text)
    problems = []
    for name, start, end in functions(text):
        body = text[start:end]
        enters = [m.start() for m in re.finditer(r"\b%s\s*\(" % ENTER, body)]
        if not enters:
            continue
        labels = {m.group(1): m.end() for m in re.finditer(r"(?m)^\s*(\w+)\s*:(?!:)", body)
                  if m.group(1) not in ("default", "case", "public", "private")}
        for e in enters:
            fail = _enter_failure_span(body, e)
            enter_end = fail[1] if fail else _statement_end(body, e)
            block_end = _enclosing_block_end(body, e)
            for m in re.finditer(r"\b(return|goto\s+(\w+))\b", body[enter_end:block_end]):
                p = enter_end + m.start()
                # stop at the next Enter: its own check covers what follows
                if any(enter_end < e2 < p for e2 in enters):
                    break
                if _leave_on_path(body, enter_end, p):
                    continue
                label = m.group(2)
                if label and label in labels:
                    lpos = labels[label]
                    nxt = re.search(r"\breturn\b", body[lpos:])
                    seg = body[lpos:lpos + nxt.start()] if nxt else body[lpos:]
                    if LEAVE in seg:
                        continue
                line = text[:start + p].count("\n") + 1
                problems.append("%s:%d: %s(): `%s` after %s without %s"
                                % (filename, line, name, m.group(0), ENTER, LEAVE))
    return problems


# Calls that look like copiers by name but cannot run Python code.
NEVER_PYTHON = re.compile(r"^fc_\w*(atomic|_check|_is_\w+|_exact|_kind)$")
# PyDict_SetItem takes its own references to key and value before hashing the key.
OWN_REFS = ("PyDict_SetItem",)


def _first_risky_call(body):
    for call in RUNS_PYTHON.finditer(body):
        name = call.group(0).rstrip("( \t\n")
        if NEVER_PYTHON.match(name) or name in OWN_REFS:
            continue
        return call, name
    return None, None


def check_dict_next(text, filename="<src>"):
    """List of problems: PyDict_Next loops whose body calls Python with a borrowed key/value.

    Two loop shapes: ``while (PyDict_Next(d, &pos, &k, &v)) { body }`` and a ``for (;;)`` whose
    body holds ``if (!PyDict_Next(d, &pos, &k, &v)) break;``: the rest of the enclosing block is
    then the loop body."""
    text = strip_c(text)
    problems = []
    for m in re.finditer(r"\bPyDict_Next\s*\(", text):
        close = m.end()
        depth = 1
        while close < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[close], 0)
            close += 1
        args = [a.strip().lstrip("&").strip() for a in text[m.end():close - 1].split(",")]
        if len(args) != 4:
            continue
        names = [a.split("->")[-1].split(".")[-1] for a in args[2:]]
        names = [a for a in names if re.fullmatch(r"\w+", a) and a != "NULL"]
        before = text[:m.start()]
        if re.search(r"\bwhile\s*\(\s*$", before):
            brace = text.index("{", close)
            body = text[brace:_match_brace(text, brace) + 1]
            body_start = brace
        else:
            body_start = close
            body = text[close:_enclosing_block_end(text, close)]
        call, name = _first_risky_call(body)
        if not call:
            continue
        head = body[:call.start()]
        for n in names:
            held = re.search(r"\b(Py_X?INCREF\s*\(\s*%s\s*\)|Py_X?NewRef\s*\(\s*%s\s*\))"
                             % (n, n), head)
            if not held:
                line = text[:body_start + call.start()].count("\n") + 1
                problems.append("%s:%d: PyDict_Next borrowed `%s` used across %s without a "
                                "strong reference" % (filename, line, n, name))
    return problems


# Calls that allocate (so, on 3.10/3.11, may collect garbage and run finalizers).
ALLOCATES = re.compile(
    r"\b(PyList_New|PyTuple_New|PyDict_New|_PyDict_NewPresized|PyObject_GC_New\w*|"
    r"PyObject_New\w*|PyLong_From\w+|PyFloat_From\w+|PyUnicode_From\w+|PyTuple_Pack|"
    r"Py_BuildValue|PySet_New|PyFrozenSet_New|PyDict_Copy|fc_dict_copy|PyList_Append|"
    r"PyType_GenericAlloc|\w+->tp_new|\w+->tp_alloc)\s*\(")


def _item_use(body, v):
    pat = (r"PyList_GET_ITEM\s*\(\s*%s\s*,|PySequence_Fast_ITEMS\s*\(\s*%s\s*\)|"
           r"\b%s\s*\)?\s*->\s*ob_item|\(\s*\(\s*PyListObject\s*\*\s*\)\s*%s\s*\)\s*->\s*ob_item"
           % ((re.escape(v),) * 4))
    return re.search(pat, body)


def check_stale_lengths(text, filename="<src>"):
    """List of problems: a list item read after an allocation or a Python call that follows a
    cached read of the list's size, with no fresh size read in between."""
    text = strip_c(text)
    problems = []
    for fname, start, end in functions(text):
        body = text[start:end]
        for m in re.finditer(r"\b(\w+)\s*=\s*PyList_GET_SIZE\s*\(\s*(\w+)\s*\)", body):
            v = m.group(2)
            rest = body[m.end():]
            risky = [c for c in (ALLOCATES.search(rest), RUNS_PYTHON.search(rest)) if c]
            if not risky:
                continue
            call = min(risky, key=lambda c: c.start())
            after = rest[call.end():]
            use = _item_use(after, v)
            if not use:
                continue
            if re.search(r"PyList_GET_SIZE\s*\(\s*%s\s*\)" % re.escape(v), after[:use.start()]):
                continue
            line = text[:start + m.end() + call.end() + use.start()].count("\n") + 1
            problems.append("%s:%d: %s() reads an item of `%s` after %s with the size read "
                            "before it" % (filename, line, fname, v,
                                           call.group(0).rstrip("( \t\n")))
    return problems


def check_deref_calls(text, filename="<src>"):
    """List of problems: a call that can run Python code on a dereferenced object slot."""
    text = strip_c(text)
    problems = []
    for m in RUNS_PYTHON.finditer(text):
        if re.match(r"\s*\*\s*\w+", text[m.end():]):
            line = text[:m.start()].count("\n") + 1
            problems.append("%s:%d: %s on a borrowed slot (*ptr): hold a reference first"
                            % (filename, line, m.group(0).rstrip("( \t\n")))
    return problems


UNSAFE_COPIES = re.compile(r"\b(PyList_GetSlice|PyList_AsTuple|PyDict_Copy)\s*\(")


def check_unsafe_copies(text, filename="<src>"):
    """List of problems: CPython's read-after-allocate copies on containers user code reaches."""
    raw_lines = text.split("\n")
    code = strip_c(text)
    problems = []
    for m in UNSAFE_COPIES.finditer(code):
        lineno = code[:m.start()].count("\n")
        if "lint: own container" in raw_lines[lineno] or (
                lineno > 0 and "lint: own container" in raw_lines[lineno - 1]):
            continue
        problems.append("%s:%d: %s on a container user code can reach (use fc_list_copy / "
                        "fc_dict_copy, or mark `lint: own container`)"
                        % (filename, lineno + 1, m.group(1)))
    return problems


class LintTheSources(unittest.TestCase):

    @unittest.skipUnless(SOURCES, "no C sources here (no checkout; FASTCOPY_SOURCE_ROOT names one)")
    def test_recursion_guards_paired(self):
        problems = []
        for path in SOURCES:
            with open(path, encoding="utf-8") as f:
                problems += check_recursion_guards(f.read(), os.path.relpath(path, ROOT))
        self.assertEqual(problems, [], "\n".join(problems))

    def _run(self, check, paths):
        problems = []
        for path in paths:
            with open(path, encoding="utf-8") as f:
                problems += check(f.read(), os.path.relpath(path, ROOT))
        self.assertEqual(problems, [], "\n".join(problems))

    @unittest.skipUnless(SOURCES, "no C sources here (no checkout; FASTCOPY_SOURCE_ROOT names one)")
    def test_no_stale_list_lengths(self):
        self._run(check_stale_lengths, SOURCES)

    @unittest.skipUnless(SOURCES, "no C sources here (no checkout; FASTCOPY_SOURCE_ROOT names one)")
    def test_no_python_calls_on_borrowed_slots(self):
        self._run(check_deref_calls, SOURCES)

    @unittest.skipUnless(SOURCES, "no C sources here (no checkout; FASTCOPY_SOURCE_ROOT names one)")
    def test_no_read_after_allocate_copies(self):
        self._run(check_unsafe_copies, [p for p in SOURCES if not p.endswith("fastcopy.h")])

    @unittest.skipUnless(SOURCES, "no C sources here (no checkout; FASTCOPY_SOURCE_ROOT names one)")
    def test_dict_next_holds_references(self):
        problems = []
        for path in SOURCES:
            with open(path, encoding="utf-8") as f:
                problems += check_dict_next(f.read(), os.path.relpath(path, ROOT))
        self.assertEqual(problems, [], "\n".join(problems))


GOOD = r"""
static PyObject *
ok_simple(FcCtx *ctx, PyObject *x)   /* new ref | NULL+exc */
{
    PyObject *y = NULL;
    if (Py_EnterRecursiveCall(" while deep-copying")) {
        return NULL;
    }
    y = fc_deep_list(ctx, x);
    Py_LeaveRecursiveCall();
    return y;
}

static PyObject *
ok_goto(FcCtx *ctx, PyObject *x)
{
    PyObject *y = NULL;
    if (Py_EnterRecursiveCall(" in ok_goto"))
        return NULL;
    if (x == NULL) {
        goto error;
    }
    y = PyList_New(0);
    if (y == NULL)
        goto error;
    Py_LeaveRecursiveCall();
    return y;
error:
    Py_LeaveRecursiveCall();
    Py_XDECREF(y);
    return NULL;   /* a "return" in a comment: ignored */
}

static int
ok_branches(PyObject *x)
{
    if (fc_stack_check() < 0 || FC_UNLIKELY(Py_EnterRecursiveCall(""))) return -1;
    if (x) {
        Py_LeaveRecursiveCall();
        return 1;
    }
    Py_LeaveRecursiveCall();
    return 0;
}

static int
ok_loop(PyObject *seq, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (Py_EnterRecursiveCall("")) {
            return -1;
        }
        int r = PyObject_IsTrue(seq);
        Py_LeaveRecursiveCall();
        if (r < 0) {
            return -1;
        }
    }
    return 0;
}

static int
ok_dict(PyObject *d, PyObject *out)
{
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v)) {
        Py_INCREF(k);
        Py_INCREF(v);
        int r = PyObject_SetItem(out, k, v);
        Py_DECREF(k);
        Py_DECREF(v);
        if (r < 0) return -1;
    }
    while (PyDict_Next(d, &pos, &k, NULL)) {
        if (k == Py_None) return 1;   /* no call into Python: borrowed is fine */
    }
    return 0;
}

static PyObject *
ok_relen(PyObject *x)
{
    Py_ssize_t n = PyList_GET_SIZE(x);
    PyObject *y = PyList_New(n);
    if (y == NULL || PyList_GET_SIZE(x) != n) return NULL;
    PyObject *first = PyList_GET_ITEM(x, 0);
    PyObject **dp = _PyObject_GetDictPtr(x);
    PyObject *d = Py_NewRef(*dp);
    int r = PyDict_Contains(d, first);
    PyObject *t = PyList_AsTuple(y);   /* lint: own container */
    return t;
}

static int
ok_forever(PyObject *x, PyObject *y, FcFrame *f)
{
    for (;;) {
        PyObject *k, *v;
        if (!PyDict_Next(x, &f->u.dict.pos, &k, &v)) {
            break;
        }
        if (fc_deep_atomic(c, v) && fc_deep_atomic(c, k)) {
            if (PyDict_SetItem(y, k, v) < 0) {
                return -1;
            }
            continue;
        }
        f->key = Py_NewRef(k);
        f->val = Py_NewRef(v);
        if (fc_deep_push(c, v) < 0) return -1;
    }
    return 0;
}
"""

BAD = r"""
static PyObject *
bad_return(FcCtx *ctx, PyObject *x)
{
    if (Py_EnterRecursiveCall(" while deep-copying"))
        return NULL;
    PyObject *y = fc_deep_list(ctx, x);
    if (y == NULL)
        return NULL;
    Py_LeaveRecursiveCall();
    return y;
}

static int
bad_sibling(PyObject *x)
{
    if (Py_EnterRecursiveCall("")) return -1;
    if (x) {
        Py_LeaveRecursiveCall();
    }
    return 0;
}

static int
bad_goto(PyObject *x)
{
    if (fc_stack_check() < 0 || Py_EnterRecursiveCall("")) {
        fc_ctx_fini(&c);
        return -1;
    }
    if (x == NULL) goto error;
    Py_LeaveRecursiveCall();
    return 0;
error:
    return -1;
}

static int
bad_dict(PyObject *d, PyObject *out, FcCtx *ctx)
{
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v)) {
        PyObject *c = fc_deepcopy(ctx, v);
        if (c == NULL || PyDict_SetItem(out, k, c) < 0) return -1;
    }
    return 0;
}

static PyObject *
bad_stale(PyObject *x)
{
    Py_ssize_t n = PyList_GET_SIZE(x);
    PyObject *y = PyList_New(n);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyList_SET_ITEM(y, i, Py_NewRef(PyList_GET_ITEM(x, i)));
    }
    PyObject **dp = _PyObject_GetDictPtr(x);
    int r = PyDict_Contains(*dp, y);
    return PyDict_Copy(y);
}

static int
bad_forever(PyObject *x, PyObject *y)
{
    Py_ssize_t pos = 0;
    for (;;) {
        PyObject *k, *v;
        if (!PyDict_Next(x, &pos, &k, &v))
            break;
        if (PyObject_SetAttr(y, k, v) < 0)
            return -1;
    }
    return 0;
}
"""


class LintSelfTest(unittest.TestCase):

    def test_good_snippets_pass(self):
        self.assertEqual(check_recursion_guards(GOOD), [])
        self.assertEqual(check_dict_next(GOOD), [])

    def test_bad_snippets_fail(self):
        problems = check_recursion_guards(BAD)
        names = sorted({p.split("(")[0].split()[-1] for p in problems})
        self.assertEqual(names, ["bad_goto", "bad_return", "bad_sibling"], problems)
        problems = check_dict_next(BAD)
        self.assertEqual(len(problems), 4, problems)  # k and v, twice

    def test_container_rules(self):
        for check in (check_stale_lengths, check_deref_calls, check_unsafe_copies):
            self.assertEqual(check(GOOD), [], check.__name__)
            problems = check(BAD)
            self.assertEqual(len(problems), 1, (check.__name__, problems))
            self.assertIn("bad_stale" if check is check_stale_lengths else ":", problems[0])

    def test_functions_found(self):
        names = [n for n, _, _ in functions(strip_c(GOOD))]
        self.assertEqual(names, ["ok_simple", "ok_goto", "ok_branches", "ok_loop", "ok_dict",
                                 "ok_relen", "ok_forever"])


if __name__ == "__main__":
    unittest.main()
