"""What the operator at fault actually computes: its recorded inputs re-run under a few hypotheses.

"Check the epsilon of normalisations" is advice for every operator and therefore for none. When the
dump holds tensor data, the first diverging call's own inputs are re-computed in float64 (numpy, on
the CPU) under the hypotheses a migration typically breaks — erf vs tanh GELU, batch vs running
statistics, another epsilon, softmax over another axis, dropout left on, or simply "does the output
follow from the inputs at all" — and the one that reproduces the target's output is reported with
its residual. Nothing is said when no hypothesis fits: the advice then stays generic.

Every probe reads at most ``_MAX_ELEMENTS`` elements per tensor and refuses integer data where a
float computation is tested; any failure to load or to broadcast ends the probe silently (the row
already carries the loading error).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from acc_agent.io.arrays import DType
from acc_agent.numerics import budgets
from acc_agent.numerics.arrays import FloatArray

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump
    from acc_agent.numerics.diagnosis.graph import Node

_MAX_ELEMENTS = 1 << 22
#: A hypothesis "reproduces" an output when its relative L2 residual is below this many unit roundoffs.
_FIT_ROUNDINGS = 4.0
#: ... and at least this many times smaller than the residual of the golden side's behaviour.
_FIT_MARGIN = 4.0
_EPS_CANDIDATES = (1e-5, 1e-6, 1e-12, 1e-8, 1e-3)


@dataclass(frozen=True)
class Probe:
    """A measured statement about the operator at fault.

    ``shows`` names what was found (stable, for advice and tests): ``gelu_tanh``, ``gelu_erf``, ``gelu_sigmoid``,
    ``batch_statistics``, ``running_statistics``, ``epsilon``, ``softmax_axis``, ``dropout_active``,
    ``output_follows_inputs`` or ``output_not_from_inputs``."""

    shows: str
    statement: str
    residual: float | None = None


def family(key: str) -> str:
    """The operator family of a call key, for advice: ``Functional.batch_norm.0.forward`` -> ``batch_norm``."""
    from acc_agent.numerics.diagnosis.graph import api_name

    name = api_name(key).lower().strip("_")
    if name in _CASTS:
        return "cast"
    for fam, words in _FAMILIES:
        if any(w in name for w in words):
            return fam
    return "other"


_FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("batch_norm", ("batch_norm", "batchnorm", "sync_batch")),
    ("layer_norm", ("layer_norm", "layernorm", "rms_norm", "rmsnorm", "group_norm", "groupnorm", "instance_norm")),
    ("attention", ("attention", "sdpa", "flash")),
    ("softmax", ("softmax",)),
    ("dropout", ("dropout",)),
    ("embedding", ("embedding",)),
    ("conv", ("conv",)),
    ("linear", ("linear", "matmul", "addmm", "bmm", "baddbmm", "einsum", "mm")),
    ("activation", ("gelu", "silu", "swiglu", "relu", "tanh", "sigmoid", "mish", "hardswish", "elu", "swish")),
    ("resize", ("interpolate", "upsample", "pool", "resize", "grid_sample")),
    ("reduction", ("sum", "mean", "cumsum", "norm", "var", "std", "prod", "max", "min", "topk", "sort")),
)
#: Casts are matched by the whole API name: "to" or "int" inside another name says nothing.
_CASTS = frozenset({"to", "type", "float", "half", "bfloat16", "double", "int", "long", "bool", "type_as"})


class Args:
    """A call's recorded tensor arguments and scalar arguments on one side, loaded on demand."""

    def __init__(self, node: Node, dump: Dump | None, golden: bool) -> None:
        self._dump = dump
        self._names: dict[str, str] = {}
        for t in node.inputs:
            name = (t.row.golden_name or t.name) if golden else t.name
            self._names[t.arg.removeprefix("input.").removeprefix("parameters.")] = name
        self._outputs = [((t.row.golden_name or t.name) if golden else t.name) for t in node.outputs]
        key = node.key
        self.scalars: dict[str, object] = {}
        for s in (getattr(dump, "scalars", None) or {}).get(key, []):
            self.scalars[s.name[len(key) + 1:].removeprefix("input.")] = s.value

    def tensor(self, *keys: str) -> FloatArray | None:
        for k in keys:
            name = self._names.get(k)
            if name is not None:
                return self._load(name)
        return None

    def output(self) -> FloatArray | None:
        return self._load(self._outputs[0]) if self._outputs else None

    def scalar(self, *keys: str) -> object:
        for k in keys:
            if k in self.scalars:
                return self.scalars[k]
        return None

    def _load(self, name: str) -> FloatArray | None:
        if self._dump is None:
            return None
        try:
            arr = self._dump.load(name)
        except Exception:  # noqa: BLE001 - an unreadable tensor is already its row's error
            return None
        if arr.size > _MAX_ELEMENTS or not _numeric(arr.dtype):
            return None
        return np.asarray(arr, dtype=np.float64)


def _numeric(dtype: DType) -> bool:
    """Numbers numpy can convert to float64: its own kinds, and ml-dtypes' bf16/fp8 (opaque "V" to numpy)."""
    return dtype.kind in "fiub" or (dtype.kind == "V" and not dtype.names and dtype.type is not np.void)


