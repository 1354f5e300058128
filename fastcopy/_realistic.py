"""The realistic suite behind ``python -m fastcopy --realistic`` and ``benchmarks/test_realistic.py``.

What users copy, built in code from the libraries they copy it with (no weights or data are
downloaded: models come from small configs, data from seeded generators): transformers configs and
models, torch modules, ``state_dict()``s and Adam states, fitted sklearn estimators and
``sklearn.clone``, pandas frames, nested pydantic v2 models and ``model_copy(deep=True)``,
omegaconf configs and ``OmegaConf.merge``, RL step dicts and replay buffers, records of sets and of
datetime/Decimal/UUID/Fraction/Enum values, object graphs with cycles and shared references.

Two kinds of workload:

* ``deepcopy`` workloads time one ``deepcopy(payload)`` per op in two *modes*: **direct**
  (``copy.deepcopy`` vs ``fastcopy.deepcopy`` vs ``copium.deepcopy``) and **patched**
  (``copy.deepcopy`` unpatched vs with ``fastcopy.patch()`` vs with ``copium.patch.enable()``), so
  that the ``copy.deepcopy`` calls made by library hooks (pydantic's ``BaseModel.__deepcopy__``,
  omegaconf's, torch's ``Tensor.__deepcopy__``) go through the library under test as well.
* ``call`` workloads time a library function that deep-copies internally (``model_copy``,
  ``sklearn.clone``, ``OmegaConf.merge``): patched mode only.

Method: every workload runs in its own child process (no allocator or type-cache state carried
over from another workload; a crash or a hang loses one row).  In the child each implementation is
warmed up, its result is checked against the stdlib's (:func:`compare`: types, values, tensors,
frames, and the aliasing pattern, both among the copy's nodes and with the source), its loops per
sample are calibrated, then the samples are taken round-robin, the order rotating every round,
patching switched on and off around each sample.  The clock is CPU time (``time.process_time``:
user + system of every thread of the process) unless asked otherwise; the user/system split from
``getrusage`` is kept in the JSON.  Reported: the median per op.

copium's native memo is not a dict; a hook that treats its memo as one (torch's
``memo.setdefault("torch", {})``) makes it raise.  Each workload first tries copium with its
native memo and ``on_incompatible="raise"``; if that raises, copium is timed with its dict memo
(``copium.config.apply(memo="dict")``) and the row says so.

Nothing here imports fastcopy, copium or any benchmarked library at import time.
"""
# Untyped on purpose (a benchmark driver): mypy, which `python -m mypy.stubtest fastcopy` runs on
# every submodule, would otherwise report its untyped module-level dicts and the pydantic models
# declared inside a function (pydantic is imported only when the suite runs).
# mypy: ignore-errors
import collections
import copy
import dataclasses
import datetime
import decimal
import enum
import fractions
import gc
import importlib
import importlib.util
import itertools
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

from . import _bench

__all__ = ["Workload", "WORKLOADS", "get", "select", "missing", "compare", "Mismatch",
           "build_impls", "run_child", "run_suite", "format_table", "main"]


# ---------------------------------------------------------------------------------------------
# Payload classes that need only the stdlib (module level: stable qualnames)
# ---------------------------------------------------------------------------------------------

class Side(enum.Enum):
    BUY = "buy"
    SELL = "sell"
    HOLD = "hold"


class Level(enum.IntEnum):
    LOW = 1
    MID = 2
    HIGH = 3


class GraphNode:
    def __init__(self, name, kind):
        self.name = name
        self.kind = kind
        self.parent = None
        self.children = []
        self.edges = []
        self.attrs = {}


Transition = collections.namedtuple("Transition", "state action reward next_state done")


class DequeReplay:
    """The PyTorch DQN tutorial's ``ReplayMemory``: a bounded deque of transitions."""

    def __init__(self, capacity):
        self.memory = collections.deque([], maxlen=capacity)
        self.episodes = 0


class ArrayReplay:
    """stable-baselines3's ``ReplayBuffer`` layout: preallocated arrays and a position."""

    def __init__(self, np, size, obs_dim, rng):
        self.buffer_size = size
        self.pos = size // 2
        self.full = False
        self.observations = rng.standard_normal((size, obs_dim), dtype=np.float32)
        self.next_observations = rng.standard_normal((size, obs_dim), dtype=np.float32)
        self.actions = rng.integers(0, 4, (size, 1)).astype(np.int64)
        self.rewards = rng.standard_normal((size,), dtype=np.float32)
        self.dones = rng.random(size) < 0.01
        self.timeouts = np.zeros(size, dtype=bool)
        self.obs_shape = (obs_dim,)
        self.device = "cpu"


# ---------------------------------------------------------------------------------------------
# Builders: each returns the payload (deterministic: seeded generators only)
# ---------------------------------------------------------------------------------------------

_TAGS = ["tag-%03d" % i for i in range(200)]
_ROLES = ["admin", "editor", "viewer", "owner", "billing", "support", "dev", "ops", "qa", "guest"]


def build_set_records():
    rng = random.Random(15)
    return [{"id": i, "name": "user-%d" % i,
             "tags": set(rng.sample(_TAGS, rng.randint(3, 8))),
             "roles": frozenset(rng.sample(_ROLES, rng.randint(1, 3))),
             "active": i % 5 != 0}
            for i in range(2000)]


def build_datetime_records():
    rng = random.Random(15)
    zones = [datetime.timezone.utc, datetime.timezone(datetime.timedelta(hours=2), "CEST"),
             datetime.timezone(datetime.timedelta(hours=-5))]
    t0 = datetime.datetime(2024, 1, 1, 9, 30)
    statuses = list(Side)
    out = []
    for i in range(5000):
        out.append({
            "ts": (t0 + datetime.timedelta(minutes=7 * i)).replace(tzinfo=zones[i % 3]),
            "day": datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 366),
            "took": datetime.timedelta(seconds=rng.randint(1, 10 ** 5), microseconds=i),
            "amount": decimal.Decimal(rng.randint(1, 10 ** 7)) / 100,
            "uid": uuid.UUID(int=rng.getrandbits(128), version=4),
            "ratio": fractions.Fraction(rng.randint(1, 99), rng.randint(100, 999)),
            "side": statuses[i % 3],
            "level": Level(1 + i % 3),
            "note": "order %d" % i,
        })
    return out


def build_dicts_after_hook():
    # the probe: 5,000 small dicts copy at one speed, and at another once one Decimal
    # (a type with its own __deepcopy__, so a hook sees the memo) is copied first
    return [decimal.Decimal("1.5")] + [{"a": i, "b": "x", "c": [i, 2]} for i in range(5000)]


