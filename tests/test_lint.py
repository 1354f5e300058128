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

The checker is tested on snippets below, so it is trusted before the core exists.
"""
import glob
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


class LintTheSources(unittest.TestCase):

    @unittest.skipUnless(SOURCES, "no C sources yet")
    def test_recursion_guards_paired(self):
        problems = []
        for path in SOURCES:
            with open(path, encoding="utf-8") as f:
                problems += check_recursion_guards(f.read(), os.path.relpath(path, ROOT))
        self.assertEqual(problems, [], "\n".join(problems))

    @unittest.skipUnless(SOURCES, "no C sources yet")
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

    def test_functions_found(self):
        names = [n for n, _, _ in functions(strip_c(GOOD))]
        self.assertEqual(names, ["ok_simple", "ok_goto", "ok_branches", "ok_loop", "ok_dict",
                                 "ok_forever"])


if __name__ == "__main__":
    unittest.main()
