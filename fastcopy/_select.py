"""Selective copying: ``fastcopy.copy(x, deep=paths)``.

The result is ``copy.copy(x)`` in which each field named by a path is
replaced by its deep copy.  Every object along a path is shallow-copied (so
the source is never modified), its other fields stay shared, and all the
fields deep-copied by one call share one memo, so aliasing between them is
kept.

A path is a dotted string (``"optimizer.state"``) or a tuple of steps
(``("layers", 0, "weight")``).  A step is resolved against the object it is
applied to: a key for a mapping, an index for a list or tuple (a decimal
component of a dotted string counts as an index), an attribute otherwise
(instance ``__dict__``, ``__slots__``, dataclass fields).

All paths are resolved against the source before anything is built, so a
missing field raises AttributeError / KeyError / IndexError naming the whole
path, with nothing half-done anywhere.
"""
import builtins
from collections.abc import Mapping, MutableMapping

from . import _fastcopy  # type: ignore[attr-defined]  # a C extension: no stub of its own


# 3.15+: an exact frozendict along a path is rebuilt as a tuple is (copy.copy() returns it
# itself): a dict of its items with the named keys replaced, then frozendict(that)
_FROZENDICT = getattr(builtins, "frozendict", None)


class _Node:
    __slots__ = ("children", "leaf")

    def __init__(self):
        self.children = {}   # step -> _Node, in first-seen order
        self.leaf = False


def _render(path):
    return ".".join(str(s) for s in path)


def _parse(paths):
    if isinstance(paths, (str, tuple)):
        paths = [paths]
    try:
        items = list(paths)
    except TypeError:
        raise TypeError("deep= must be an iterable of paths (strings or tuples), "
                        "not %s" % type(paths).__name__) from None
    parsed = []
    for p in items:
        if isinstance(p, str):
            if not p or any(not part for part in p.split(".")):
                raise ValueError("malformed path %r: empty component" % (p,))
            steps = tuple(int(s) if s.isdecimal() else s for s in p.split("."))
            dotted = True
        elif isinstance(p, tuple):
            if not p:
                raise ValueError("malformed path (): a path needs at least one step")
            steps = p
            dotted = False
        else:
            raise TypeError("a path must be a dotted string or a tuple of steps, "
                            "not %s" % type(p).__name__)
        parsed.append((steps, dotted, p))
    return parsed


def _is_sequence(obj):
    return isinstance(obj, (list, tuple))


def _get(obj, step, dotted, path, upto):
    """(key, kind, child) for the child of obj named by step, resolved as
    documented above; kind is "item" or "attr".  Each look-up runs once:
    a __getitem__ or property may be user code with side effects."""
    where = _render(path[:upto + 1])
    if isinstance(obj, Mapping):
        key = step
        if dotted and isinstance(step, int) and step not in obj and str(step) in obj:
            key = str(step)
        try:
            return key, "item", obj[key]
        except KeyError:
            raise KeyError("%s (in path %r)" % (where, _render(path))) from None
    if _is_sequence(obj) and isinstance(step, int):
        try:
            return step, "item", obj[step]
        except IndexError:
            raise IndexError("index %d out of range at %s (in path %r)"
                             % (step, where, _render(path))) from None
    name = str(step) if dotted else step
    if not isinstance(name, str):
        raise TypeError("step %r at %s: %s is not a mapping or sequence, and an "
                        "attribute name must be a string"
                        % (step, where, type(obj).__name__))
    try:
        child = getattr(obj, name)
    except AttributeError:
        raise AttributeError("%r object has no attribute %r (at %s in path %r)"
                             % (type(obj).__name__, name, where, _render(path))) from None
    fields = getattr(type(obj), "_fields", None)
    if isinstance(obj, tuple) and fields and name in fields:
        return fields.index(name), "item", child         # a namedtuple field
    return name, "attr", child


def _set(parent_copy, key, value, kind):
    """Put value into the fresh shallow copy parent_copy."""
    if kind == "item":
        parent_copy[key] = value
    else:
        try:
            setattr(parent_copy, key, value)
        except AttributeError:
            # frozen dataclasses and the like: the copy is ours and fresh
            object.__setattr__(parent_copy, key, value)


def copy_paths(x, deep):
    parsed = _parse(deep)
    root = _Node()
    # Resolve every path against the source first: errors leave nothing built.
    resolved = {}          # id(trie node) -> (key, kind, source child)
    # (id(trie node), step, dotted) -> child trie node: a prefix shared by
    # several paths is looked up once, so all of them go through the same
    # objects even if a look-up is user code that answers differently
    steps_seen = {}
    for steps, dotted, original in parsed:
        node, obj = root, x
        for i, step in enumerate(steps):
            memo_key = (id(node), type(step), step, dotted)
            child_node = steps_seen.get(memo_key)
            if child_node is None:
                key, kind, child = _get(obj, step, dotted, steps, i)
                child_node = node.children.get(key)
                if child_node is None:
                    child_node = node.children[key] = _Node()
                    resolved[id(child_node)] = (key, kind, child)
                steps_seen[memo_key] = child_node
            node = child_node
            obj = resolved[id(node)][2]
        node.leaf = True
    if not root.children:
        return _fastcopy.copy(x)

    # The objects the paths run through are resolved (strong references
    # above) and shallow-copied before any deep copy runs: a __deepcopy__
    # hook that changes the source cannot make the result a mix of the
    # source before and after.  Each entry: (source, target, trie node).
    leaves = []
    leaf_at = {}                      # id(leaf trie node) -> index in leaves
    spine = []

    def shallow(src, node):
        if isinstance(src, tuple):
            if type(src) is not tuple and not hasattr(src, "_make"):
                raise TypeError("cannot rebuild a %s along a path" % type(src).__name__)
            target = list(src)
        elif _FROZENDICT is not None and isinstance(src, _FROZENDICT):
            if type(src) is not _FROZENDICT:
                raise TypeError("cannot rebuild a %s along a path" % type(src).__name__)
            target = dict(src)
        else:
            target = _fastcopy.copy(src)
            if target is src:
                raise TypeError("cannot replace a field of %s: copy.copy() returns "
                                "the object itself" % type(src).__name__)
            if isinstance(target, Mapping) and not isinstance(target, MutableMapping):
                raise TypeError("cannot replace a key of an immutable mapping %s"
                                % type(src).__name__)
        entry = (src, target, node)
        for child in node.children.values():
            if child.leaf:
                leaf_at[id(child)] = len(leaves)
                leaves.append(resolved[id(child)][2])
            else:
                shallow(resolved[id(child)][2], child)
        spine.append(entry)           # children first: filled bottom-up
        return entry

    top = shallow(x, root)
    # Deep-copy every leaf in one call, so they share one memo.
    copies = _fastcopy.deepcopy(leaves)
    built = {}                        # id(trie node) -> its finished copy
    for src, target, node in spine:
        for child in node.children.values():
            key, kind, _ = resolved[id(child)]
            new = copies[leaf_at[id(child)]] if child.leaf else built[id(child)]
            _set(target, key, new, kind)
        if isinstance(src, tuple):
            target = tuple(target) if type(src) is tuple else src._make(target)
        elif _FROZENDICT is not None and type(src) is _FROZENDICT:
            target = _FROZENDICT(target)
        built[id(node)] = target
    return built[id(top[2])]
