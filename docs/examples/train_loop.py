"""A small training loop of the kind docs/profiling.md profiles: an MLP trained with Adam, an
EMA copy of the model, a per-step log record, a checkpoint and an evaluation copy each epoch.

    python -m fastcopy profile docs/examples/train_loop.py
"""
import copy

import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
torch.set_num_threads(1)

config = {"lr": 1e-3, "batch": 64, "ema": 0.99,
          "schedule": {"warmup": 100, "milestones": [30, 60, 90], "gamma": 0.1},
          "tags": ["mlp", "adam", "demo"]}
model = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                      nn.Linear(2048, 10))
opt = torch.optim.Adam(model.parameters(), lr=config["lr"])
ema = copy.deepcopy(model)
history, checkpoints = [], []


def train_step(x, y):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for pe, p in zip(ema.parameters(), model.parameters()):
            pe.mul_(config["ema"]).add_(p, alpha=1 - config["ema"])
    return loss.item()


def evaluate(m):
    m = copy.deepcopy(m)            # evaluate a frozen copy
    m.eval()
    with torch.no_grad():
        return m(torch.randn(256, 512)).argmax(1).float().mean().item()


for epoch in range(3):
    for step in range(20):
        x, y = torch.randn(config["batch"], 512), torch.randint(0, 10, (config["batch"],))
        loss = train_step(x, y)
        history.append(copy.deepcopy({"epoch": epoch, "step": step, "loss": loss,
                                      "config": config}))
    checkpoints.append({"model": copy.deepcopy(model.state_dict()),
                        "optimizer": copy.deepcopy(opt.state_dict())})
    evaluate(ema)
print("trained %d steps, %d checkpoints" % (len(history), len(checkpoints)))
