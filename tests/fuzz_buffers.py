"""Finalizer-fuzz building block for buffers (numpy arrays, torch tensors).

``fragment(rng)`` returns ``(frag, mutate)``:

- ``frag``: a dict of named nodes (a small graph fragment to embed in a bigger random graph):
  numpy float and object-dtype arrays (plus views of bases that are never resized), torch
  tensors, views, Parameters and small ``nn.Module``s -- only those of numpy/torch that are
  installed (neither imported here otherwise); without either, ``frag`` is ``{}``.
- ``mutate()``: mutates, frees or rebinds parts of the fragment, as a ``__del__`` of cyclic
  garbage may in the middle of a copy: resizes an array that nothing views (``refcheck=False``),
  replaces object-array items, fills, rebinds a Parameter's ``.data``, ``set_()``s or resizes
  a tensor, swaps a module's parameter, registers a buffer, drops a node from ``frag``.  It
  draws from its own ``random.Random`` (seeded from ``rng``), never raises, and returns a
  short description of what it did.  Each mutation is one the stdlib's deepcopy survives
  (no resize of an array with views, no storage shrunk under a tensor), so comparing with
  ``copy.deepcopy`` is meaningful.

``snapshot(frag)`` records the values of every node (call it before the copy and again from
the finalizer right after ``mutate()``); ``check(result, before, after)`` lists the nodes of a
copied fragment that match neither snapshot: a copy must be the source as it was before or
after the change, node by node, never a mix and never freed memory.
"""
import random
import sys


def _np():
    return sys.modules.get("numpy") if "numpy" in sys.modules else _try("numpy")


def _torch():
    return sys.modules.get("torch") if "torch" in sys.modules else _try("torch")


def _try(name):
    try:
        return __import__(name)
    except ImportError:
        return None


def freeze_imports():
    """Import numpy and torch (those installed) and move everything alive now out of the
    collector's reach (``gc.freeze()``), once, before a fuzz loop.  Those loops collect all the
    time with thresholds this low, and each full collection would walk torch's few hundred
    thousand objects again: 212 s instead of 10 s for the suite's finalizer fuzz on 3.11, with
    the same bombs fired.  What the cases make afterwards is collected as before."""
    import gc
    _np(), _torch()
    gc.collect()
    gc.freeze()