def build_graph_objects():
    # 200 clusters of 10 objects: parent back-pointers, a ring of edges, random chords (cycles),
    # attribute dicts shared by every 4th node across clusters (shared references)
    rng = random.Random(15)
    shared = [{"color": "c%d" % i, "weight": i / 10} for i in range(25)]
    clusters = []
    for c in range(200):
        nodes = [GraphNode("n%d-%d" % (c, i), "leaf" if i else "root") for i in range(10)]
        for i, n in enumerate(nodes):
            if i:
                n.parent = nodes[(i - 1) // 2]
                n.parent.children.append(n)
            n.edges.append(nodes[(i + 1) % 10])
            n.edges.append(nodes[rng.randrange(10)])
            n.attrs = shared[(c + i) % 25] if i % 4 == 0 else {"w": rng.random(), "i": i}
        clusters.append(nodes[0])
    index = {n.name: n for root in clusters for n in _walk_tree(root)}
    return {"roots": clusters, "index": index, "shared": shared}


def _walk_tree(root):
    stack = [root]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def build_graph_adjacency():
    # networkx.Graph's layout: node -> attr dict, adj[u][v] is adj[v][u] (one edge dict, shared)
    rng = random.Random(15)
    n = 1000
    node = {i: {"label": "v%d" % i, "pos": (rng.random(), rng.random())} for i in range(n)}
    adj = {i: {} for i in range(n)}
    for _ in range(3000):
        u, v = rng.randrange(n), rng.randrange(n)
        if u != v and v not in adj[u]:
            d = {"weight": rng.random(), "kind": "road"}
            adj[u][v] = d
            adj[v][u] = d
    return {"graph": {"name": "roads"}, "_node": node, "_adj": adj}


def build_rl_steps():
    np = importlib.import_module("numpy")
    rng = np.random.default_rng(15)
    steps = []
    for t in range(1000):
        done = t % 200 == 199
        info = {"TimeLimit.truncated": False, "lives": np.int64(3),
                "stats": {"speed": np.float32(rng.random()), "x": np.float64(rng.random())}}
        if done:
            info["episode"] = {"r": np.float32(rng.random() * 100), "l": 200, "t": 1.25}
        steps.append({
            "obs": rng.standard_normal(8, dtype=np.float32),
            "action": np.int64(t % 4),
            "reward": np.float32(rng.random()),
            "terminated": done,
            "truncated": False,
            "value": np.float32(rng.random()),
            "log_prob": np.float32(-rng.random()),
            "info": info,
        })
    return steps


def build_replay_deque():
    np = importlib.import_module("numpy")
    rng = np.random.default_rng(15)
    mem = DequeReplay(10000)
    state = rng.standard_normal(4, dtype=np.float32)
    for t in range(2000):
        nxt = rng.standard_normal(4, dtype=np.float32)
        mem.memory.append(Transition(state, int(t % 2), float(rng.random()), nxt, t % 100 == 99))
        state = nxt
    mem.episodes = 20
    return mem


def build_replay_arrays():
    np = importlib.import_module("numpy")
    return ArrayReplay(np, 50000, 16, np.random.default_rng(15))


def _torch():
    torch = importlib.import_module("torch")
    torch.manual_seed(15)
    return torch


def _quiet_transformers():
    tf = importlib.import_module("transformers")
    try:
        tf.logging.set_verbosity_error()
    except Exception:                                  # noqa: BLE001 - cosmetic only
        pass
    return tf


def build_gpt2_model():
    _torch()
    tf = _quiet_transformers()
    cfg = tf.GPT2Config(vocab_size=16000, n_positions=512, n_embd=256, n_layer=4, n_head=4,
                        bos_token_id=0, eos_token_id=0)
    return tf.GPT2LMHeadModel(cfg).eval()             # ~29.5 MB, lm_head tied to wte


def build_llama_model():
    _torch()
    tf = _quiet_transformers()
    cfg = tf.LlamaConfig(vocab_size=8000, hidden_size=256, intermediate_size=688,
                         num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4,
                         max_position_embeddings=512, bos_token_id=0, eos_token_id=1)
    return tf.LlamaForCausalLM(cfg).eval()            # ~29 MB


def build_hf_configs():
    tf = _quiet_transformers()
    out = []
    for k in range(4):
        out.append(tf.GPT2Config(n_layer=4 + k, bos_token_id=0, eos_token_id=0))
        out.append(tf.LlamaConfig(num_hidden_layers=4 + k))
        out.append(tf.BertConfig(num_hidden_layers=4 + k))
        out.append(tf.T5Config(num_layers=4 + k))
        out.append(tf.ViTConfig(num_hidden_layers=4 + k))
    return out


def _cnn(torch):
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.1), nn.Linear(128, 10))


def _mlp(torch):
    nn = torch.nn
    layers = [nn.Linear(64, 512), nn.GELU()]
    for _ in range(4):
        layers += [nn.Linear(512, 512), nn.LayerNorm(512), nn.GELU()]
    layers.append(nn.Linear(512, 10))
    return nn.Sequential(*layers)                     # ~1.1M parameters, 4.5 MB


def build_torch_cnn():
    torch = _torch()
    m = _cnn(torch)
    m(torch.randn(2, 3, 16, 16))                      # BatchNorm running stats move off init
    return m


def build_torch_state_dict():
    torch = _torch()
    return _mlp(torch).state_dict()


def build_adam_state():
    torch = _torch()
    model = _mlp(torch)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss = model(torch.randn(8, 64)).square().mean()
    loss.backward()
    opt.step()
    return opt.state_dict()


def _sk_data():
    np = importlib.import_module("numpy")
    rng = np.random.default_rng(15)
    X = rng.standard_normal((2000, 20))
    y = (X[:, :3].sum(axis=1) + 0.5 * rng.standard_normal(2000) > 0).astype(int)
    return X, y


def build_sklearn_pipeline():
    pipeline = importlib.import_module("sklearn.pipeline")
    pre = importlib.import_module("sklearn.preprocessing")
    lin = importlib.import_module("sklearn.linear_model")
    X, y = _sk_data()
    return pipeline.Pipeline([("scale", pre.StandardScaler()),
                              ("clf", lin.LogisticRegression(max_iter=200))]).fit(X, y)


def build_sklearn_forest():
    ens = importlib.import_module("sklearn.ensemble")
    X, y = _sk_data()
    return ens.RandomForestClassifier(n_estimators=30, max_depth=8, random_state=15).fit(X, y)


def build_sklearn_clone():
    pipeline = importlib.import_module("sklearn.pipeline")
    pre = importlib.import_module("sklearn.preprocessing")
    lin = importlib.import_module("sklearn.linear_model")
    ens = importlib.import_module("sklearn.ensemble")
    ms = importlib.import_module("sklearn.model_selection")
    pipe = pipeline.Pipeline([("scale", pre.StandardScaler()),
                              ("clf", lin.LogisticRegression(C=0.5, class_weight={0: 1, 1: 2}))])
    grid = ms.GridSearchCV(pipe, {"clf__C": [0.1, 1.0, 10.0]}, cv=3)
    forest = ens.RandomForestClassifier(n_estimators=30, max_depth=8, random_state=15)
    return [pipe, grid, forest]


def call_sklearn_clone(payload):
    clone = importlib.import_module("sklearn.base").clone
    return [clone(est) for est in payload]


def build_pandas_frame():
    np = importlib.import_module("numpy")
    pd = importlib.import_module("pandas")
    rng = np.random.default_rng(15)
    n = 20000
    return pd.DataFrame({
        "user": ["u%d" % (i % 997) for i in range(n)],
        "amount": rng.standard_normal(n) * 100,
        "qty": rng.integers(1, 20, n),
        "flag": rng.random(n) < 0.3,
        "city": pd.Categorical(rng.choice(["Berlin", "Paris", "Rome", "Oslo"], n)),
        "ts": pd.date_range("2024-01-01", periods=n, freq="min", tz="UTC"),
    })


def build_pandas_frames():
    # many small frames, as in a dict of per-group results: per-object overhead, not bytes
    np = importlib.import_module("numpy")
    pd = importlib.import_module("pandas")
    rng = np.random.default_rng(15)
    return {"g%d" % g: pd.DataFrame({"x": rng.standard_normal(50), "y": rng.integers(0, 9, 50),
                                     "label": ["a", "b"] * 25})
            for g in range(100)}


_PYDANTIC = {}


def _pydantic_models():
    if _PYDANTIC:
        return _PYDANTIC
    pydantic = importlib.import_module("pydantic")
    typing = importlib.import_module("typing")
    BaseModel, Field = pydantic.BaseModel, pydantic.Field
    Optional, Any, Literal = typing.Optional, typing.Any, typing.Literal

    class Address(BaseModel):
        street: str
        city: str
        zip: str
        country: str = "DE"

    class Customer(BaseModel):
        id: uuid.UUID
        name: str
        email: str
        address: Address
        created: datetime.datetime
        tags: list = Field(default_factory=list)

    class Item(BaseModel):
        sku: str
        qty: int
        price: float
        dims: tuple = (0.0, 0.0, 0.0)
        attrs: dict = Field(default_factory=dict)

    class Order(BaseModel):
        id: int
        customer: Customer
        items: list
        status: Literal["new", "paid", "shipped"] = "new"
        shipped: Optional[datetime.date] = None
        meta: dict = Field(default_factory=dict)
        note: Optional[Any] = None

    Item.model_rebuild()
    _PYDANTIC.update(Address=Address, Customer=Customer, Item=Item, Order=Order)
    return _PYDANTIC


def build_pydantic_orders():
    m = _pydantic_models()
    rng = random.Random(15)
    t0 = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    customers = [m["Customer"](id=uuid.UUID(int=rng.getrandbits(128)), name="c%d" % i,
                               email="c%d@example.com" % i,
                               address=m["Address"](street="%d Main St" % i, city="Berlin",
                                                    zip="%05d" % i),
                               created=t0 + datetime.timedelta(days=i), tags=["vip"] * (i % 2))
                 for i in range(50)]
    orders = []
    for i in range(200):
        items = [m["Item"](sku="sku-%d" % (i * 5 + k), qty=1 + k, price=9.99 + k,
                           dims=(1.0, 2.0, 0.5 * k), attrs={"color": "red", "size": k})
                 for k in range(5)]
        orders.append(m["Order"](id=i, customer=customers[i % 50], items=items,
                                 status=("new", "paid", "shipped")[i % 3],
                                 shipped=datetime.date(2024, 2, 1) if i % 3 == 2 else None,
                                 meta={"source": "web", "retries": [i % 3]}))
    return orders


