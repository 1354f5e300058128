"""Write a .def for python3XY.dll from CPython's headers (for an import library).

    python scripts/cross/windows_def.py INCLUDE_DIR DLLNAME OUT.def

Every function and data object Include/ declares with PyAPI_FUNC /
PyAPI_DATA -- the public, cpython/ and internal/ headers alike -- which is
what the DLL exports (pyport.h marks exactly those dllexport when the core
is built; an internal/ one is exported "for stdlib modules", and
fastcopy's cowdict.c declares two of them itself: docs/platforms.md).  A
name an extension links that is not in the list is not exported at all:
the link fails, as it would against the real python3XY.lib.  Data objects carry
DATA, so the import library offers only their __imp_ symbol, as the
headers' __declspec(dllimport) expects.
"""
import pathlib
import re
import sys

inc, dll, out = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
funcs, data = set(), set()
for h in sorted(inc.glob("*.h")) + sorted((inc / "cpython").glob("*.h")) \
        + sorted((inc / "internal").glob("*.h")):
    text = re.sub(r"/\*.*?\*/", " ", h.read_text(encoding="utf-8", errors="replace"), flags=re.S)
    for kind, rest in re.findall(r"\bPyAPI_(FUNC|DATA)\s*\((.*?);", text, flags=re.S):
        # skip the return type's balanced parentheses, then the first name
        depth, i = 1, 0
        while i < len(rest) and depth:
            depth += {"(": 1, ")": -1}.get(rest[i], 0)
            i += 1
        m = re.match(r"[\s*()]*(\w+)", rest[i:])
        if m and not m.group(1).isupper() or (m and kind == "DATA"):
            (funcs if kind == "FUNC" else data).add(m.group(1))
with open(out, "w", encoding="ascii") as f:
    f.write(f"LIBRARY {dll}\nEXPORTS\n")
    for name in sorted(funcs):
        f.write(f"    {name}\n")
    for name in sorted(data - funcs):
        f.write(f"    {name} DATA\n")
print(f"{out}: {len(funcs)} functions, {len(data)} data", file=sys.stderr)
