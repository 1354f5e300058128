"""What filling fresh memory costs on this machine, with no copier at all.

    python benchmarks/fresh_pages.py GIB [RUNS]

Each run is a fresh interpreter that allocates GIB GiB with ``np.empty`` (numpy advises huge
pages for it), fills it with ones and prints the wall time, the system time and the minor
faults (getrusage).  On a VM whose guest reports free memory to the host (virtio_balloon free
page reporting, ``/sys/module/page_reporting/parameters``), memory freed and reported in
between costs a host fault on the next touch: the first runs take many times longer than the
later ones (docs/buffers-sweep.md, "Outliers of fresh memory on a VM").
"""
import subprocess
import sys

CHILD = r"""
import resource, sys, time
import numpy as np
n = int(float(sys.argv[1]) * (1 << 30))
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
a = np.empty(n, dtype=np.uint8)
a.fill(1)
t1 = time.perf_counter()
r1 = resource.getrusage(resource.RUSAGE_SELF)
print("%s GiB: %.0f ms, system %.0f ms, minor faults %d"
      % (sys.argv[1], (t1 - t0) * 1e3, (r1.ru_stime - r0.ru_stime) * 1e3,
         r1.ru_minflt - r0.ru_minflt))
"""


def main():
    gib = sys.argv[1] if len(sys.argv) > 1 else "1"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    for _ in range(runs):
        subprocess.run([sys.executable, "-c", CHILD, gib], check=True)
    try:
        with open("/sys/module/page_reporting/parameters/page_reporting_order") as f:
            print("free page reporting: order", f.read().strip())
    except OSError:
        print("free page reporting: not loaded")


if __name__ == "__main__":
    main()