def call_pydantic_model_copy(payload):
    return [o.model_copy(deep=True) for o in payload]


def call_shallow_copies(payload):
    return [copy.copy(o) for o in payload]


def _omegaconf_tree():
    return {
        "seed": 15,
        "model": {"name": "llama-tiny", "hidden": 256, "layers": 4, "heads": 4,
                  "ffn": "${model.hidden}", "dropout": 0.1,
                  "blocks": [{"kind": "attn", "width": "${model.hidden}", "idx": i}
                             for i in range(8)]},
        "optimizer": {"name": "adamw", "lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1,
                      "schedule": {"warmup": 1000, "decay": "cosine", "min_lr": "${optimizer.lr}"}},
        "data": {"path": "/data/${model.name}", "batch_size": 32, "workers": 4,
                 "splits": {s: {"files": ["%s-%d.bin" % (s, k) for k in range(10)],
                                "shuffle": s == "train"} for s in ("train", "val", "test")}},
        "trainer": {"max_steps": 100000, "log_every": 50, "precision": "bf16",
                    "callbacks": [{"name": "ckpt", "every": 1000}, {"name": "lr_monitor"}],
                    "devices": [0, 1, 2, 3]},
        "experiments": {"run%d" % r: {"lr": 1e-4 * (r + 1), "tags": ["sweep", "r%d" % r]}
                        for r in range(20)},
    }


def build_omegaconf_config():
    oc = importlib.import_module("omegaconf")
    return oc.OmegaConf.create(_omegaconf_tree())


def build_omegaconf_merge():
    oc = importlib.import_module("omegaconf")
    base = oc.OmegaConf.create(_omegaconf_tree())
    override = oc.OmegaConf.create({"model": {"layers": 8}, "optimizer": {"lr": 1e-4},
                                    "trainer": {"devices": [0, 1]}})
    return (base, override)


def call_omegaconf_merge(payload):
    oc = importlib.import_module("omegaconf")
    return oc.OmegaConf.merge(*payload)


# ---------------------------------------------------------------------------------------------
# Hook-heavy workloads: the copy module's documented idiom, pydantic, attrs, frozen dataclasses
# ---------------------------------------------------------------------------------------------

class IdiomNode:
    """The copy module's documented ``__deepcopy__``: a new instance stored in the memo before
    each attribute is deep-copied with the memo it was given."""

    def __init__(self, name, children, meta):
        self.name = name
        self.children = children
        self.meta = meta

    def __deepcopy__(self, memo):
        cls = self.__class__
        result = cls.__new__(cls)
        memo[id(self)] = result
        for k, v in self.__dict__.items():
            setattr(result, k, copy.deepcopy(v, memo))
        return result


class PlainNode:
    """IdiomNode's twin without the hook: the same structure, copied through reduce."""

    def __init__(self, name, children, meta):
        self.name = name
        self.children = children
        self.meta = meta


def _idiom_payload(cls):
    node = cls("root", [cls("leaf%d" % i, [], {"w": [i, i + 1]}) for i in range(4)],
               {"tags": ["a", "b"], "shape": (3, 4)})
    return {"node": node, "rows": [{"a": i, "b": "x", "c": [i, 2]} for i in range(3000)]}


def build_hook_idiom():
    return _idiom_payload(IdiomNode)


def build_hook_idiom_free():
    return _idiom_payload(PlainNode)


@dataclasses.dataclass(frozen=True, slots=True)
class FrozenPoint:
    x: float
    y: float


@dataclasses.dataclass(frozen=True, slots=True)
class FrozenRecord:
    id: int
    name: str
    score: float
    tags: tuple
    pos: FrozenPoint
    meta: dict


def build_frozen_dataclasses():
    return [FrozenRecord(i, "r%d" % i, i / 7, ("a", "b"), FrozenPoint(i, -i),
                         {"ok": i % 2 == 0, "hist": [i, i + 1]}) for i in range(2000)]


_ATTRS = {}


def _attrs_classes():
    if _ATTRS:
        return _ATTRS
    attrs = importlib.import_module("attrs")

    @attrs.define
    class Point:
        x: float
        y: float

    @attrs.define
    class Record:
        id: int
        name: str
        score: float
        tags: list
        pos: Point
        meta: dict = attrs.field(factory=dict)

    @attrs.frozen
    class FPoint:
        x: float
        y: float

    @attrs.frozen(cache_hash=True)
    class FRecord:
        id: int
        name: str
        tags: tuple
        pos: FPoint
        meta: dict = attrs.field(factory=dict, hash=False)

    _ATTRS.update(Point=Point, Record=Record, FPoint=FPoint, FRecord=FRecord)
    return _ATTRS


def build_attrs_records():
    a = _attrs_classes()
    return [a["Record"](i, "r%d" % i, i / 7, ["a", "b"], a["Point"](i, -i),
                        {"ok": i % 2 == 0, "hist": [i, i + 1]}) for i in range(2000)]


def build_attrs_frozen():
    a = _attrs_classes()
    return [a["FRecord"](i, "r%d" % i, ("a", "b"), a["FPoint"](i, -i), {"hist": [i]})
            for i in range(2000)]


_PYDANTIC_CHAT = {}


def _pydantic_chat_models():
    if _PYDANTIC_CHAT:
        return _PYDANTIC_CHAT
    pydantic = importlib.import_module("pydantic")
    typing = importlib.import_module("typing")
    BaseModel, Field = pydantic.BaseModel, pydantic.Field
    Optional, Literal, Any = typing.Optional, typing.Literal, typing.Any

    class FunctionCall(BaseModel):
        name: str
        arguments: str

    class ToolCall(BaseModel):
        id: str
        type: Literal["function"] = "function"
        function: FunctionCall

    class Message(BaseModel):
        role: Literal["system", "user", "assistant", "tool"]
        content: Optional[str] = None
        tool_calls: Optional[list[ToolCall]] = None
        tool_call_id: Optional[str] = None
        name: Optional[str] = None

    class ToolParameters(BaseModel):
        type: str = "object"
        properties: dict[str, Any] = Field(default_factory=dict)
        required: list[str] = Field(default_factory=list)

    class ToolFunction(BaseModel):
        name: str
        description: str
        parameters: ToolParameters

    class Tool(BaseModel):
        type: Literal["function"] = "function"
        function: ToolFunction

    class Conversation(BaseModel):
        model: str
        messages: list[Message]
        tools: list[Tool]
        temperature: float = 0.7
        metadata: dict[str, Any] = Field(default_factory=dict)

    class Usage(BaseModel):
        prompt_tokens: int
        completion_tokens: int
        total_tokens: int

    class Choice(BaseModel):
        index: int
        message: Message
        finish_reason: Optional[str] = None
        logprobs: Optional[Any] = None

    class ChatCompletion(BaseModel):
        id: str
        object: str = "chat.completion"
        created: int
        model: str
        choices: list[Choice]
        usage: Usage
        system_fingerprint: Optional[str] = None

    _PYDANTIC_CHAT.update(FunctionCall=FunctionCall, ToolCall=ToolCall, Message=Message,
                          ToolParameters=ToolParameters, ToolFunction=ToolFunction, Tool=Tool,
                          Conversation=Conversation, Usage=Usage, Choice=Choice,
                          ChatCompletion=ChatCompletion)
    return _PYDANTIC_CHAT


