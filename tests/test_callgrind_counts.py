"""benchmarks/callgrind_counts.py's --own count, read from a callgrind output file.

The count decides claims of the form "N% fewer of fastcopy's own instructions", so it must
charge every self cost of the extension's functions -- code inlined from another file
(`fi=`/`fe=`) included -- and nothing of a call's inclusive cost or of another object."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _module():
    spec = importlib.util.spec_from_file_location(
        "callgrind_counts", os.path.join(ROOT, "benchmarks", "callgrind_counts.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# Two objects; names compressed on first use, then referred to by number alone.  The
# walker (fn 2) has 10 + 7 of its own lines, 5 + 4 inlined from memo.c and fastcopy.h, and
# calls PyList_Append (inclusive 1000, not ours) and itself (inclusive 500, not counted
# twice).  The interpreter's functions cost 100000 and 3.
SAMPLE = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 101026

ob=(1) /usr/lib/libpython3.11.so.1.0
fl=(1) Objects/listobject.c
fn=(1) PyList_Append
10 100000

ob=(2) /x/fastcopy/_fastcopy.cpython-311-x86_64-linux-gnu.so
fl=(2) src/deepcopy.c
fn=(2) fc_walk_from
100 10
fi=(3) src/memo.c
200 5
fi=(4) src/fastcopy.h
+1 4
fe=(2)
+3 7
cob=(1)
cfi=(1)
cfn=(1)
calls=20 10
-3 1000
cfn=(2)
calls=1 100
+0 500

ob=(1)
fl=(1)
fn=(3) PyList_New
5 3
"""


def test_own_counts_inlined_lines_and_skips_inclusive_costs(tmp_path):
    out = tmp_path / "cg.out"
    out.write_text(SAMPLE)
    assert _module()._own(str(out)) == 10 + 5 + 4 + 7


def test_own_with_instruction_positions(tmp_path):
    # --dump-instr=yes: two position columns (address, line) before the cost
    text = SAMPLE.replace("positions: line", "positions: instr line")
    lines = []
    for line in text.splitlines():
        head = line[:1]
        if head and (head.isdigit() or head in "+-*"):
            pos, cost = line.split()
            line = "0x%x %s %s" % (0x1000 + len(lines), pos, cost)
        lines.append(line)
    out = tmp_path / "cg.out"
    out.write_text("\n".join(lines) + "\n")
    assert _module()._own(str(out)) == 10 + 5 + 4 + 7
