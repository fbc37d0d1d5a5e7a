"""A small MLP trained with tilec's kernels beside the same MLP in plain torch: the loss curves
should match (docs/runtime.md, "PyTorch").

    python examples/torch/mlp.py [--steps 300] [--eager] [--dtype bf16|f16]

The model: an input projection, two residual blocks (LayerNorm, Linear d -> 4d with GELU,
Linear 4d -> d), RMSNorm and a classifier head, trained with AdamW on a synthetic task (a fixed
random teacher network labels Gaussian inputs). The tilec model is built from tilec.nn
(LayerNorm, RMSNorm, Linear with the GELU in the GEMM's epilogue) and loads the torch model's
state_dict, so both start from the same weights and see the same batches. By default the tilec
model runs under torch.compile(fullgraph=True) (its graph breaks are counted with
torch._dynamo.explain and must be 0); a CUDA graph of its forward and backward is replayed once
and compared with eager. Where tilec.ops has no gemm yet (issue 45), the tilec model's Linear
layers are torch's, and it says so.

Families: `tilec family build --op OP -o build/families/OP` for softmax's and the norms'
forward and backward families (test/gpu/test_torch_ops.py lists them), or $TILEC_FAMILIES.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("TILEC_FAMILIES", str(ROOT / "build" / "families"))

import tilec.nn as tnn  # noqa: E402  (after TILEC_FAMILIES)
import tilec.ops as ops  # noqa: E402

D, HIDDEN, CLASSES, BATCH = 1024, 4096, 256, 512


def layers(use_tilec: bool) -> SimpleNamespace:
    """The modules a model is built from: tilec.nn's or torch.nn's."""
    if not use_tilec:
        gelu_linear = lambda i, o: torch.nn.Sequential(torch.nn.Linear(i, o), torch.nn.GELU())  # noqa: E731
        return SimpleNamespace(Linear=torch.nn.Linear, LayerNorm=torch.nn.LayerNorm,
                               RMSNorm=torch.nn.RMSNorm, GeluLinear=gelu_linear)  # fmt: skip
    if not hasattr(ops, "gemm"):
        gelu_linear = lambda i, o: torch.nn.Sequential(torch.nn.Linear(i, o), torch.nn.GELU())  # noqa: E731
        return SimpleNamespace(Linear=torch.nn.Linear, LayerNorm=tnn.LayerNorm,
                               RMSNorm=tnn.RMSNorm, GeluLinear=gelu_linear)  # fmt: skip

    def fused(i: int, o: int) -> torch.nn.Module:  # the same state_dict keys as the torch pair
        return torch.nn.Sequential(tnn.Linear(i, o, activation="gelu"), torch.nn.Identity())

    return SimpleNamespace(Linear=tnn.Linear, LayerNorm=tnn.LayerNorm, RMSNorm=tnn.RMSNorm,
                           GeluLinear=fused)  # fmt: skip


class Block(torch.nn.Module):
    def __init__(self, nn: SimpleNamespace) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(D)
        self.up = nn.GeluLinear(D, HIDDEN)
        self.down = nn.Linear(HIDDEN, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(self.up(self.norm(x)))


class MLP(torch.nn.Module):
    def __init__(self, nn: SimpleNamespace) -> None:
        super().__init__()
        self.inp = nn.Linear(D, D)
        self.blocks = torch.nn.Sequential(Block(nn), Block(nn))
        self.norm = nn.RMSNorm(D)
        self.head = nn.Linear(D, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.blocks(self.inp(x))))


def batch(step: int, teacher: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, Any]:
    """Step `step`'s inputs and labels (the same for every model)."""
    g = torch.Generator(device="cuda").manual_seed(1000 + step)
    x = torch.randn(BATCH, D, device="cuda", generator=g)
    labels = torch.tanh(x @ teacher[0]) @ teacher[1]
    return x.to(dtype), labels.argmax(1)


def models(dtype: torch.dtype) -> tuple[MLP, MLP]:
    torch.manual_seed(0)
    ref = MLP(layers(False)).cuda().to(dtype)
    ours = MLP(layers(True)).cuda().to(dtype)
    ours.load_state_dict(ref.state_dict())
    return ref, ours


def train(model: Any, params: Any, steps: int, dtype: torch.dtype) -> list[float]:
    """The loss at each of `steps` AdamW steps."""
    g = torch.Generator(device="cuda").manual_seed(7)
    teacher = [torch.randn(D, D, device="cuda", generator=g) / D**0.5,
               torch.randn(D, CLASSES, device="cuda", generator=g)]  # fmt: skip
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
    losses = []
    for step in range(steps):
        x, labels = batch(step, teacher, dtype)
        loss = F.cross_entropy(model(x).float(), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return [float(v) for v in torch.stack(losses).tolist()]


def graph_breaks(model: torch.nn.Module, dtype: torch.dtype) -> int:
    x = torch.randn(BATCH, D, device="cuda", dtype=dtype)
    breaks = torch._dynamo.explain(model)(x).graph_break_count
    torch._dynamo.reset()
    return breaks


def graph_vs_eager(model: torch.nn.Module, dtype: torch.dtype) -> float:
    """The largest difference between a CUDA graph of the model's forward and backward, replayed
    on fresh inputs, and eager on the same inputs (0: bit for bit, the same kernels on the same
    data; test/gpu/test_torch_ops.py holds tilec's modules to that)."""
    static_x = torch.randn(BATCH, D, device="cuda", dtype=dtype)
    dy = torch.randn(BATCH, CLASSES, device="cuda", dtype=dtype)

    def step() -> list[torch.Tensor]:
        y = model(static_x)
        return [y.detach(), *torch.autograd.grad(y, list(model.parameters()), dy)]

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = step()
    static_x.copy_(torch.randn_like(static_x))
    graph.replay()
    eager = step()
    pairs = zip(captured, eager, strict=True)
    return max((a.float() - b.float()).abs().max().item() for a, b in pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--eager", action="store_true", help="no torch.compile for tilec's")
    parser.add_argument("--dtype", choices=("bf16", "f16"), default="bf16")
    args = parser.parse_args()
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    if not hasattr(ops, "gemm"):
        print("note: tilec.ops has no gemm yet (issue 45): the tilec model's Linear are torch's")
    ref, ours = models(dtype)
    diff = graph_vs_eager(ours, dtype)
    print(f"CUDA graph replay of tilec's forward + backward vs eager: max |difference| {diff}")
    run = ours
    if not args.eager:
        print(f"graph breaks under torch.compile: {graph_breaks(ours, dtype)}")
        run = torch.compile(ours, fullgraph=True)
    theirs = train(ref, ref.parameters(), args.steps, dtype)
    mine = train(run, ours.parameters(), args.steps, dtype)
    print(f"{'step':>6} {'torch':>9} {'tilec':>9}")
    for step in range(0, args.steps, max(1, args.steps // 15)):
        print(f"{step:>6} {theirs[step]:>9.4f} {mine[step]:>9.4f}")
    tail = max(1, args.steps // 6)
    a, b = statistics.mean(theirs[-tail:]), statistics.mean(mine[-tail:])
    print(f"mean loss over the last {tail} steps: torch {a:.4f}, tilec {b:.4f} "
          f"({abs(a - b) / a:.2%} apart); first step {theirs[0]:.4f} / {mine[0]:.4f}")  # fmt: skip


if __name__ == "__main__":
    main()