def build_pydantic_conversation():
    # an agent's conversation: 4 tools, a system prompt, 10 user/assistant/tool rounds, the
    # assistant calling a tool in each (65 models in all)
    m = _pydantic_chat_models()
    tools = [m["Tool"](function=m["ToolFunction"](
        name="tool%d" % t, description="does thing %d" % t,
        parameters=m["ToolParameters"](properties={"q": {"type": "string"},
                                                   "n": {"type": "integer", "minimum": 0}},
                                       required=["q"])))
        for t in range(4)]
    msgs = [m["Message"](role="system", content="You are a helpful assistant.")]
    for r in range(10):
        msgs.append(m["Message"](role="user", content="question %d: " % r + "words " * 20))
        call = m["ToolCall"](id="call_%d" % r, function=m["FunctionCall"](
            name="tool%d" % (r % 4), arguments='{"q": "x%d", "n": %d}' % (r, r)))
        msgs.append(m["Message"](role="assistant", tool_calls=[call]))
        msgs.append(m["Message"](role="tool", tool_call_id="call_%d" % r,
                                 content="result %d " % r * 10))
    msgs.append(m["Message"](role="assistant", content="The answer is 42."))
    return m["Conversation"](model="gpt-x", messages=msgs, tools=tools,
                             metadata={"user": "u1", "trace": ["a", "b"]})


def build_pydantic_responses():
    m = _pydantic_chat_models()
    out = []
    for i in range(20):
        msg = m["Message"](role="assistant", content="answer %d " % i * 8)
        out.append(m["ChatCompletion"](
            id="chatcmpl-%d" % i, created=1700000000 + i, model="gpt-x",
            choices=[m["Choice"](index=0, message=msg, finish_reason="stop")],
            usage=m["Usage"](prompt_tokens=100 + i, completion_tokens=20, total_tokens=120 + i),
            system_fingerprint="fp_%d" % i))
    return out


def build_pydantic_settings():
    pydantic_settings = importlib.import_module("pydantic_settings")
    pydantic = importlib.import_module("pydantic")

    class Database(pydantic.BaseModel):
        url: str = "postgresql://localhost/app"
        pool_size: int = 10
        options: dict = pydantic.Field(default_factory=lambda: {"sslmode": "prefer"})

    class Settings(pydantic_settings.BaseSettings):
        app_name: str = "service"
        debug: bool = False
        workers: int = 4
        allowed_hosts: list = pydantic.Field(default_factory=lambda: ["a.example", "b.example"])
        db: Database = pydantic.Field(default_factory=Database)
        replicas: list = pydantic.Field(default_factory=lambda: [Database(url="r%d" % i)
                                                                 for i in range(3)])
        features: dict = pydantic.Field(default_factory=lambda: {"x": True, "y": [1, 2]})

    return [Settings() for _ in range(20)]


# ---------------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------------

class Workload:
    __slots__ = ("name", "requires", "description", "build", "call", "group")

    def __init__(self, name, group, requires, description, build, call=None):
        self.name = name
        self.group = group               # the library family, for the table and skips
        self.requires = requires         # import names that must be importable
        self.description = description
        self.build = build
        self.call = call                 # None: deepcopy workload; else call(payload)

    @property
    def kind(self):
        return "deepcopy" if self.call is None else "call"

    @property
    def modes(self):
        return ("direct", "patched") if self.call is None else ("patched",)

    def __repr__(self):
        return "<realistic workload %s (%s)>" % (self.name, self.kind)


_W = Workload
WORKLOADS = [
    _W("gpt2_model", "transformers", ("torch", "transformers"),
       "GPT2LMHeadModel from a small config (4 layers, d=256, vocab 16k; 29.5 MB, tied lm_head)",
       build_gpt2_model),
    _W("llama_model", "transformers", ("torch", "transformers"),
       "LlamaForCausalLM from a small config (4 layers, d=256, vocab 8k; 29 MB)",
       build_llama_model),
    _W("hf_configs", "transformers", ("transformers",),
       "20 transformers configs (GPT2, Llama, Bert, T5, ViT; defaults)", build_hf_configs),
    _W("torch_cnn", "torch", ("torch",),
       "nn.Sequential CNN (3 conv + BatchNorm + linear; 94k parameters, 34 tensors)",
       build_torch_cnn),
    _W("torch_state_dict", "torch", ("torch",),
       "state_dict() of an MLP (6 Linear + 4 LayerNorm; 1.1M parameters, 4.5 MB)",
       build_torch_state_dict),
    _W("adam_state", "torch", ("torch",),
       "torch.optim.Adam state_dict() after one step on that MLP (step, exp_avg, exp_avg_sq)",
       build_adam_state),
    _W("sklearn_pipeline", "sklearn", ("sklearn",),
       "fitted Pipeline(StandardScaler, LogisticRegression), 2000x20 data", build_sklearn_pipeline),
    _W("sklearn_forest", "sklearn", ("sklearn",),
       "fitted RandomForestClassifier (30 trees, depth 8)", build_sklearn_forest),
    _W("sklearn_clone", "sklearn", ("sklearn",),
       "sklearn.clone of a Pipeline, a GridSearchCV over it and a forest (unfitted)",
       build_sklearn_clone, call_sklearn_clone),
    _W("pandas_frame", "pandas", ("pandas",),
       "DataFrame 20,000 rows: str, float, int, bool, category, tz-aware datetime",
       build_pandas_frame),
    _W("pandas_frames", "pandas", ("pandas",),
       "dict of 100 small DataFrames (50 rows x 3 columns)", build_pandas_frames),
    _W("pydantic_orders", "pydantic", ("pydantic",),
       "200 nested pydantic v2 Orders (Customer > Address, 5 Items, dicts; shared customers)",
       build_pydantic_orders),
    _W("pydantic_model_copy", "pydantic", ("pydantic",),
       "order.model_copy(deep=True) for those 200 Orders", build_pydantic_orders,
       call_pydantic_model_copy),
    _W("pydantic_shallow", "pydantic", ("pydantic",),
       "copy.copy(order) for those 200 Orders (BaseModel.__copy__)", build_pydantic_orders,
       call_shallow_copies),
    _W("omegaconf_config", "omegaconf", ("omegaconf",),
       "omegaconf DictConfig of a training config (~330 nodes, interpolations, lists)",
       build_omegaconf_config),
    _W("omegaconf_merge", "omegaconf", ("omegaconf",),
       "OmegaConf.merge(base, override) of that config (deep-copies the base)",
       build_omegaconf_merge, call_omegaconf_merge),
    _W("rl_steps", "numpy", ("numpy",),
       "1,000 RL step dicts: float32 obs (8,), numpy scalars, bools, nested info dicts",
       build_rl_steps),
    _W("replay_deque", "numpy", ("numpy",),
       "DQN-tutorial replay memory: deque of 2,000 Transition namedtuples with (4,) arrays",
       build_replay_deque),
    _W("replay_arrays", "numpy", ("numpy",),
       "stable-baselines3-style replay buffer: 50,000 x 16 float32 arrays + scalars",
       build_replay_arrays),
    _W("set_records", "stdlib", (),
       "2,000 record dicts holding set[str] (3-8) and frozenset[str] (1-3)", build_set_records),
    _W("datetime_records", "stdlib", (),
       "5,000 records: tz-aware datetime, date, timedelta, Decimal, UUID, Fraction, Enum, str",
       build_datetime_records),
    _W("dicts_after_hook", "stdlib", (),
       "one Decimal, then 5,000 small dicts (the memo after a hook has seen it)",
       build_dicts_after_hook),
    _W("graph_objects", "stdlib", (),
       "2,000 objects in 200 clusters: parent links, edge rings and chords, shared attr dicts",
       build_graph_objects),
    _W("graph_adjacency", "stdlib", (),
       "networkx.Graph-style dicts: 1,000 nodes, ~3,000 edges, adj[u][v] is adj[v][u]",
       build_graph_adjacency),
    _W("hook_idiom", "hooks", (),
       "the copy module's documented __deepcopy__ idiom on a small tree, then 3,000 small dicts",
       build_hook_idiom),
    _W("hook_idiom_free", "hooks", (),
       "hook_idiom's structure without the hook (the same data through reduce)",
       build_hook_idiom_free),
    _W("frozen_dataclasses", "hooks", (),
       "2,000 @dataclass(frozen=True, slots=True) records with a nested frozen point",
       build_frozen_dataclasses),
    _W("attrs_records", "attrs", ("attrs",),
       "2,000 attrs @define (slotted) records with a nested point, a list and a dict",
       build_attrs_records),
    _W("attrs_frozen", "attrs", ("attrs",),
       "2,000 attrs @frozen(cache_hash=True) records with a nested frozen point",
       build_attrs_frozen),
    _W("pydantic_conversation", "pydantic", ("pydantic",),
       "an LLM agent conversation: 65 pydantic v2 models (messages, tool calls, tools)",
       build_pydantic_conversation),
    _W("pydantic_responses", "pydantic", ("pydantic",),
       "20 pydantic v2 chat-completion responses", build_pydantic_responses),
    _W("pydantic_settings", "pydantic", ("pydantic_settings",),
       "20 pydantic-settings BaseSettings objects with nested models", build_pydantic_settings),
]

