"""Write one real msprobe dump of a tiny seeded net; run in a fresh process per dump.

msprobe keeps global hook state, so ``tests/test_pairing_fallback.py`` starts this script once per
dump: ``python make_dump.py VARIANT LEVEL OUT_DIR [statistics]``. Variants come in golden/target
pairs that compute the same numbers under different names (renamed modules) or with a fused API
where the golden runs decomposed ops, so the true pairing is known by construction.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

D = 16


class Mlp(nn.Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.fc1 = nn.Linear(D, 2 * D)
        self.act = nn.GELU(approximate=approximate)
        self.fc2 = nn.Linear(2 * D, D)

    def forward(self, x: Any) -> Any:
        return self.fc2(self.act(self.fc1(x)))


class FeedForward(Mlp):
    """The target's name for the same layer."""


class Block(nn.Module):
    def __init__(self, renamed: bool, approximate: str = "none") -> None:
        super().__init__()
        self.norm = nn.LayerNorm(D)
        setattr(self, "ffn" if renamed else "mlp", FeedForward(approximate) if renamed else Mlp(approximate))
        self.renamed = renamed

    def forward(self, x: Any) -> Any:
        inner = self.ffn if self.renamed else self.mlp
        return x + inner(self.norm(x))


class Layer(Block):
    """The target's name for a block."""


class Net(nn.Module):
    """golden: embed, blocks.N.mlp (Mlp), head; target: stem, layers.N.ffn (FeedForward), proj.

    ``approximate="tanh"`` is a target bug (a different GELU): its numbers diverge, its structure does not."""

    def __init__(self, renamed: bool, approximate: str = "none") -> None:
        super().__init__()
        torch.manual_seed(0)
        self.renamed = renamed
        setattr(self, "stem" if renamed else "embed", nn.Linear(8, D))
        blocks = nn.ModuleList([(Layer if renamed else Block)(renamed, approximate) for _ in range(2)])
        setattr(self, "layers" if renamed else "blocks", blocks)
        setattr(self, "proj" if renamed else "head", nn.Linear(D, 4))

    def forward(self, x: Any) -> Any:
        r = self.renamed
        x = (self.stem if r else self.embed)(x)
        for blk in self.layers if r else self.blocks:
            x = blk(x)
        return (self.proj if r else self.head)(x)


class Wrapper(nn.Module):
    """A pass-through module around another one: an extra nesting level only the target has."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: Any) -> Any:
        return self.inner(x)


class Attention(nn.Module):
    """Self-attention: decomposed (golden) or one ``F.scaled_dot_product_attention`` call (target)."""

    def __init__(self, fused: bool, heads: int = 2) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fused, self.heads = fused, heads
        self.qkv = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D, D)

    def forward(self, x: Any) -> Any:
        b, s, _ = x.shape
        q, k, v = self.qkv(x).reshape(b, s, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        if self.fused:
            o = F.scaled_dot_product_attention(q, k, v)
        else:
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(D // self.heads)
            o = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.out(o.transpose(1, 2).reshape(b, s, D))


class Norm(nn.Module):
    """Layer norm between two linears: manual mean/var arithmetic (golden) or ``F.layer_norm`` (target)."""

    def __init__(self, fused: bool) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fused = fused
        self.inp = nn.Linear(8, D)
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(D))
        self.bias = nn.Parameter(0.1 * torch.randn(D))
        self.out = nn.Linear(D, 4)

    def forward(self, x: Any) -> Any:
        h = self.inp(x)
        if self.fused:
            y = F.layer_norm(h, (D,), self.weight, self.bias, 1e-5)
        else:
            mu = h.mean(-1, keepdim=True)
            var = ((h - mu) ** 2).mean(-1, keepdim=True)
            y = (h - mu) / torch.sqrt(var + 1e-5) * self.weight + self.bias
        return self.out(y)


def build(variant: str) -> tuple[nn.Module, Any]:
    """The model and its seeded input for ``variant``."""
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(4, 8, generator=gen)
    if variant in ("net", "net_renamed"):
        return Net(variant == "net_renamed"), x
    if variant == "net_renamed_fp16":
        return Net(True).half(), x.half()
    if variant == "net_renamed_wrapped":  # same weights as "net": the wrapper adds none
        net = Net(True)
        net.layers[1] = Wrapper(net.layers[1])
        return net, x
    if variant == "net_renamed_tanh":
        return Net(True, approximate="tanh"), x
    if variant in ("attn", "attn_fused"):
        return Attention(variant == "attn_fused"), torch.randn(2, 6, D, generator=gen)
    if variant in ("norm", "norm_fused"):
        return Norm(variant == "norm_fused"), x
    raise SystemExit(f"unknown variant {variant}")


def main(variant: str, level: str, out: str, task: str = "tensor") -> None:
    import torch.distributed as dist

    torch.use_deterministic_algorithms(True)
    scratch = Path(tempfile.mkdtemp(prefix="msprobe_cfg_"))
    dist.init_process_group("gloo", init_method=f"file://{scratch}/store", rank=0, world_size=1)
    cfg: dict[str, Any] = {"task": task, "dump_path": out, "rank": [], "step": [], "level": level,
                           "async_dump": False}
    cfg[task] = {"scope": [], "list": [], "data_mode": ["all"]}
    if task == "statistics":
        cfg[task]["summary_mode"] = "statistics"
    (scratch / "config.json").write_text(json.dumps(cfg))
    from msprobe.pytorch import PrecisionDebugger

    model, x = build(variant)
    dbg = PrecisionDebugger(config_path=str(scratch / "config.json"))
    dbg.start(model=model)
    model(x).sum().backward()
    dbg.stop()
    dbg.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
