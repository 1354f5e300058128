"""Writes to a shared atom's reference count per record, counted exactly (needs gdb).

    python3.13t benchmarks/shared_atom_writes.py [--shape dict,list,object] [--so BUILD.so]

Timings of two threads on a 2-core VM swing by 30% from run to run; this count does not.  A
thread that does not own an object counts its references in the object's shared field with an
atomic add, and every such add is a write to a cache line the other core wants.  For each
shape of bench_shared_atoms.py, one thread (not the float's owner) deep-copies 20 records once
to warm up, then once more while a gdb hardware watchpoint on the shared float's
``ob_ref_shared`` counts every write; then the copy is freed, counted apart.  Printed per
record, for fastcopy (or the build given with --so) and copy.deepcopy.  Free-threaded builds
only (a GIL build has no shared field).
"""
import argparse
import copy
import os
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
N = 20

GDB = r'''
import gdb
gdb.execute("set pagination off")
gdb.execute("catch syscall getppid")
state = {"phase": 0, "n": 0, "out": []}
class WP(gdb.Breakpoint):
    def stop(self):
        state["n"] += 1
        return False
def on_stop(ev):
    if state["phase"] == 0:
        WP("*(long *)%s" % open(ADDR).read().strip(), gdb.BP_WATCHPOINT, gdb.WP_WRITE,
           internal=True)
    else:
        state["out"].append(state["n"])
        state["n"] = 0
    state["phase"] += 1
gdb.events.stop.connect(on_stop)
'''


def child(so, shape, impl, addr_file):
    sys.path.insert(0, HERE)
    import bench_shared_atoms as b
    fc = b.load(so)
    fn = copy.deepcopy if impl == "stdlib" else fc.deepcopy
    a = b.SHARED
    with open(addr_file, "w") as f:
        f.write(hex(id(a) + 16))    # ob_tid, flags/mutex/gc bits, ob_ref_local: 16 bytes

    def worker():
        data = [b.SHAPES[shape](i, a) for i in range(N)]
        fn(data)
        os.getppid()                # counting starts
        y = fn(data)
        os.getppid()                # the copy made
        del y
        os.getppid()                # the copy freed
    t = threading.Thread(target=worker)
    t.start()
    t.join()


def count(so, shape, impl):
    with tempfile.TemporaryDirectory() as d:
        addr = os.path.join(d, "addr")
        script = os.path.join(d, "count.py")
        with open(script, "w") as f:
            f.write("ADDR = %r\n" % addr + GDB)
        cmd = ["gdb", "-q", "-batch", "-x", script, "-ex", "run"] + ["-ex", "continue"] * 5 + [
            "-ex", "python print('COUNTS', state['out'])", "--args", sys.executable,
            os.path.abspath(__file__), "--child", shape, impl, so or "-", addr]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                             env=dict(os.environ, PYTHON_GIL="0")).stdout
        line = [ln for ln in out.splitlines() if ln.startswith("COUNTS")]
        if not line:
            raise SystemExit("gdb gave no count:\n" + out[-2000:])
        c = eval(line[0].split(None, 1)[1])
        return c[1] / N, c[3] / N


def main(argv=None):
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, shape, impl, so, addr = sys.argv
        return child(None if so == "-" else so, shape, impl, addr)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="dict,list,object")
    ap.add_argument("--so", default=None)
    args = ap.parse_args(argv)
    print("writes to the shared float's count per record (8 references per record)")
    print("%-7s %-9s %8s %8s" % ("shape", "impl", "copy", "free"))
    for shape in args.shape.split(","):
        for impl in ("fastcopy", "stdlib"):
            c, f = count(args.so, shape, impl)
            print("%-7s %-9s %8.1f %8.1f" % (shape, impl, c, f), flush=True)


if __name__ == "__main__":
    main()