_BY_NAME = {w.name: w for w in WORKLOADS}


def get(name):
    return _BY_NAME[name]


def select(patterns=None):
    """Workloads matching any glob in ``patterns`` (all without), in registry order.

    Raises ``KeyError`` naming a pattern that matches nothing."""
    if not patterns:
        return list(WORKLOADS)
    return _bench.select_glob(WORKLOADS, patterns)


def missing(workload):
    """The first required module that is not installed, or None."""
    for mod in workload.requires:
        try:
            if importlib.util.find_spec(mod) is None:
                return mod
        except (ImportError, ValueError):
            return mod
    return None


# ---------------------------------------------------------------------------------------------
# Result check: the copy against the stdlib's copy of the same source
# ---------------------------------------------------------------------------------------------

class Mismatch(AssertionError):
    """A copy that differs from the stdlib's: the message names the path and the difference."""


_ATOMIC = (int, float, complex, str, bytes, bool, type(None), range, type(Ellipsis),
           type(NotImplemented))
_VALUES = (datetime.date, datetime.time, datetime.timedelta, datetime.tzinfo, decimal.Decimal,
           fractions.Fraction, uuid.UUID)


def _value_eq(a, b):
    if isinstance(a, float) and a != a:
        return b != b
    if isinstance(a, decimal.Decimal) and a.is_nan():
        return b.is_nan() and str(a) == str(b)
    try:
        return bool(a == b)
    except Exception:                                   # noqa: BLE001
        return False


def _mod(name):
    return sys.modules.get(name)


def _tensor_check(a, b):
    torch = _mod("torch")
    for attr in ("dtype", "device", "shape", "requires_grad", "is_leaf", "layout"):
        if getattr(a, attr) != getattr(b, attr):
            return "tensor %s %r != %r" % (attr, getattr(a, attr), getattr(b, attr))
    if a.layout == torch.strided and a.stride() != b.stride():
        return "tensor stride %r != %r" % (a.stride(), b.stride())
    if a.is_floating_point() or a.is_complex():
        same = torch.equal(torch.nan_to_num(a.detach(), nan=0.0),
                           torch.nan_to_num(b.detach(), nan=0.0)) and \
            torch.equal(torch.isnan(a.detach()), torch.isnan(b.detach()))
    else:
        same = torch.equal(a.detach(), b.detach())
    return None if same else "tensor values differ"


def _ndarray_check(a, b):
    np = _mod("numpy")
    if a.dtype != b.dtype or a.shape != b.shape:
        return "ndarray dtype/shape %s%r != %s%r" % (a.dtype, a.shape, b.dtype, b.shape)
    if a.flags.writeable != b.flags.writeable:
        return "ndarray writeable flag differs"
    if a.dtype.hasobject:
        return None                                     # elements compared as children
    try:
        eq = np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    except TypeError:
        eq = np.array_equal(a, b)
    return None if eq else "ndarray values differ"


def _leaf_check(a, b):
    """None when equal; a message when not; NotImplemented when a has children to walk."""
    t = type(a)
    if isinstance(a, (datetime.datetime, datetime.time)):
        if not (_value_eq(a, b) and a.utcoffset() == b.utcoffset()):
            return "%r != %r" % (a, b)
        return None if a.tzinfo is None else NotImplemented     # walk to the tzinfo
    if isinstance(a, datetime.timezone):
        same = a == b and a.tzname(None) == b.tzname(None)
        return None if same else "%r != %r" % (a, b)
    if t in _ATOMIC or isinstance(a, _VALUES):
        return None if _value_eq(a, b) else "%r != %r" % (a, b)
    if isinstance(a, (set, frozenset)):
        return None if a == b else "set contents differ"
    np = _mod("numpy")
    if np is not None:
        if isinstance(a, np.generic):
            return None if _value_eq(a, b) else "%r != %r" % (a, b)
        if isinstance(a, np.ndarray):
            return _ndarray_check(a, b)
    pd = _mod("pandas")
    if pd is not None and isinstance(a, (pd.DataFrame, pd.Series, pd.Index)):
        if not a.equals(b):
            return "pandas %s.equals is False" % t.__name__
        if isinstance(a, pd.DataFrame) and not a.dtypes.equals(b.dtypes):
            return "DataFrame dtypes differ"
        if not isinstance(a, pd.Index) and (not a.index.equals(b.index)
                                            or (isinstance(a, pd.DataFrame)
                                                and not a.columns.equals(b.columns))):
            return "pandas index/columns differ"
        return None
    return NotImplemented


def _children(o):
    """(label, child) pairs walked by :func:`compare`, without calling user hooks."""
    kids = []
    if isinstance(o, (list, tuple, collections.deque)):
        kids = [("[%d]" % i, v) for i, v in enumerate(list(o))]
        if isinstance(o, collections.deque):
            kids.append((".maxlen", o.maxlen))
    elif isinstance(o, dict):
        for i, (k, v) in enumerate(list(dict.items(o))):
            kids.append(("<key %d>" % i, k))
            kids.append(("[%r]" % (k,), v))
        if isinstance(o, collections.defaultdict):
            kids.append((".default_factory", o.default_factory))
    elif isinstance(o, (datetime.datetime, datetime.time)):
        kids = [(".tzinfo", o.tzinfo)]
    torch = _mod("torch")
    if torch is not None and isinstance(o, torch.Tensor):
        kids.append((".grad", o.grad))
    np = _mod("numpy")
    if np is not None and isinstance(o, np.ndarray) and o.dtype.hasobject:
        kids.extend(("[%d]" % i, v) for i, v in enumerate(o.ravel().tolist()))
    try:
        d = object.__getattribute__(o, "__dict__")
    except Exception:                                   # noqa: BLE001
        d = None
    if isinstance(d, dict):
        kids.append((".__dict__", d))
    for name in _slot_names(type(o)):
        try:
            kids.append(("." + name, object.__getattribute__(o, name)))
        except AttributeError:
            kids.append(("." + name, _UNSET))
    return kids


_UNSET = object()
_SLOTS = {}


def _slot_names(cls):
    try:
        return _SLOTS[cls]
    except KeyError:
        pass
    names = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        for name in slots:
            if name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                name = "_%s%s" % (klass.__name__.lstrip("_"), name)
            names.append(name)
    _SLOTS[cls] = names
    return names


def _opaque(o):
    return isinstance(o, (type, enum.Enum, type(len), type(_opaque), type(sys),
                          type(_opaque.__code__)))


def _reduced(o):
    """The state a type without __dict__ or slots exposes to copy: its reduce value."""
    try:
        rv = o.__reduce_ex__(4)
    except Exception:                                   # noqa: BLE001
        return None
    return rv if isinstance(rv, tuple) else None


def _storage_ptr(t):
    try:
        s = t.untyped_storage()
        return s.data_ptr() if s.nbytes() else None
    except Exception:                                   # noqa: BLE001 - meta, sparse, ...
        return None


def _source_index(source):
    ids, ptrs, keep = set(), set(), []
    torch = _mod("torch")
    stack = [source]
    while stack:
        o = stack.pop()
        if id(o) in ids or type(o) in _ATOMIC:
            continue
        ids.add(id(o))
        keep.append(o)
        if _opaque(o):
            continue
        if torch is not None and isinstance(o, torch.Tensor):
            p = _storage_ptr(o)
            if p is not None:
                ptrs.add(p)
        kids = _children(o)
        if not kids and _leaf_check(o, o) is NotImplemented:
            rv = _reduced(o)
            if rv is not None:
                keep.append(rv)
                kids = [("", x) for x in rv[1:]]
        stack.extend(v for _, v in kids)
    return ids, ptrs, keep