def probe(node: Node, golden: Dump | None, target: Dump | None, dtype: str | None) -> Probe | None:
    """The hypothesis that reproduces the target output of ``node`` (tensor dumps only), or None."""
    if golden is None or target is None or not node.outputs or node.outputs[0].m.measure != "tensor":
        return None
    if node.direction != "forward":
        return None  # a backward call's inputs are gradients: the forward hypotheses do not apply to them
    fam = family(node.key)
    run = _PROBES.get(fam)
    if run is None:
        return None
    try:
        with np.errstate(all="ignore"):
            return run(Args(node, golden, True), Args(node, target, False), _tolerance(dtype), node.key)
    except (ValueError, TypeError, IndexError, ArithmeticError):
        return None  # shapes that do not broadcast, arguments the probe cannot read: no claim


def kernel_residual(node: Node, target: Dump | None) -> float | None:
    """Relative L2 distance of the target's output of ``node`` from the call re-computed in float64 from the
    target's own recorded inputs and arguments (None: not a call this can re-compute, or data missing).

    Only the output's rounding separates the two when the kernel computes what its arguments say."""
    if target is None or node.direction != "forward" or not node.outputs or node.outputs[0].m.measure != "tensor":
        return None
    from acc_agent.numerics.diagnosis.graph import api_name

    compute = _RECOMPUTE.get(family(node.key))
    if compute is None and api_name(node.key).lower().strip("_") in _ELEMENTWISE:
        compute = _recompute_elementwise
    if compute is None:
        return None
    args = Args(node, target, False)
    try:
        with np.errstate(all="ignore"):
            pair = compute(args, node.key.lower())
    except (ValueError, TypeError, IndexError, ArithmeticError):
        return None
    if pair is None:
        return None
    y, ref = pair
    res = relative_residual(y, ref)
    return res if math.isfinite(res) else None


#: Elementwise functions (by API name) re-computed as they are: each element computed in a wider type and rounded
#: once to the output's, on any device.
_ELEMENTWISE: dict[str, Callable[[FloatArray], FloatArray]] = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda v: 1.0 / np.sqrt(v), "reciprocal": lambda v: 1.0 / v,
    "square": np.square, "abs": np.abs, "neg": np.negative, "sin": np.sin, "cos": np.cos,
}


def _recompute_elementwise(t: Args, name: str) -> tuple[FloatArray, FloatArray] | None:
    """``torch.exp`` and the other functions of :data:`_ELEMENTWISE` applied to the target's own recorded input."""
    from acc_agent.numerics.diagnosis.graph import api_name

    fn = _ELEMENTWISE.get(api_name(name).lower().strip("_"))
    x, y = t.tensor("0", "input"), t.output()
    if fn is None or x is None or y is None or x.shape != y.shape:
        return None
    x, y = sampled([x.ravel(), y.ravel()], 0)
    if x is None or y is None:
        return None
    return y, fn(x)


def _recompute_activation(t: Args, name: str) -> tuple[FloatArray, FloatArray] | None:
    x, y = t.tensor("0"), t.output()
    if x is None or y is None or x.shape != y.shape:
        return None
    x, y = sampled([x.ravel(), y.ravel()], 0)
    if x is None or y is None:
        return None
    if "gelu" in name:
        approximate = t.scalar("approximate")
        if approximate not in (None, "none", "tanh"):
            return None
        if approximate == "tanh":
            return y, 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
        return y, _gelu_erf(x)
    fn: Callable[[FloatArray], FloatArray]
    if "silu" in name:
        fn = lambda v: v / (1.0 + np.exp(-v))  # noqa: E731
    elif "relu" in name and "leaky" not in name and "relu6" not in name:
        fn = lambda v: np.maximum(v, 0.0)  # noqa: E731
    elif "leaky_relu" in name:
        fn = leaky_relu(t)
    elif "sigmoid" in name and "log" not in name and "hard" not in name:
        fn = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    elif "tanh" in name and "hard" not in name:
        fn = np.tanh
    else:
        return None
    return y, fn(x)


def leaky_slope(t: Args) -> float:
    """The slope a leaky ReLU call applies below zero: its ``negative_slope``, by keyword or as the second argument, or
    the API's default 0.01 when neither run passed one. NaN for a value that is no number."""
    v = t.scalar("negative_slope", "1")
    if v is None:
        return 0.01
    slope = as_number(v)
    return math.nan if slope is None else slope


def leaky_relu(t: Args) -> Callable[[FloatArray], FloatArray]:
    """A leaky ReLU with the slope the call ``t`` used (see :func:`leaky_slope`)."""
    slope = leaky_slope(t)
    return lambda v: np.where(v > 0, v, v * slope)