class _Box:
    """A small user object held in object arrays."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return type(other) is _Box and other.v == self.v

    __hash__ = None


def fragment(rng, np=None, torch=None):
    """(frag, mutate) built from rng; np/torch default to the installed modules (pass False
    to leave one out)."""
    np = _np() if np is None else (np or None)
    torch = _torch() if torch is None else (torch or None)
    frag = {}
    roles = {}          # name -> role (what a mutation may do to it)
    made = {}           # name -> the node made for it
    n = 0

    def add(node, role):
        nonlocal n
        name = "b%d" % n
        n += 1
        frag[name] = node
        roles[name] = role
        made[name] = node
        return name

    if np is not None:
        for _ in range(rng.randint(1, 3)):
            k = rng.choice([3, 17, 1000, 1 << 17])      # up to 1 MiB: the pooled size
            add(np.arange(k, dtype=rng.choice(["float64", "float32", "int32"])), "np_resizable")
        base = np.arange(rng.choice([12, 4096]), dtype="float64").reshape(-1, 4)
        add(base, "np_base")
        add(base[1::2], "np_view")
        add(base.T, "np_view")
        for _ in range(rng.randint(1, 2)):
            k = rng.randint(1, 12)
            o = np.empty(k, dtype=object)
            for i in range(k):
                o[i] = rng.choice([[i, [i]], _Box(i), None, (i, [i]), {"k": [i]}])
            add(o, "np_object")
    if torch is not None:
        g = torch.Generator().manual_seed(rng.randrange(1 << 30))
        for _ in range(rng.randint(1, 3)):
            k = rng.choice([4, 64, 1 << 14, 1 << 16])   # 64 KiB and up are deferred
            add(torch.randn(k, generator=g), "t_plain")
        for _ in range(rng.randint(1, 2)):
            k = rng.choice([4, 1 << 15])
            add(torch.nn.Parameter(torch.randn(k, generator=g),
                                   requires_grad=rng.random() < 0.5), "t_param")
        base = torch.randn(rng.choice([8, 1 << 15]), generator=g)
        add(base, "t_base")
        add(base[1:], "t_view")
        if rng.random() < 0.7:
            m = torch.nn.Linear(rng.choice([2, 64]), 3)
            add(m, "t_module")

    mrng = random.Random(rng.randrange(1 << 30))

    def mutate():
        try:
            return _mutate(mrng, frag, roles, made, np, torch)
        except Exception as e:  # noqa: BLE001 -- a finalizer must not raise
            return "failed: %s: %s" % (type(e).__name__, e)

    return frag, mutate


def _mutate(rng, frag, roles, made, np, torch):
    names = [k for k in roles if k in frag]
    if not names:
        return "nothing left"
    done = []
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(names)
        try:
            _step(rng, frag, roles, made, np, torch, name, done)
        except Exception as e:  # noqa: BLE001 -- e.g. a storage set_() made unresizable
            done.append("%s failed: %s" % (name, type(e).__name__))
    return ", ".join(done) or "nothing"


def _step(rng, frag, roles, made, np, torch, name, done):
    role = roles[name]
    node = frag.get(name)
    if node is not None and node is not made[name]:
        # the finalizer fuzz's own bombs put something else there (a fresh dict: its role's
        # `node[...] = v` would add an Ellipsis key, a value no graph holds)
        done.append("%s replaced: left" % name)
        return
    if node is not None:
        what = rng.random()
        if what < 0.15:
            frag.pop(name, None)
            done.append("drop %s" % name)
            return
        if role == "np_resizable":
            if what < 0.6:
                node.resize((rng.choice([0, 1, 5, 1 << 18]),), refcheck=False)
                done.append("resize %s" % name)
            else:
                node.fill(rng.randint(-5, 5))
                done.append("fill %s" % name)
        elif role in ("np_base", "np_view"):
            node[...] = rng.randint(-5, 5)
            done.append("fill %s" % name)
        elif role == "np_object":
            if len(node) and what < 0.6:
                node[rng.randrange(len(node))] = [rng.random()]
                done.append("item %s" % name)
            else:
                node.resize((rng.randint(0, 6),), refcheck=False)
                done.append("resize %s" % name)
        elif role in ("t_plain", "t_base", "t_view", "t_param"):
            with torch.no_grad():
                if role == "t_param" and what < 0.6:
                    node.data = torch.zeros(rng.choice([0, 3, node.numel()]))
                    done.append("rebind %s.data" % name)
                elif role == "t_plain" and what < 0.45:
                    node.set_()
                    done.append("set_ %s" % name)
                elif role in ("t_plain", "t_base") and what < 0.7:
                    # bigger: the storage moves (torch keeps the prefix); smaller: it stays
                    node.resize_(rng.choice([1, node.numel() * 2 + 1]))
                    done.append("resize_ %s" % name)
                else:
                    node.fill_(rng.randint(-5, 5))
                    done.append("fill_ %s" % name)
        elif role == "t_module":
            if what < 0.5:
                node.weight = torch.nn.Parameter(torch.zeros_like(node.weight))
                done.append("swap %s.weight" % name)
            elif what < 0.8:
                node.register_buffer("extra%d" % rng.randrange(3), torch.ones(2))
                done.append("buffer %s" % name)
            else:
                with torch.no_grad():
                    node.bias.data = torch.zeros(1)
                done.append("rebind %s.bias.data" % name)


# ---------------------------------------------------------------------------------------------
# consistency

def _value(node):
    """A comparable, deep snapshot of one node's contents."""
    mod = type(node).__module__
    if mod.startswith("numpy"):
        if node.dtype == object:
            import copy
            return ("np_object", node.shape, copy.deepcopy(node.tolist()))
        return ("np", node.dtype.str, node.shape, node.tobytes())
    if mod.startswith("torch"):
        torch = sys.modules["torch"]
        if isinstance(node, torch.nn.Module):
            sd = {k: _value(v) for k, v in node.named_parameters(recurse=True)}
            sd.update({"buffer:" + k: _value(v) for k, v in node.named_buffers()})
            return ("module", sd)
        t = node.detach()
        return ("tensor", type(node).__name__, str(t.dtype), tuple(t.shape),
                t.contiguous().numpy().tobytes() if t.numel() else b"")
    return ("other", repr(node))


def snapshot(frag):
    """name -> value of every node in frag now."""
    return {k: _value(v) for k, v in list(frag.items())}


def _torn(got, ok):
    """torch's own Tensor.__deepcopy__ copies the storage, then reads the size: a source
    resized in between gives a tensor of the later shape whose storage set_() grew, the
    earlier bytes first.  The stdlib gives that, so it is an outcome, not a mix."""
    # ("tensor", type name, dtype, shape, bytes)
    return (got[0] == "tensor" and any(
        o[0] == "tensor" and o[1:4] == got[1:4] for o in ok)
        and any(o[0] == "tensor" and o[1:3] == got[1:3] and len(o[4]) < len(got[4])
                and got[4].startswith(o[4]) for o in ok))


def _matches(got, ok):
    if got in ok or _torn(got, ok):
        return True
    # a module is a container: each entry as it was before or after
    return got[0] == "module" and all(
        any(o[0] == "module" and k in o[1] and _matches(v, [o[1][k]]) for o in ok)
        for k, v in got[1].items())


def check(result, before, after):
    """Problems (a list of strings) of a copied fragment against the before/after snapshots.
    after may be None (the mutation did not run)."""
    problems = []
    for name, node in result.items():
        if name not in before:
            problems.append("%s: not in the source" % name)
            continue
        got = _value(node)
        ok = [before[name]] + ([after[name]] if after and name in after else [])
        if not _matches(got, ok):
            problems.append("%s: %s matches neither snapshot" % (name, str(got)[:200]))
    return problems