def compare(expected, actual, source=None):
    """Raise :class:`Mismatch` unless ``actual`` has the shape of ``expected``.

    ``expected`` is the stdlib's copy of ``source``, ``actual`` another implementation's.  Both
    are walked in step: types must match; atomic and value-like objects (numbers, strings,
    datetime, Decimal, UUID, numpy scalars), sets, ndarrays, tensors (dtype, shape, stride,
    requires_grad, values; storages shared alike), and pandas objects (``equals``) compare by
    value; containers and objects by their items, ``__dict__`` and slots; other C types by their
    ``__reduce_ex__(4)`` value.  The aliasing pattern must agree: one node of ``expected`` pairs
    with one node of ``actual`` throughout, and a node is shared with ``source`` in one exactly
    when it is in the other.
    """
    src_ids, src_ptrs, keep = _source_index(source) if source is not None else (set(), set(), [])
    torch = _mod("torch")
    fwd, back, ptr_fwd, ptr_back = {}, {}, {}, {}
    stack = [("<root>", expected, actual)]
    keep.append(stack)
    while stack:
        path, a, b = stack.pop()
        if a is b:
            continue
        if a is _UNSET or b is _UNSET:
            raise Mismatch("%s: slot set in one copy only" % path)
        if type(a) is not type(b):
            raise Mismatch("%s: type %s != %s" % (path, type(a).__qualname__,
                                                  type(b).__qualname__))
        ia, ib = id(a), id(b)
        if (ia in src_ids) != (ib in src_ids):
            raise Mismatch("%s: %s shared with the source in %s copy only"
                           % (path, type(a).__qualname__,
                              "the stdlib's" if ia in src_ids else "this"))
        if ia in fwd or ib in back:
            if fwd.get(ia) != ib or back.get(ib) != ia:
                raise Mismatch("%s: aliasing differs (a %s shared in one copy, not the other)"
                               % (path, type(a).__qualname__))
            continue
        fwd[ia], back[ib] = ib, ia
        keep.append(a)
        keep.append(b)
        if _opaque(a):
            raise Mismatch("%s: %r is not %r" % (path, a, b))
        msg = _leaf_check(a, b)
        if msg is None:
            continue
        if msg is not NotImplemented:
            raise Mismatch("%s: %s" % (path, msg))
        if torch is not None and isinstance(a, torch.Tensor):
            msg = _tensor_check(a, b)
            if msg:
                raise Mismatch("%s: %s" % (path, msg))
            pa, pb = _storage_ptr(a), _storage_ptr(b)
            if pa is not None or pb is not None:
                if (pa in src_ptrs) != (pb in src_ptrs):
                    raise Mismatch("%s: tensor storage shared with the source in one copy only"
                                   % path)
                if ptr_fwd.setdefault(pa, pb) != pb or ptr_back.setdefault(pb, pa) != pa:
                    raise Mismatch("%s: tensor storage sharing differs" % path)
        ka, kb = _children(a), _children(b)
        if not ka and not kb:
            ra, rb = _reduced(a), _reduced(b)
            if ra is None or rb is None:
                if not _value_eq(a, b):
                    raise Mismatch("%s: %s objects differ (==)" % (path, type(a).__qualname__))
                continue
            keep.append(ra)
            keep.append(rb)
            ka = [("<reduce %d>" % i, x) for i, x in enumerate(ra[1:])]
            kb = [("<reduce %d>" % i, x) for i, x in enumerate(rb[1:])]
        if len(ka) != len(kb) or [k for k, _ in ka if k.startswith(".")] != \
                [k for k, _ in kb if k.startswith(".")]:
            raise Mismatch("%s: %s has %d parts, %d in the stdlib's copy"
                           % (path, type(a).__qualname__, len(kb), len(ka)))
        for (la, va), (_, vb) in zip(reversed(ka), reversed(kb)):
            stack.append((path + la if la.startswith((".", "[")) else path + " " + la, va, vb))
    pyd = _mod("pydantic")
    if pyd is not None:
        for a, b in _paired_models(expected, actual, pyd.BaseModel):
            if a != b:
                raise Mismatch("pydantic model %s: == is False" % type(a).__qualname__)


def _paired_models(expected, actual, base):
    if isinstance(expected, base):
        return [(expected, actual)]
    if isinstance(expected, list) and expected and isinstance(expected[0], base):
        return list(zip(expected, actual))
    return []


# ---------------------------------------------------------------------------------------------
# Implementations and the per-workload runner (in the child process)
# ---------------------------------------------------------------------------------------------

class Impl:
    """One timed series: ``op()`` between ``enter()`` and ``leave()`` (patching)."""
    __slots__ = ("name", "mode", "label", "op", "enter", "leave")

    def __init__(self, name, mode, label, op, enter=None, leave=None):
        self.name, self.mode, self.label, self.op = name, mode, label, op
        self.enter, self.leave = enter or _nothing, leave or _nothing


def _nothing():
    pass


def _copium_memo(copium_mod, memo):
    cfg = getattr(copium_mod, "config", None)
    if cfg is not None and hasattr(cfg, "apply"):
        if memo == "native":
            cfg.apply(memo="native", on_incompatible="raise")
        else:
            cfg.apply(memo="dict")
    else:                                               # pragma: no cover - other copium API
        copium_mod.configure(memo=memo)


def build_impls(workload, payload, fastcopy_mod, copium_mod, modes=("direct", "patched")):
    """The timed series for a workload: "stdlib" first, then per mode fastcopy and copium
    (names "fastcopy", "copium" for direct, "fastcopy_patched", "copium_patched")."""
    import copy as _copy
    std_deepcopy = _copy.deepcopy          # patch() keeps this object and swaps its code
    if workload.call is None:
        def op_of(fn):
            return lambda: fn(payload)
    else:
        call = workload.call

        def op_of(fn):
            return lambda: call(payload)
    impls = [Impl("stdlib", None, "copy.deepcopy" if workload.call is None else "stdlib",
                  op_of(std_deepcopy if workload.call is None else None))]
    modes = [m for m in modes if m in workload.modes]
    if "direct" in modes:
        if fastcopy_mod is not None:
            impls.append(Impl("fastcopy", "direct", "fastcopy.deepcopy",
                              op_of(fastcopy_mod.deepcopy)))
        if copium_mod is not None:
            impls.append(Impl("copium", "direct", "copium.deepcopy", op_of(copium_mod.deepcopy)))
    if "patched" in modes:
        if fastcopy_mod is not None:
            impls.append(Impl("fastcopy_patched", "patched", "fastcopy.patch()",
                              op_of(std_deepcopy), fastcopy_mod.patch, fastcopy_mod.unpatch))
        if copium_mod is not None:
            cp = importlib.import_module("copium.patch")
            impls.append(Impl("copium_patched", "patched", "copium.patch.enable()",
                              op_of(std_deepcopy), cp.enable, cp.disable))
    return impls


_getrusage = None


def _rusage():
    global _getrusage
    if _getrusage is None:
        try:
            import resource
            _getrusage = lambda: resource.getrusage(resource.RUSAGE_SELF)  # noqa: E731
        except ImportError:                             # pragma: no cover - Windows
            _getrusage = lambda: None                   # noqa: E731
    return _getrusage()


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def _sample(impl, loops, clock, _rep=itertools.repeat):
    op = impl.op
    impl.enter()
    try:
        r0 = _rusage()
        t0 = clock()
        for _ in _rep(None, loops):
            op()
        t = clock() - t0
        r1 = _rusage()
    finally:
        impl.leave()
    if r0 is None:
        return t, None, None
    return t, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime


def _once(impl):
    impl.enter()
    try:
        return impl.op()
    finally:
        impl.leave()


def run_child(name, repeats=11, target=0.03, clock="cpu", modes=("direct", "patched"),
              with_copium=True, collect=True, torch_threads=1, progress=None):
    """Run one workload in this process; return its result as a JSON-able dict."""
    w = get(name)
    res = {"workload": name, "group": w.group, "kind": w.kind, "description": w.description,
           "modes": [m for m in modes if m in w.modes], "times": {}, "samples": {}, "loops": {},
           "user_s": {}, "sys_s": {}, "labels": {}, "errors": {}, "checks": {},
           "copium_memo": None, "copium_native_error": None, "skipped": None}
    need = missing(w)
    if need:
        res["skipped"] = "needs %s, which is not installed" % need
        return res
    try:
        if torch_threads and "torch" in w.requires:
            importlib.import_module("torch").set_num_threads(torch_threads)
        if "torch" in w.requires:
            res["torch_threads"] = importlib.import_module("torch").get_num_threads()
        t0 = time.perf_counter()
        payload = w.build()
        res["build_s"] = time.perf_counter() - t0
    except ImportError as exc:
        res["skipped"] = "needs %s: %s" % (exc.name or "a library", exc)
        return res
    fastcopy_mod = importlib.import_module("fastcopy")
    copium_mod = None
    if with_copium:
        try:
            copium_mod = importlib.import_module("copium")
        except ImportError:
            copium_mod = None
    was_patched = fastcopy_mod.is_patched()
    if was_patched:                     # the stdlib series must be the stdlib
        fastcopy_mod.unpatch()
    saved = _copium_config(copium_mod)
    try:
        return _run_impls(res, w, payload, fastcopy_mod, copium_mod, repeats, target, clock,
                          modes, collect, progress)
    finally:
        if was_patched:
            fastcopy_mod.patch()
        if saved is not None:
            copium_mod.config.apply(**saved)