def _recompute_norm(t: Args, name: str) -> tuple[FloatArray, FloatArray] | None:
    if "group" in name:
        return _recompute_group_norm(t)
    if "instance" in name:
        return _recompute_instance_norm(t)
    x, y = t.tensor("0"), t.output()
    if x is None or y is None or x.shape != y.shape:
        return None
    rms = "rms" in name
    w = t.tensor("weight", "2" if not rms else "1", "gamma")
    b = None if rms else t.tensor("bias", "3", "beta")
    eps = as_number(t.scalar("eps", "4" if not rms else "2", "epsilon"))
    if eps is None:
        return None
    axes = norm_axes(x, w)
    x, y = sampled([x, y], len(axes))
    if x is None or y is None:
        return None
    if rms:
        out = x / np.sqrt(np.mean(x**2, axis=axes, keepdims=True) + eps)
    else:
        out = (x - np.mean(x, axis=axes, keepdims=True)) / np.sqrt(np.var(x, axis=axes, keepdims=True) + eps)
    if w is not None:
        out = out * w
    if b is not None:
        out = out + b
    return y, out


def _recompute_group_norm(t: Args) -> tuple[FloatArray, FloatArray] | None:
    """``F.group_norm(x, num_groups, weight, bias, eps)``: each sample's channels split into ``num_groups`` groups,
    each group normalised over its channels and positions, then a per-channel scale and shift."""
    x, y = t.tensor("0"), t.output()
    groups, eps = as_number(t.scalar("num_groups", "1")), as_number(t.scalar("eps", "4"))
    if x is None or y is None or x.shape != y.shape or x.ndim < 2 or groups is None or eps is None:
        return None
    c, g = x.shape[1], int(groups)
    if g < 1 or c % g:
        return None
    w, b = t.tensor("weight", "2"), t.tensor("bias", "3")
    x, y = sampled([x, y], x.ndim - 1)  # whole samples: a group spans channels and positions
    if x is None or y is None:
        return None
    grouped = x.reshape(x.shape[0], g, -1)
    out = ((grouped - grouped.mean(axis=-1, keepdims=True)) / np.sqrt(grouped.var(axis=-1, keepdims=True) + eps))
    scaled = _per_channel_affine(out.reshape(x.shape), w, b)
    return (y, scaled) if scaled is not None else None


def _recompute_instance_norm(t: Args) -> tuple[FloatArray, FloatArray] | None:
    """``F.instance_norm(x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)``: each sample's
    channel normalised over its positions (or by the running statistics when ``use_input_stats`` is false)."""
    x, y = t.tensor("0"), t.output()
    use_input_stats, eps = t.scalar("use_input_stats", "5"), as_number(t.scalar("eps", "7"))
    if x is None or y is None or x.shape != y.shape or x.ndim < 3 or eps is None:
        return None
    c = x.shape[1]
    per_channel = (1, c) + (1,) * (x.ndim - 2)
    mean, var = t.tensor("running_mean", "1"), t.tensor("running_var", "2")
    if use_input_stats is False and (mean is None or var is None or mean.size != c or var.size != c):
        return None
    x, y = sampled([x, y], x.ndim - 1)
    if x is None or y is None:
        return None
    if use_input_stats is False:
        assert mean is not None and var is not None  # checked above
        out = (x - mean.reshape(per_channel)) / np.sqrt(var.reshape(per_channel) + eps)
    else:
        axes = tuple(range(2, x.ndim))
        out = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    scaled = _per_channel_affine(out, t.tensor("weight", "3"), t.tensor("bias", "4"))
    return (y, scaled) if scaled is not None else None


def _per_channel_affine(out: FloatArray, weight: FloatArray | None, bias: FloatArray | None) -> FloatArray | None:
    """``out`` (channels on axis 1) scaled by a per-channel weight and shifted by a per-channel bias, either absent;
    None when one does not hold a value per channel."""
    c = out.shape[1]
    per_channel = (1, c) + (1,) * (out.ndim - 2)
    for affine in (weight, bias):
        if affine is not None and affine.size != c:
            return None
    if weight is not None:
        out = out * weight.reshape(per_channel)
    if bias is not None:
        out = out + bias.reshape(per_channel)
    return out


def _recompute_softmax(t: Args, name: str) -> tuple[FloatArray, FloatArray] | None:
    x, y = t.tensor("0"), t.output()
    dim = as_number(t.scalar("dim", "1"))
    if x is None or y is None or dim is None or x.ndim < 1 or x.shape != y.shape or "gumbel" in name:
        return None
    axis = int(dim)
    z = np.exp(x - np.max(x, axis=axis, keepdims=True))
    out = z / z.sum(axis=axis, keepdims=True)
    return y, (np.log(out) if "log_softmax" in name else out)


def _recompute_linear(t: Args, name: str) -> tuple[FloatArray, FloatArray] | None:
    api = name.split(".")[1] if "." in name else name
    x, y = t.tensor("0"), t.output()
    if x is None or y is None:
        return None
    if api == "linear":
        w, b = t.tensor("1", "weight"), t.tensor("2", "bias")
        if w is None:
            return None
        x, y = sampled([x, y], 1)
        if x is None or y is None:
            return None
        return y, x @ w.T + (b if b is not None else 0.0)
    if api in ("matmul", "bmm", "mm"):
        other = t.tensor("1", "other", "mat2")
        if other is None or x.size * (other.shape[-1] if other.ndim else 1) > _MAX_ELEMENTS:
            return None
        return y, x @ other
    return None


