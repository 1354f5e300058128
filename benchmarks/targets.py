"""Issue-3 targets that are ratios to builtins: python benchmarks/targets.py (after building)."""
import os, sys
# the in-place build in the repository root, not an installed copy
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import copy, fastcopy, timeit, statistics, gc  # noqa: E402
from dataclasses import dataclass
def med(f, number, repeat=15):
    return statistics.median(timeit.repeat(f, number=number, repeat=repeat)) / number
L = [i * 0.25 for i in range(100_000)]
D = {i: str(i) for i in range(100_000)}
def paired(a, b, rounds=31, number=20):
    """Median over interleaved rounds of time(a) / time(b): both sides see the
    same moment of this shared machine's memory traffic."""
    return statistics.median(timeit.timeit(a, number=number) / timeit.timeit(b, number=number)
                             for _ in range(rounds))
print("atomic list 100k: deepcopy/list.copy = %.2f" % paired(lambda: fastcopy.deepcopy(L), L.copy))
print("atomic dict 100k: deepcopy/dict.copy = %.2f" % paired(lambda: fastcopy.deepcopy(D), D.copy))
tiny = {'a': [1, 2], 'b': (1, 2)}
big = {i: [i] for i in range(60_000)}
fresh = med(lambda: fastcopy.deepcopy(tiny), 20000)
def after():
    fastcopy.deepcopy(big)
    t0 = timeit.default_timer()
    for _ in range(1000): fastcopy.deepcopy(tiny)
    return (timeit.default_timer() - t0) / 1000
aft = statistics.median(after() for _ in range(9))
print("tiny after 60k-entry copy / fresh tiny = %.2f (fresh %.0f ns)" % (aft / fresh, fresh * 1e9))
class P:
    def __init__(self, i): self.a = i; self.b = str(i); self.c = [i]
@dataclass
class R:
    a: int; b: str; c: list
for name, o in [("plain", P(1)), ("dataclass", R(1, "x", [1]))]:
    print("copy.copy %s: x%.2f" % (name, med(lambda: copy.copy(o), 20000) / med(lambda: fastcopy.copy(o), 20000)))