def _copium_config(copium_mod):
    cfg = getattr(copium_mod, "config", None)
    try:
        saved = dict(cfg.get())
    except Exception:                                   # noqa: BLE001 - other copium API
        return None
    if saved.get("memo") == "dict":     # the other keys apply only to the native memo
        return {"memo": "dict"}
    saved["suppress_warnings"] = list(saved.get("suppress_warnings") or ()) or None
    return saved


def _run_impls(res, w, payload, fastcopy_mod, copium_mod, repeats, target, clock, modes,
               collect, progress):
    name = w.name
    impls = build_impls(w, payload, fastcopy_mod, copium_mod, modes)
    timer = CLOCKS[clock]

    if progress:
        progress("%s: stdlib reference copy" % name)
    std = impls[0]
    try:
        expected = _once(std)
    except Exception as exc:                            # noqa: BLE001 - reported
        res["errors"]["stdlib"] = "%s: %s" % (type(exc).__name__, exc)
        return res

    if copium_mod is not None:
        # native memo first; the dict memo where a hook rejects the native one
        _copium_memo(copium_mod, "native")
        res["copium_memo"] = "native"
        for impl in impls:
            if impl.name.startswith("copium"):
                try:
                    _once(impl)
                except Exception as exc:                # noqa: BLE001 - the documented fallback
                    res["copium_memo"] = "dict"
                    res["copium_native_error"] = "%s: %s" % (type(exc).__name__, exc)
                    _copium_memo(copium_mod, "dict")
                    break

    live = [std]
    for impl in impls[1:]:
        try:
            got = _once(impl)
        except Exception as exc:                        # noqa: BLE001 - reported
            res["errors"][impl.name] = "%s: %s" % (type(exc).__name__, exc)
            continue
        try:
            compare(expected, got, payload)
            res["checks"][impl.name] = "ok"
        except Mismatch as exc:
            res["checks"][impl.name] = "FAILED: %s" % exc
        except Exception as exc:                        # noqa: BLE001 - the checker itself
            res["checks"][impl.name] = "FAILED: checker raised %s: %s" % (type(exc).__name__,
                                                                           exc)
        del got
        live.append(impl)
    del expected

    # The payload, the imported libraries and everything built so far move to the permanent
    # generation: a full collection triggered by a copy's allocations then scans what the copies
    # allocate, not a heap whose size is an artefact of this process (torch + transformers).
    gc.collect()
    gc.freeze()
    was_enabled = gc.isenabled()
    if not collect:
        gc.disable()
    try:
        for impl in live:
            if progress:
                progress("%s: calibrating %s" % (name, impl.name))
            t = _sample(impl, 1, timer)[0]
            loops = max(1, int(math.ceil(target / max(t, 1e-7))))
            res["loops"][impl.name] = loops
            res["samples"][impl.name] = []
            res["user_s"][impl.name] = []
            res["sys_s"][impl.name] = []
            res["labels"][impl.name] = impl.label
        for r in range(repeats):
            if progress:
                progress("%s: round %d/%d" % (name, r + 1, repeats))
            shift = r % len(live)
            for impl in live[shift:] + live[:shift]:
                loops = res["loops"][impl.name]
                t, ut, st = _sample(impl, loops, timer)
                res["samples"][impl.name].append(t / loops)
                if ut is not None:
                    res["user_s"][impl.name].append(ut / loops)
                    res["sys_s"][impl.name].append(st / loops)
    finally:
        if was_enabled:
            gc.enable()
        gc.unfreeze()
    for k, s in res["samples"].items():
        res["times"][k] = statistics.median(s)
    return res


def child_main(argv):
    """Entry point of the child process: ``--child NAME --out FILE [options]``."""
    import argparse
    p = argparse.ArgumentParser(prog="fastcopy realistic child")
    p.add_argument("--child", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--repeats", type=int, default=11)
    p.add_argument("--target", type=float, default=0.03)
    p.add_argument("--clock", default="cpu")
    p.add_argument("--modes", default="direct,patched")
    p.add_argument("--no-copium", action="store_true")
    p.add_argument("--no-gc", action="store_true")
    p.add_argument("--torch-threads", type=int, default=1)
    a = p.parse_args(argv)
    res = run_child(a.child, repeats=a.repeats, target=a.target, clock=a.clock,
                    modes=tuple(a.modes.split(",")), with_copium=not a.no_copium,
                    collect=not a.no_gc, torch_threads=a.torch_threads)
    with open(a.out, "w") as f:
        json.dump(res, f)
    return 0


# ---------------------------------------------------------------------------------------------
# The parent: one child per workload, then the table
# ---------------------------------------------------------------------------------------------

# numpy's BLAS pool (OpenBLAS, MKL, OpenMP): its threads spin after a call, and their CPU time
# counts in the process's -- a pandas copy measured 15% more CPU time, with spread across rounds
# twice as wide, while they spun.  With torch pinned to N threads, so are they, unless the
# caller set them.
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")


def _child_env(torch_threads=1):
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("FASTCOPY_AUTOPATCH", None)                 # the stdlib column stays the stdlib
    if torch_threads:
        for var in _BLAS_THREADS:
            env.setdefault(var, str(torch_threads))
    return env


def run_suite(workloads, repeats=11, target=0.03, clock="cpu", modes=("direct", "patched"),
              with_copium=True, collect=True, torch_threads=1, timeout=600, err=None,
              python=None):
    """Run each workload in its own child process; return the list of result dicts."""
    results = []
    env = _child_env(torch_threads)
    with tempfile.TemporaryDirectory(prefix="fastcopy-realistic-") as tmp:
        for k, w in enumerate(workloads, 1):
            need = missing(w)
            if need:
                results.append({"workload": w.name, "group": w.group, "kind": w.kind,
                                "description": w.description,
                                "skipped": "needs %s, which is not installed" % need})
                continue
            if err is not None:
                print("[%d/%d] %s" % (k, len(workloads), w.name), file=err, flush=True)
            out = os.path.join(tmp, "%s.json" % w.name)
            cmd = [python or sys.executable, "-c",
                   "import sys; from fastcopy._realistic import child_main; "
                   "sys.exit(child_main(sys.argv[1:]))",
                   "--child", w.name, "--out", out, "--repeats", str(repeats),
                   "--target", repr(target), "--clock", clock, "--modes", ",".join(modes)]
            if not with_copium:
                cmd.append("--no-copium")
            if not collect:
                cmd.append("--no-gc")
            cmd += ["--torch-threads", str(torch_threads or 0)]
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                      timeout=timeout)
                rc, stderr = proc.returncode, proc.stderr
            except subprocess.TimeoutExpired as exc:
                rc, stderr = "timeout after %d s" % timeout, (exc.stderr or b"")
                if isinstance(stderr, bytes):
                    stderr = stderr.decode("utf-8", "replace")
            wall = time.perf_counter() - t0
            if rc == 0 and os.path.exists(out):
                with open(out) as f:
                    res = json.load(f)
            else:
                tail = "\n".join(stderr.strip().splitlines()[-15:])
                res = {"workload": w.name, "group": w.group, "kind": w.kind,
                       "description": w.description, "skipped": None,
                       "crashed": "child exited %s: %s" % (rc, tail)}
            res["child_wall_s"] = wall
            results.append(res)
    return results


def _ms(t):
    return "-" if t is None else ("%.3f" % (t * 1e3) if t < 0.01 else "%.2f" % (t * 1e3)
                                  if t < 1 else "%.1f" % (t * 1e3))


def _ratio(a, b):
    return a / b if a and b else None


def _fmt_ratio(r):
    return "-" if r is None else "%.2fx" % r