def _conv_pair(t: Args, position: str, keyword: str, default: int) -> tuple[int, int] | None:
    """A conv2d's stride/padding/dilation as msprobe records it: a 2-list (``3.0``, ``3.1``) or one int."""
    for key in (position, keyword):
        one = t.scalar(key)
        if one is not None:
            n = as_number(one)
            return (int(n), int(n)) if n is not None and n == int(n) else None
        first, second = as_number(t.scalar(f"{key}.0")), as_number(t.scalar(f"{key}.1"))
        if first is not None and second is not None:
            return (int(first), int(second)) if first == int(first) and second == int(second) else None
    return (default, default)


#: Multiply-adds a conv re-computation may take; more and the batch is sampled down to fit.
_CONV_MACS = 1 << 26


def _conv_samples(x: FloatArray, y: FloatArray, macs_per_sample: int) -> tuple[FloatArray, FloatArray]:
    """Evenly spaced samples of a convolution's batch, as many as ``_CONV_MACS`` multiply-adds allow (at least one)."""
    n = x.shape[0]
    keep = max(1, min(n, _CONV_MACS // max(macs_per_sample, 1)))
    idx = np.unique(np.linspace(0, n - 1, keep).astype(np.int64))
    return x[idx], y[idx]


def _conv_operands(t: Args) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray | None] | None:
    """A 2-D convolution's (transposed or not) input, 4-D weight, output and bias, an unbatched call given a batch of
    one; None when a tensor is missing."""
    x, w, y = t.tensor("0", "input"), t.tensor("1", "weight"), t.output()
    if x is None or w is None or y is None or w.ndim != 4:
        return None
    if x.ndim == 3:  # an unbatched call
        x, y = x[None], y[None]
    return x, w, y, t.tensor("2", "bias")


def _recompute_conv(t: Args, name: str) -> tuple[FloatArray, FloatArray] | None:
    """A conv2d in float64 from its recorded input, weight, bias, stride, padding, dilation and groups (only
    explicit integer paddings: a "same"/"valid" string is left out)."""
    api = name.split(".")[1] if "." in name else name
    if api == "conv_transpose2d":
        return _recompute_conv_transpose(t)
    if api != "conv2d":
        return None
    operands = _conv_operands(t)
    if operands is None:
        return None
    x, w, y, b = operands
    stride, padding, dilation = _conv_pair(t, "3", "stride", 1), _conv_pair(t, "4", "padding", 0), \
        _conv_pair(t, "5", "dilation", 1)
    groups = as_number(t.scalar("6", "groups"))
    groups_n = 1 if groups is None else int(groups)
    if stride is None or padding is None or dilation is None or x.ndim != 4 or y.ndim != 4 or groups_n < 1:
        return None
    n, c, _, _ = x.shape
    out_c, c_group, kh, kw = w.shape
    if c != c_group * groups_n or out_c % groups_n or y.shape[:2] != (n, out_c):
        return None
    x, y = _conv_samples(x, y, y[0].size * c_group * kh * kw)
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    span = (dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1)
    if xp.shape[2] < span[0] or xp.shape[3] < span[1]:
        return None
    windows = np.lib.stride_tricks.sliding_window_view(xp, span, axis=(2, 3))
    windows = windows[:, :, ::stride[0], ::stride[1], ::dilation[0], ::dilation[1]]
    if windows.shape[2:4] != y.shape[2:]:
        return None
    per_out = out_c // groups_n
    out = np.concatenate([np.einsum("nchwij,ocij->nohw", windows[:, g * c_group:(g + 1) * c_group],
                                    w[g * per_out:(g + 1) * per_out], optimize=True) for g in range(groups_n)], axis=1)
    if b is not None:
        if b.shape != (out_c,):
            return None
        out = out + b[None, :, None, None]
    return y, out


def _recompute_conv_transpose(t: Args) -> tuple[FloatArray, FloatArray] | None:
    """``F.conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups, dilation)`` in float64: every
    input element scatters its kernel-weighted copy into the output, ``stride`` apart; ``padding`` crops each border
    and ``output_padding`` adds to the far end."""
    operands = _conv_operands(t)
    if operands is None:
        return None
    x, w, y, b = operands
    stride, padding = _conv_pair(t, "3", "stride", 1), _conv_pair(t, "4", "padding", 0)
    extra, dilation = _conv_pair(t, "5", "output_padding", 0), _conv_pair(t, "7", "dilation", 1)
    groups = as_number(t.scalar("6", "groups"))
    groups_n = 1 if groups is None else int(groups)
    if stride is None or padding is None or extra is None or dilation is None or x.ndim != 4 or y.ndim != 4 \
            or groups_n < 1:
        return None
    n, c, h, wd = x.shape
    c_in, per_out, kh, kw = w.shape
    out_c = per_out * groups_n
    if c != c_in or c % groups_n or y.shape[:2] != (n, out_c):
        return None
    x, y = _conv_samples(x, y, x[0].size * per_out * kh * kw)
    full = np.zeros((x.shape[0], out_c, (h - 1) * stride[0] + dilation[0] * (kh - 1) + 1 + extra[0],
                     (wd - 1) * stride[1] + dilation[1] * (kw - 1) + 1 + extra[1]))
    c_group = c // groups_n
    for g in range(groups_n):
        xg, wg = x[:, g * c_group:(g + 1) * c_group], w[g * c_group:(g + 1) * c_group]
        for i in range(kh):
            for j in range(kw):
                r, q = i * dilation[0], j * dilation[1]
                full[:, g * per_out:(g + 1) * per_out, r:r + (h - 1) * stride[0] + 1:stride[0],
                     q:q + (wd - 1) * stride[1] + 1:stride[1]] += np.einsum("nchw,co->nohw", xg, wg[:, :, i, j])
    out = full[:, :, padding[0]:padding[0] + y.shape[2], padding[1]:padding[1] + y.shape[3]]
    if out.shape != y.shape:
        return None
    if b is not None:
        if b.shape != (out_c,):
            return None
        out = out + b[None, :, None, None]
    return y, out


def axis_ints(f: Args, position: str, keyword: str, nd: int) -> tuple[int, ...] | None:
    """A pooling argument per spatial axis: one int for all, or one per axis (msprobe records a tuple item by item);
    None when absent or not integers."""
    one = f.scalar(keyword, position)
    if isinstance(one, int) and not isinstance(one, bool):
        return (one,) * nd
    items = [f.scalar(f"{keyword}.{i}", f"{position}.{i}") for i in range(nd)]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        return tuple(int(v) for v in items)  # type: ignore[call-overload]
    return None


def pool_window(t: Args, nd: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """A pooling call's kernel size, stride (the kernel size when not given) and padding per spatial axis, as its
    1st to 3rd arguments or keywords; None without a kernel size."""
    kernel = axis_ints(t, "1", "kernel_size", nd)
    if kernel is None:
        return None
    return kernel, axis_ints(t, "2", "stride", nd) or kernel, axis_ints(t, "3", "padding", nd) or (0,) * nd


def _recompute_resize(t: Args, name: str) -> tuple[FloatArray, FloatArray] | None:
    """The resizing calls this can re-compute: plain average pools and interpolations that average their neighbours."""
    api = name.split(".")[1] if "." in name else name
    if api == "interpolate":
        return _recompute_interpolate(t)
    nd = next((n for n in (1, 2, 3) if api == f"avg_pool{n}d"), None)
    return _recompute_avg_pool(t, nd) if nd is not None else None


#: ``F.interpolate`` modes re-computed here, and the spatial axes each works on (nearest works on any).
_INTERPOLATION_AXES = {"nearest": None, "nearest-exact": None, "linear": 1, "bilinear": 2, "trilinear": 3}


def _recompute_interpolate(t: Args) -> tuple[FloatArray, FloatArray] | None:
    """``F.interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)`` in float64,
    axis by axis as PyTorch maps each output position to the input: nearest takes ``floor(dst * scale)`` (nearest-exact
    ``floor((dst + 0.5) * scale)``), the linear modes blend the two neighbours of ``(dst + 0.5) * scale - 0.5`` (of
    ``dst * (in - 1) / (out - 1)`` with ``align_corners``). ``scale`` is one over the given scale factor, else the
    input size over the output size. Bicubic, area and antialiased calls are left out."""
    x, y = t.tensor("0", "input"), t.output()
    mode = t.scalar("mode", "3")
    mode = "nearest" if mode is None else mode
    if x is None or y is None or not isinstance(mode, str) or mode not in _INTERPOLATION_AXES or t.scalar("antialias", "6"):
        return None
    nd = x.ndim - 2
    if nd < 1 or y.ndim != x.ndim or y.shape[:2] != x.shape[:2] or _INTERPOLATION_AXES[mode] not in (None, nd):
        return None
    align = bool(t.scalar("align_corners", "4"))
    factors = _axis_floats(t, "2", "scale_factor", nd)
    if t.scalar("recompute_scale_factor", "5"):
        factors = None
    x, y = sampled([x, y], nd)
    if x is None or y is None:
        return None
    out = x
    for axis in range(nd):
        n_in, n_out = x.shape[2 + axis], y.shape[2 + axis]
        scale = 1.0 / factors[axis] if factors is not None and factors[axis] > 0 else n_in / n_out
        dst = np.arange(n_out, dtype=np.float64)
        if mode in ("nearest", "nearest-exact"):
            src = np.floor((dst + (0.5 if mode == "nearest-exact" else 0.0)) * scale)
            out = np.take(out, np.minimum(src.astype(np.int64), n_in - 1), axis=2 + axis)
            continue
        if align:
            src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
        else:
            src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
        low = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        high = np.minimum(low + 1, n_in - 1)
        weight = (src - low).reshape((-1,) + (1,) * (nd - 1 - axis))
        out = np.take(out, low, axis=2 + axis) * (1.0 - weight) + np.take(out, high, axis=2 + axis) * weight
    return (y, out) if out.shape == y.shape else None


def _axis_floats(t: Args, position: str, keyword: str, nd: int) -> tuple[float, ...] | None:
    """A per-axis float argument (a scale factor): one number for all axes, or one per axis; None when absent."""
    one = as_number(t.scalar(keyword, position))
    if one is not None:
        return (one,) * nd
    items = [as_number(t.scalar(f"{keyword}.{i}", f"{position}.{i}")) for i in range(nd)]
    return tuple(v for v in items if v is not None) if all(v is not None for v in items) else None


def _recompute_avg_pool(t: Args, nd: int) -> tuple[FloatArray, FloatArray] | None:
    """``F.avg_pool{nd}d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)`` in float64:
    each window's sum over its element count (the zero padding counted unless ``count_include_pad`` is false), or
    over ``divisor_override``. Only without ``ceil_mode`` (its partial last windows are left out)."""
    x, y = t.tensor("0"), t.output()
    window = pool_window(t, nd)
    if x is None or y is None or x.ndim <= nd or window is None or t.scalar("ceil_mode", "4"):
        return None
    kernel, stride, padding = window
    include_pad = t.scalar("count_include_pad", "5")
    divisor = as_number(t.scalar("divisor_override", "6")) if nd > 1 else None
    if min(stride) < 1 or any(2 * p > k for p, k in zip(padding, kernel, strict=True)):
        return None
    x, y = sampled([x, y], nd)
    if x is None or y is None:
        return None
    axes = tuple(range(-nd, 0))

    def window_sums(a: FloatArray) -> FloatArray:
        pads = [(0, 0)] * (a.ndim - nd) + [(p, p) for p in padding]
        windows = np.lib.stride_tricks.sliding_window_view(np.pad(a, pads), kernel, axis=axes)
        windows = windows[(...,) + tuple(slice(None, None, st) for st in stride) + (slice(None),) * nd]
        return windows.sum(axis=tuple(range(-nd, 0)))

    sums = window_sums(x)
    if sums.shape != y.shape:
        return None
    if divisor:
        return y, sums / divisor
    if include_pad is False:
        return y, sums / window_sums(np.ones(x.shape[-nd:]))
    return y, sums / float(np.prod(kernel))


_RECOMPUTE: dict[str, Callable[[Args, str], tuple[FloatArray, FloatArray] | None]] = {
    "conv": _recompute_conv,
    "activation": _recompute_activation,
    "layer_norm": _recompute_norm,
    "softmax": _recompute_softmax,
    "linear": _recompute_linear,
    "resize": _recompute_resize,
}


#: Elements a probe re-computes at most: row-wise operators are checked on evenly spaced rows, so a large
#: activation costs what a small one does (the hypotheses are per row or per element, a sample decides them).
_PROBE_ELEMENTS = 1 << 16


def sampled(arrays: list[FloatArray | None], trailing: int) -> list[FloatArray | None]:
    """The same evenly spaced rows of every array (rows = the leading dims, ``trailing`` dims kept whole)."""
    first = next((a for a in arrays if a is not None), None)
    if first is None or first.size <= _PROBE_ELEMENTS:
        return arrays
    trailing = max(0, min(trailing, first.ndim))
    lead = int(np.prod(first.shape[:first.ndim - trailing])) if first.ndim - trailing > 0 else 1
    per_row = max(1, first.size // max(lead, 1))
    rows = max(1, _PROBE_ELEMENTS // per_row)
    if lead <= rows:
        return arrays
    idx = np.unique(np.linspace(0, lead - 1, rows).astype(np.int64))
    out: list[FloatArray | None] = []
    for a in arrays:
        if a is None or a.ndim < trailing or int(np.prod(a.shape[:a.ndim - trailing] or (1,))) != lead:
            out.append(a if a is None else None)
            continue
        out.append(a.reshape(lead, *a.shape[a.ndim - trailing:])[idx])
    return out


def _tolerance(dtype: str | None) -> float:
    """A float64 re-computation from the call's own inputs differs from its output by the output's rounding
    only: a few unit roundoffs of its dtype (never below 1e-6, for FP32 kernels' own differences)."""
    return max(_FIT_ROUNDINGS * budgets.unit_roundoff(dtype), 1e-6)


def relative_residual(y: FloatArray, ref: FloatArray) -> float:
    """Relative L2 distance of ``y`` from ``ref`` (inf when shapes differ)."""
    if y.shape != ref.shape:
        if y.size != ref.size:
            return math.inf
        y = y.reshape(ref.shape)
    fin = np.isfinite(ref) & np.isfinite(y)
    denom = float(np.linalg.norm(ref[fin]))
    num = float(np.linalg.norm((y - ref)[fin]))
    if denom == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / denom


def _pick(target_out: FloatArray, golden_out: FloatArray | None, hypotheses: dict[str, FloatArray],
          tol: float) -> tuple[str, float] | None:
    """The hypothesis that reproduces the target output (and not the golden one), with its residual."""
    fits = sorted(((relative_residual(target_out, y), name) for name, y in hypotheses.items()), key=lambda x: x[0])
    if not fits or fits[0][0] > tol:
        return None
    best_res, best = fits[0]
    others = [r for r, n in fits[1:]]
    if others and min(others) < _FIT_MARGIN * max(best_res, 1e-12):
        return None  # two hypotheses fit equally: the data cannot tell them apart
    if golden_out is not None and relative_residual(golden_out, hypotheses[best]) <= tol:
        return None  # the golden output fits it too: not what differs
    return best, best_res


# --------------------------------------------------------------------------- per family


def _gelu(g: Args, t: Args, tol: float, key: str) -> Probe | None:
    x, y = t.tensor("0"), t.output()
    if x is None or y is None:
        return None
    if "gelu" not in key.lower():
        return _follows(g, t, tol, key)
    yg_full = g.output()
    x, y, yg = sampled([x.ravel(), y.ravel(), yg_full.ravel() if yg_full is not None else None], 0)
    assert x is not None and y is not None
    hyps = {"erf": _gelu_erf(x), "tanh": 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
            "sigmoid": x / (1.0 + np.exp(-1.702 * x))}
    got = _pick(y, yg, hyps, tol)
    if got is None:
        return _not_from_inputs(y, hyps, tol, key)
    golden_fit = _pick(yg, None, hyps, tol) if yg is not None else None
    said = (f"; the golden computes the {_GELU_WORDS[golden_fit[0]]} one" if golden_fit is not None
            and golden_fit[0] != got[0] else "")
    return Probe(f"gelu_{got[0]}", f"the target output of {key} equals the {_GELU_WORDS[got[0]]} GELU of its input "
                                   f"(residual {got[1]:.2g}){said}", got[1])


_GELU_WORDS = {"erf": "exact (erf)", "tanh": "tanh-approximated", "sigmoid": "sigmoid-approximated (quick, x*sigmoid(1.702x))"}


def _gelu_erf(x: FloatArray) -> FloatArray:
    erf = np.frompyfunc(math.erf, 1, 1)
    return 0.5 * x * (1.0 + np.asarray(erf(x / math.sqrt(2.0)), dtype=np.float64))


def norm_axes(x: FloatArray, weight: FloatArray | None) -> tuple[int, ...]:
    k = weight.ndim if weight is not None and weight.ndim >= 1 else 1
    return tuple(range(x.ndim - k, x.ndim))


def _layer_norm(g: Args, t: Args, tol: float, key: str) -> Probe | None:
    x, y = t.tensor("0"), t.output()
    if x is None or y is None:
        return None
    rms = "rms" in key.lower()
    w = t.tensor("weight", "2" if not rms else "1", "gamma")
    b = None if rms else t.tensor("bias", "3", "beta")
    axes = norm_axes(x, w)
    yg = g.output()
    x, y, yg = sampled([x, y, yg], len(axes))
    if x is None or y is None:
        return None
    golden_eps = as_number(g.scalar("eps", "4" if not rms else "2", "epsilon"))
    target_eps = as_number(t.scalar("eps", "4" if not rms else "2", "epsilon"))
    candidates = sorted({*_EPS_CANDIDATES, *(e for e in (golden_eps, target_eps) if e is not None)})
    hyps = {}
    for eps in candidates:
        if rms:
            out = x / np.sqrt(np.mean(x**2, axis=axes, keepdims=True) + eps)
        else:
            mu = np.mean(x, axis=axes, keepdims=True)
            out = (x - mu) / np.sqrt(np.var(x, axis=axes, keepdims=True) + eps)
        if w is not None:
            out = out * w
        if b is not None:
            out = out + b
        hyps[f"{eps:g}"] = out
    got = _pick(y, yg, hyps, tol)
    if got is None:
        return _not_from_inputs(y, hyps, tol, key)
    said = f" (the call records eps={target_eps:g})" if target_eps is not None and f"{target_eps:g}" != got[0] else ""
    ref = f"; the golden side uses eps={golden_eps:g}" if golden_eps is not None else ""
    return Probe("epsilon", f"the target output of {key} equals the normalisation with eps={got[0]} "
                            f"(residual {got[1]:.2g}){said}{ref}", got[1])


def _batch_norm(g: Args, t: Args, tol: float, key: str) -> Probe | None:
    x, y = t.tensor("0"), t.output()
    if x is None or y is None or x.ndim < 2:
        return None
    mean_r, var_r = t.tensor("running_mean", "1"), t.tensor("running_var", "2")
    w, b = t.tensor("weight", "3"), t.tensor("bias", "4")
    eps = as_number(t.scalar("eps", "7")) or 1e-5
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    axes = (0, *range(2, x.ndim))

    def affine(z: FloatArray) -> FloatArray:
        if w is not None and w.size == x.shape[1]:
            z = z * w.reshape(shape)
        if b is not None and b.size == x.shape[1]:
            z = z + b.reshape(shape)
        return z

    hyps = {"batch": affine((x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True) + eps))}
    if mean_r is not None and var_r is not None and mean_r.size == x.shape[1] == var_r.size:
        hyps["running"] = affine((x - mean_r.reshape(shape)) / np.sqrt(var_r.reshape(shape) + eps))
    got = _pick(y, g.output(), hyps, tol)
    if got is None:
        return _not_from_inputs(y, hyps, tol, key)
    if got[0] == "batch":
        return Probe("batch_statistics", f"the target output of {key} equals normalisation with the batch's own "
                                         f"mean and variance (residual {got[1]:.2g}): the layer runs in training "
                                         "mode on the target (batch statistics) where the golden uses its running "
                                         "statistics", got[1])
    return Probe("running_statistics", f"the target output of {key} equals normalisation with the running mean and "
                                       f"variance (residual {got[1]:.2g}): the target runs the layer in eval mode "
                                       "where the golden normalises with batch statistics (training mode)", got[1])


def _softmax(g: Args, t: Args, tol: float, key: str) -> Probe | None:
    x, y = t.tensor("0"), t.output()
    if x is None or y is None or x.ndim < 1:
        return None
    log = "log_softmax" in key.lower()
    hyps = {}
    for axis in range(x.ndim):
        z = x - np.max(x, axis=axis, keepdims=True)
        s = np.exp(z)
        out = s / s.sum(axis=axis, keepdims=True)
        hyps[str(axis - x.ndim)] = np.log(out) if log else out
    recorded = as_number(t.scalar("dim", "1"))
    got = _pick(y, g.output(), hyps, tol)
    if got is None:
        return _not_from_inputs(y, hyps, tol, key)
    said = f" (the call records dim={int(recorded)})" if recorded is not None else ""
    return Probe("softmax_axis", f"the target output of {key} equals the softmax of its input over dim "
                                 f"{got[0]}{said} (residual {got[1]:.2g}), not over the axis the golden uses", got[1])


def _dropout(g: Args, t: Args, tol: float, key: str) -> Probe | None:
    x, y, yg = t.tensor("0"), t.output(), g.output()
    if x is None or y is None or yg is None or x.shape != y.shape:
        return None
    nz = x != 0
    if not nz.any():
        return None
    t_zero = float(np.mean(y[nz] == 0))
    g_zero = float(np.mean(yg[nz] == 0)) if yg.shape == x.shape else math.nan
    if t_zero > 0.01 and not (g_zero > 0.01):
        kept = nz & (y != 0)
        scale = float(np.median(y[kept] / x[kept])) if kept.any() else math.nan
        return Probe("dropout_active", f"{t_zero:.1%} of the target output of {key} is zeroed where the input is not "
                                       f"and the rest is scaled by {scale:.3g}: dropout is active (training mode) on "
                                       "the target; the golden passes its input through", None)
    if g_zero > 0.01 and not (t_zero > 0.01):
        return Probe("dropout_active", f"the golden zeroes {g_zero:.1%} of {key}'s output and the target none: "
                                       "dropout is active on the golden side only", None)
    return None


def _linear(g: Args, t: Args, tol: float, key: str) -> Probe | None:
    x, y = t.tensor("0"), t.output()
    name = key.lower()
    if x is None or y is None:
        return None
    if "linear" in name:
        w, b = t.tensor("1", "weight"), t.tensor("2", "bias")
        if w is None:
            return None
        x, y = sampled([x, y], 1)  # a linear layer is row-wise over its leading dims
        if x is None or y is None:
            return None
        ref = x @ w.T + (b if b is not None else 0.0)
    elif "addmm" in name:
        m1, m2 = t.tensor("1"), t.tensor("2")
        if m1 is None or m2 is None:
            return None
        ref = x + m1 @ m2
    else:
        other = t.tensor("1", "other", "mat2")
        if other is None:
            return None
        ref = x @ other
    return _follows_from(y, ref, tol, key)


def _follows(g: Args, t: Args, tol: float, key: str) -> Probe | None:
    """Activations other than GELU: re-run the elementwise function."""
    x, y = t.tensor("0"), t.output()
    if x is None or y is None:
        return None
    name = key.lower()
    fn: Callable[[FloatArray], FloatArray] | None = None
    if "silu" in name or "swish" in name:
        fn = lambda v: v / (1.0 + np.exp(-v))  # noqa: E731
    elif "leaky_relu" in name:
        fn = leaky_relu(t)
    elif "relu" in name and "relu6" not in name:
        fn = lambda v: np.maximum(v, 0.0)  # noqa: E731
    elif "sigmoid" in name:
        fn = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    elif "tanh" in name:
        fn = np.tanh
    if fn is None:
        return None
    x, y = sampled([x.ravel(), y.ravel()], 0) if x.shape == y.shape else (x, y)
    if x is None or y is None:
        return None
    return _follows_from(y, fn(x), tol, key)


def _follows_from(y: FloatArray, ref: FloatArray, tol: float, key: str) -> Probe | None:
    res = relative_residual(y, ref)
    if res <= tol:
        return Probe("output_follows_inputs", f"re-computing {key} in float64 from the target's own recorded inputs "
                                              f"gives the target's output (residual {res:.2g}): the operator computes "
                                              "what its inputs say", res)
    if math.isfinite(res):
        return Probe("output_not_from_inputs", f"re-computing {key} in float64 from the target's own recorded inputs "
                                               f"does not give the target's output (residual {res:.2g}, allowed "
                                               f"{tol:.2g}): the kernel computes something else", res)
    return None


def _not_from_inputs(y: FloatArray, hyps: dict[str, FloatArray], tol: float, key: str) -> Probe | None:
    best = min((relative_residual(y, h) for h in hyps.values()), default=math.inf)
    if math.isfinite(best) and best > _FIT_MARGIN * tol:
        return Probe("output_not_from_inputs", f"none of the usual variants of {key} (re-computed in float64 from the "
                                               f"target's recorded inputs) gives the target's output (best residual "
                                               f"{best:.2g}): the kernel computes something else", best)
    return None


def as_number(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


_PROBES: dict[str, Callable[[Args, Args, float, str], Probe | None]] = {
    "activation": _gelu,
    "layer_norm": _layer_norm,
    "batch_norm": _batch_norm,
    "softmax": _softmax,
    "dropout": _dropout,
    "linear": _linear,
}