def rows_of(results):
    """One row per (workload, mode): dicts with stdlib/fastcopy/copium times and ratios."""
    rows = []
    for res in results:
        if res.get("skipped") or res.get("crashed"):
            continue
        times = res.get("times", {})
        for mode in res.get("modes", ()):
            fc = "fastcopy" if mode == "direct" else "fastcopy_patched"
            cp = "copium" if mode == "direct" else "copium_patched"
            checks = res.get("checks", {})
            bad = ["%s: %s" % (k, v) for k, v in checks.items()
                   if k in (fc, cp) and v != "ok"]
            errs = ["%s: %s" % (k, v) for k, v in res.get("errors", {}).items()
                    if k in (fc, cp, "stdlib")]
            rows.append({
                "workload": res["workload"], "mode": mode,
                "stdlib": times.get("stdlib"), "fastcopy": times.get(fc),
                "copium": times.get(cp),
                "fastcopy_vs_stdlib": _ratio(times.get("stdlib"), times.get(fc)),
                "fastcopy_vs_copium": _ratio(times.get(cp), times.get(fc)),
                "copium_memo": res.get("copium_memo"),
                "sys_share": {"fastcopy": _sys_share(res, fc), "copium": _sys_share(res, cp),
                              "stdlib": _sys_share(res, "stdlib")},
                "check": "FAILED" if bad else ("error" if errs else
                                               ("ok" if fc in checks else "-")),
                "problems": bad + errs,
            })
    return rows


def _sys_share(res, impl):
    """Median share of system (kernel) time in the samples' CPU time, from getrusage."""
    u, k = res.get("user_s", {}).get(impl), res.get("sys_s", {}).get(impl)
    if not u or not k:
        return None
    shares = [b / (a + b) for a, b in zip(u, k) if a + b > 0]
    return statistics.median(shares) if shares else None


def geomeans(rows):
    out = {}
    for mode in ("direct", "patched", None):
        sel = [r for r in rows if mode is None or r["mode"] == mode]
        vs_cp = [r["fastcopy_vs_copium"] for r in sel if r["fastcopy_vs_copium"]]
        vs_std = [r["fastcopy_vs_stdlib"] for r in sel if r["fastcopy_vs_stdlib"]]
        out[mode or "all"] = {
            "n": len(sel),
            "fastcopy_vs_copium": statistics.geometric_mean(vs_cp) if vs_cp else None,
            "fastcopy_vs_stdlib": statistics.geometric_mean(vs_std) if vs_std else None,
        }
    return out


def format_table(results):
    """The text table: one row per workload and mode, then geometric means, skips, failures."""
    rows = rows_of(results)
    head = ["workload", "mode", "stdlib ms", "fastcopy ms", "copium ms", "fastcopy/stdlib",
            "fastcopy/copium", "check"]
    body = []
    for r in rows:
        cp = _ms(r["copium"])
        if r["copium"] is not None and r["copium_memo"] == "dict":
            cp += " (d)"
        body.append([r["workload"], r["mode"], _ms(r["stdlib"]), _ms(r["fastcopy"]), cp,
                     _fmt_ratio(r["fastcopy_vs_stdlib"]), _fmt_ratio(r["fastcopy_vs_copium"]),
                     r["check"]])
    gms = geomeans(rows)
    foot = []
    for mode in ("direct", "patched", "all"):
        g = gms[mode]
        if g["n"]:
            foot.append(["geometric mean", "%s (%d)" % (mode, g["n"]), "", "", "",
                         _fmt_ratio(g["fastcopy_vs_stdlib"]),
                         _fmt_ratio(g["fastcopy_vs_copium"]), ""])
    widths = [max(len(x[i]) for x in [head] + body + foot) for i in range(len(head))]

    def line(cells):
        return "  ".join(c.ljust(widths[i]) if i < 2 else c.rjust(widths[i])
                         for i, c in enumerate(cells)).rstrip()
    lines = [line(head), "-" * len(line(head))]
    lines += [line(r) for r in body]
    lines.append("-" * len(line(head)))
    lines += [line(r) for r in foot]
    notes = []
    if any(r["copium_memo"] == "dict" and r["copium"] is not None for r in rows):
        notes.append("(d) copium with its dict memo: its native memo raised on this workload")
    for res in results:
        if res.get("skipped"):
            notes.append("skipped: %s (%s)" % (res["workload"], res["skipped"]))
        if res.get("crashed"):
            notes.append("CRASHED: %s: %s" % (res["workload"], res["crashed"]))
    for r in rows:
        for p in r["problems"]:
            notes.append("%s: %s [%s]: %s" % ("CHECK FAILED" if "FAILED" in p else "error",
                                              r["workload"], r["mode"], p))
    return "\n".join(lines + notes)


def failures(results):
    """Result-check failures and crashes (skips are not failures)."""
    bad = [r for r in rows_of(results) if r["check"] == "FAILED"]
    return len(bad) + sum(1 for r in results if r.get("crashed"))


def main(args, out, err, fastcopy_mod, copium_mod):
    """``python -m fastcopy --realistic``: args from fastcopy.__main__'s parser."""
    try:
        workloads = select(args.workload)
    except KeyError as exc:
        print("python -m fastcopy: no realistic workload matches %s (see --realistic --list)"
              % exc, file=err)
        return 2
    repeats = args.repeats or (3 if args.quick else 11)
    target = getattr(args, "sample", None) or (0.005 if args.quick else 0.03)
    clock = args.clock or "cpu"
    modes = ("direct", "patched") if args.mode == "both" else (args.mode,)
    with_copium = copium_mod is not None
    t0 = time.perf_counter()
    results = run_suite(workloads, repeats=repeats, target=target, clock=clock, modes=modes,
                        with_copium=with_copium, collect=not args.no_gc,
                        torch_threads=args.torch_threads, err=err)
    wall = time.perf_counter() - t0
    import platform
    header = ("fastcopy %s | %s %s | %s | %d CPUs | copium %s | realistic suite: each workload in "
              "its own process, %d rounds interleaved, median %s time per op | torch threads: %s | %.0f s"
              % (getattr(fastcopy_mod, "__version__", "?"), platform.python_implementation(),
                 sys.version.split()[0], platform.platform(), os.cpu_count() or 0,
                 _version(copium_mod) if with_copium else "not used", repeats,
                 "CPU" if clock == "cpu" else "wall", args.torch_threads or "torch's default",
                 wall))
    print(header, file=out)
    print(format_table(results), file=out)
    nfail = failures(results)
    if nfail:
        print("python -m fastcopy: %d result check(s) FAILED or crashed; see above" % nfail,
              file=err)
    if args.json or getattr(args, "plot", None):
        doc = {"meta": {"suite": "realistic", "python": sys.version.split()[0],
                        "implementation": platform.python_implementation(),
                        "platform": platform.platform(), "machine": platform.machine(),
                        "cpu_count": os.cpu_count(), "cpu": _bench.cpu_model(),
                        "fastcopy": getattr(fastcopy_mod, "__version__", None),
                        "fastcopy_file": getattr(fastcopy_mod, "__file__", None),
                        "copium": _version(copium_mod) if with_copium else None,
                        "libraries": _library_versions(),
                        "repeats": repeats, "target_s": target, "clock": clock,
                        "modes": list(modes), "quick": args.quick, "gc": not args.no_gc,
                        "torch_threads": args.torch_threads, "wall_s": wall,
                        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())},
               "rows": rows_of(results), "geomean": geomeans(rows_of(results)),
               "results": results}
        if args.json:
            with open(args.json, "w") as f:
                json.dump(doc, f, indent=2)
        if getattr(args, "plot", None):
            from . import _plot
            _plot.plot_realistic(doc, args.plot)
            print("python -m fastcopy: chart written to %s" % args.plot, file=err)
    return 1 if nfail else 0


_version = _bench.library_version


def _library_versions():
    from importlib.metadata import PackageNotFoundError, version
    out = {}
    for dist in ("torch", "transformers", "scikit-learn", "pandas", "pydantic", "omegaconf",
                 "numpy", "copium"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    return out


def list_workloads(out):
    width = max(len(w.name) for w in WORKLOADS)
    for w in WORKLOADS:
        need = missing(w)
        print("%-*s  %-8s  %-14s  %s%s" % (width, w.name, w.kind, "+".join(w.modes),
                                           w.description,
                                           "  [needs %s]" % need if need else ""), file=out)
