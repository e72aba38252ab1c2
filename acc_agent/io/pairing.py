"""Which golden tensor is compared with which target tensor.

Pairing is separate from the metrics because it is where migrations differ most: a renamed
module, an extra cast, a fused operator. Strategies run in order and each only looks at what
the previous ones left unmatched; every pair records the ``method`` that matched it so a reviewer
can judge how much to trust the row:

1. ``mapping`` / ``exact``: a user mapping, then identical names;
2. ``normalised``: names that agree once wrappers, class names and API namespaces are dropped;
3. ``region``: one fused target API (``Functional.scaled_dot_product_attention``, ``Functional.layer_norm``,
   ``NPU.npu_fusion_attention``, ...) against the run of decomposed golden APIs it replaces;
4. ``order_shape``: execution order + role + shape, when asked (``by_order``) or automatically when most
   names did not pair (a renamed model), see :func:`pair_entries`.

What the fallbacks did is written to :attr:`Pairing.notes` (and :attr:`Pairing.regions`), because a
pairing that was guessed must say so next to the numbers it produced.

Mapping file (YAML or JSON): ``{target_name: golden_name}`` — the same direction as msprobe's
``data_mapping`` (NPU name -> bench name). A key ending in ``.`` is a prefix rule
(``Module.layer1.: Module.layers.0.``) applied to every name starting with it.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from acc_agent.errors import AccAgentError

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump, DumpEntry


@dataclass(frozen=True)
class Pair:
    golden_name: str
    target_name: str
    method: str


@dataclass(frozen=True)
class Region:
    """A fused target op and the golden ops it replaces: kept so a reviewer sees what a ``region`` row spans."""

    target_key: str
    golden_keys: tuple[str, ...]
    note: str


@dataclass
class Pairing:
    """Pairs in target execution order, plus what found no partner on either side.

    ``auto_order_fallback`` is True when execution order + shape ran without being asked because most
    names did not pair; ``notes`` says, one line per fallback, what was done and how many pairs it made;
    ``regions`` lists the fused target ops paired with a run of golden ops."""

    pairs: list[Pair] = field(default_factory=list)
    unmatched_golden: list[str] = field(default_factory=list)
    unmatched_target: list[str] = field(default_factory=list)
    auto_order_fallback: bool = False
    notes: list[str] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)


def load_mapping(path: str | Path) -> dict[str, str]:
    """Read a ``{target_name: golden_name}`` mapping file (YAML or JSON)."""
    import yaml

    from acc_agent.io.safe_yaml import MAX_YAML_BYTES, load_yaml

    p = Path(path)
    try:
        if p.exists() and not p.is_file():  # a pipe or device would block the read forever
            raise AccAgentError("invalid_mapping", f"mapping file {p} is not a regular file",
                                hint="Pass the YAML or JSON mapping file itself.", path=str(p))
        if p.is_file() and p.stat().st_size > MAX_YAML_BYTES:
            raise AccAgentError("invalid_mapping", f"{p.name} is {p.stat().st_size >> 20} MiB, above the "
                                f"{MAX_YAML_BYTES >> 20} MiB limit for a mapping file",
                                hint="Map module prefixes instead of every tensor name.", path=str(p))
        doc = load_yaml(p.read_text(encoding="utf-8"), str(p))
    except FileNotFoundError:
        raise AccAgentError("missing_file", f"mapping file {p} does not exist",
                            hint="Check the path given as the mapping file.", path=str(p)) from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise AccAgentError("invalid_mapping", f"{p.name} is not valid YAML: {exc}".splitlines()[0],
                            hint="Write one 'target_name: golden_name' pair per line.", path=str(p)) from None
    if doc is None:
        return {}
    if not isinstance(doc, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in doc.items()):
        raise AccAgentError("invalid_mapping", f"{p.name} must map target names to golden names (strings)",
                            hint="Example line: 'Module.layer1.Linear.forward.0.output.0: "
                                 "Module.layers.0.Linear.forward.0.output.0'", path=str(p))
    return dict(doc)


def _mapped(name: str, mapping: dict[str, str], prefixes: list[tuple[str, str]]) -> str | None:
    if name in mapping:
        return mapping[name]
    for src, dst in prefixes:
        if name.startswith(src):
            return dst + name[len(src):]
    return None


def pair_entries(golden: Dump, target: Dump, mapping: dict[str, str] | None = None, *,
                 by_order: bool = False) -> Pairing:
    """Pair the two dumps' entries: mapping first (explicit beats implicit), then exact names, then
    normalised names, then fused regions, then execution order + shape.

    Order + shape runs on every group when ``by_order`` is set. Without it, it runs only where names
    clearly failed: more than half of all target tensors unmatched, or more than half of one group of at
    least ``_MIN_GROUP`` tensors (Module forward, Module backward, API forward, ...; see :func:`_group_of`).
    A few leftovers stay unmatched as msprobe leaves them, since pairing them by position could join
    tensors that only share a shape; a renamed model, though, would otherwise compare nothing."""
    result = _exact_pairs(golden, target, mapping)
    if not (result.unmatched_target and result.unmatched_golden):
        return result
    _apply(result, target, _normalised_pairs(golden, target, result))
    # a name a dump holds twice cannot say which of its rows a pair means: only names pair it
    spent_golden, spent_target = _duplicated(golden), _duplicated(target)
    regions_golden, regions_target = _pair_regions(golden, target, result, spent_golden, spent_target)
    spent_golden |= regions_golden
    spent_target |= regions_target
    t_left = [target.entry(n) for n in result.unmatched_target if n not in spent_target]
    g_left = [golden.entry(n) for n in result.unmatched_golden if n not in spent_golden]
    if not (t_left and g_left):
        return result
    groups, reason = _order_groups(target, t_left, by_order)
    if not groups:
        return result
    new = _order_pairs([e for e in g_left if _group_of(e) in groups], [e for e in t_left if _group_of(e) in groups])
    _apply(result, target, new)
    result.auto_order_fallback = not by_order
    result.notes.append(f"{reason}: paired {len(new)} by execution order and shape")
    return result


def _duplicated(dump: Dump) -> set[str]:
    """Row names that occur more than once in ``dump``."""
    return {n for n, k in Counter(e.name for e in dump.entries).items() if k > 1}


def _apply(result: Pairing, target: Dump, new_pairs: Sequence[Pair]) -> None:
    """Merge ``new_pairs`` into ``result``, keeping pairs in target execution order."""
    if not new_pairs:
        return
    by_target = {p.target_name: p for p in result.pairs}
    by_target.update({p.target_name: p for p in new_pairs})
    # ``pop``: a name the target holds twice still gives one pair, not two copies of it
    result.pairs = [by_target.pop(e.name) for e in target.entries if e.name in by_target]
    done_target = {p.target_name for p in new_pairs}
    done_golden = {p.golden_name for p in new_pairs}
    result.unmatched_target = [n for n in result.unmatched_target if n not in done_target]
    result.unmatched_golden = [n for n in result.unmatched_golden if n not in done_golden]


# --------------------------------------------------------------------------- normalised names
# When the target framework renames or wraps modules (DDP's ``module.``, torch.compile's ``_orig_mod.``,
# an NPU class replacing a torch one, ``npu_`` fused APIs), exact names leave rows unmatched; names that
# agree once wrappers, class names and API namespaces are dropped (and are unique on both sides) pair as
# ``normalised``.

_WRAPPER_SEGMENTS = frozenset({"module", "_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module"})
_API_NAMESPACES = frozenset({"functional", "torch", "tensor", "npu", "aten", "distributed", "vf", "mint", "jit",
                             "primitive"})


def normalise_name(name: str) -> str:
    """A name with wrappers, class names, API namespaces and ``npu_`` prefixes removed, lower-cased."""
    import re

    m = re.match(r"^(?P<key>.+?)\.(?P<dir>forward|backward)(?P<call>\.\d+)?(?P<rest>\..*)?$", name)
    if m is None:
        return name.lower()
    key = m.group("key").split(".")
    rest = (m.group("call") or "") + (m.group("rest") or "")
    if key[0] == "Module" and len(key) >= 3:
        segments = [s for s in key[1:-1] if s not in _WRAPPER_SEGMENTS]  # drop "Module" and the class
        head = "module:" + ".".join(segments)
    else:
        parts = [p for p in key if p.lower() not in _API_NAMESPACES]
        parts = [p[4:] if p.lower().startswith("npu_") else p for p in parts]
        head = "api:" + ".".join(parts)
    return f"{head}.{m.group('dir')}{rest}".lower()


def _normalised_pairs(golden: Dump, target: Dump, result: Pairing) -> list[Pair]:
    """Leftovers whose normalised name is unique on both sides."""
    g_norm: dict[str, list[str]] = {}
    for n in result.unmatched_golden:
        g_norm.setdefault(normalise_name(n), []).append(n)
    t_count = Counter(normalise_name(n) for n in result.unmatched_target)
    pairs = []
    for n in result.unmatched_target:
        key = normalise_name(n)
        cands = g_norm.get(key, [])
        if len(cands) == 1 and t_count[key] == 1:
            pairs.append(Pair(cands[0], n, "normalised"))
    return pairs


# --------------------------------------------------------------------------- tensors and ops
# Both fallbacks reason about "ops" (all rows of one dump.json key: a module or API call) and compare
# tensors by role, shape (never dtype: an fp16 target pairs with an fp32 golden) and, where the dump has
# them, the Max/Min/Mean/Norm statistics msprobe writes for every tensor.

_STATS = ("Max", "Min", "Mean", "Norm")
_REL_TOL = 1e-3
_LOW_PRECISION_EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


@dataclass
class _Op:
    """The rows of one dump.json key, in execution order."""

    key: str
    rows: list[DumpEntry]

    @property
    def first(self) -> int:
        return self.rows[0].index

    @property
    def last(self) -> int:
        return self.rows[-1].index

    def of_role(self, role: str) -> list[DumpEntry]:
        return [r for r in self.rows if r.role == role and r.shape is not None]


def _ops(entries: Iterable[DumpEntry]) -> list[_Op]:
    """Entries grouped by their dump.json key, ordered by each key's first row."""
    ops: dict[str, _Op] = {}
    for e in sorted(entries, key=lambda x: x.index):
        ops.setdefault(e.module_key, _Op(e.module_key, [])).rows.append(e)
    return list(ops.values())


def _group_of(e: DumpEntry) -> tuple[str, str]:
    """(``Module``|``API``, ``forward``|``backward``|``parameters_grad``): rows of different groups never
    pair by order, so a forward row cannot meet a backward one, nor a module row an API call's."""
    segments = e.module_key.split(".")
    kind = "Module" if segments[0] == "Module" else "API"
    if "parameters_grad" in segments:
        return kind, "parameters_grad"
    return kind, "backward" if "backward" in segments else "forward"


def _has_stats(e: DumpEntry) -> bool:
    return all(e.stats.get(k) is not None for k in _STATS)


def _tolerance(a: DumpEntry, b: DumpEntry) -> float:
    """Relative tolerance on statistics: exact for integers and bools, 1e-3 for floats, widened to two
    ulps for fp16/bf16 (their rounding alone moves a Max by half an ulp)."""
    dtypes = {a.dtype or "", b.dtype or ""}
    if all(d.startswith(("int", "uint", "bool")) for d in dtypes if d) and any(dtypes):
        return 0.0
    return max([_REL_TOL] + [2 * _LOW_PRECISION_EPS[d] for d in dtypes if d in _LOW_PRECISION_EPS])


def _stats_close(a: DumpEntry, b: DumpEntry) -> bool:
    """Whether both rows carry statistics and they agree: the evidence that two tensors are the same."""
    if not (_has_stats(a) and _has_stats(b)):
        return False
    tol = _tolerance(a, b)
    scale = max(abs(s[k] or 0.0) for s in (a.stats, b.stats) for k in ("Max", "Min"))
    for k in _STATS:
        x, y = a.stats[k], b.stats[k]
        assert x is not None and y is not None
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        # a Mean near zero (normalised activations) is judged against the tensor's range
        floor = scale if k == "Mean" else 1e-3 * scale
        if not abs(x - y) <= tol * max(abs(x), abs(y), floor):
            return False
    return True


def _same_tensor(a: DumpEntry, b: DumpEntry, use_stats: bool) -> bool:
    """Same shape (any dtype) and, when statistics are in use, close statistics."""
    return a.shape is not None and a.shape == b.shape and (not use_stats or _stats_close(a, b))


def _suffix(e: DumpEntry) -> str:
    """The row's place inside its op (``.input.0``, ``.parameters.weight``), shared by renamed twins."""
    return e.name[len(e.module_key):] if e.name.startswith(e.module_key) else e.name


# --------------------------------------------------------------------------- fused regions
# A target that calls one fused API where the golden ran decomposed ones (matmul, div, softmax, matmul
# for attention; mean, sub, pow, mean, add, sqrt, div, mul, add for a layer norm) leaves both sides
# unmatched, so the compare would skip exactly the op a migration most often gets wrong. The golden run
# starts at the first free golden op that consumes the fused op's first input and ends at the op that
# produces its output; with statistics both ends are checked by value, without them only shapes and
# execution order place the run (and the region's note says so).

_MAX_RUN = 64  # golden ops one fused op may stand for
_SCAN = 128  # golden API calls after the left anchor searched for the run's start (keeps large dumps linear)
_REGION_NOTES = 10  # region lines in Pairing.notes; the rest are summed up in one line


@dataclass
class _Anchors:
    """(target index, golden index) of the pairs made so far: bounds where a fused op's golden run can be.

    Regions are found in target order, so the last region found is the only new left bound a later fused
    op can have; it is kept apart instead of inserted (which would cost a copy of the list per region)."""

    t_idx: list[int]
    g_idx: list[int]
    last_region: tuple[int, int] = (-1, -1)  # (target index, golden index) of the latest region's last rows

    @classmethod
    def of(cls, golden: Dump, target: Dump, pairs: Iterable[Pair]) -> _Anchors:
        both = sorted((target.entry(p.target_name).index, golden.entry(p.golden_name).index) for p in pairs)
        return cls([t for t, _ in both], [g for _, g in both])

    def window(self, op: _Op) -> tuple[float, float]:
        """Golden indices strictly between the partners of the target rows just before and after ``op``."""
        i = bisect.bisect_left(self.t_idx, op.first)
        j = bisect.bisect_right(self.t_idx, op.last)
        lo = float(self.g_idx[i - 1]) if i > 0 else -1.0
        if self.last_region[0] >= 0 and (i == 0 or self.t_idx[i - 1] < self.last_region[0]):
            lo = float(self.last_region[1])
        hi = float(self.g_idx[j]) if j < len(self.g_idx) else math.inf
        return lo, (hi if hi > lo else math.inf)


def _backward_key(key: str) -> str | None:
    """``Functional.layer_norm.0.forward`` -> ``Functional.layer_norm.0.backward``."""
    return key[: -len("forward")] + "backward" if key.endswith(".forward") else None


def _pair_regions(golden: Dump, target: Dump, result: Pairing, skip_golden: set[str],
                  skip_target: set[str]) -> tuple[set[str], set[str]]:
    """Pair free fused target APIs with the golden runs they replace; return the golden and target rows
    the regions account for (paired or not), which the order fallback must leave alone."""
    g_free = set(result.unmatched_golden) - skip_golden
    t_free = set(result.unmatched_target) - skip_target
    g_fwd = _ops(e for e in golden.entries if _group_of(e) == ("API", "forward"))
    g_ops = {op.key: op for op in _ops(golden.entries)}
    t_ops = {op.key: op for op in _ops(target.entries)}
    candidates = [op for op in t_ops.values() if _group_of(op.rows[0]) == ("API", "forward")
                  and all(r.name in t_free for r in op.rows) and op.of_role("input") and op.of_role("output")]
    free = {op.key for op in g_fwd if all(r.name in g_free for r in op.rows)}
    if not (candidates and free):
        return set(), set()
    firsts = [op.first for op in g_fwd]
    with_stats = {op.key for op in g_fwd if all(_has_stats(r) for r in op.rows if r.shape is not None)}
    anchors = _Anchors.of(golden, target, result.pairs)
    made: list[Pair] = []
    spent_golden: set[str] = set()
    spent_target: set[str] = set()
    for fused in candidates:
        lo, hi = anchors.window(fused)
        begin = bisect.bisect_right(firsts, lo)
        inside = [op for op in g_fwd[begin:begin + _SCAN] if op.first < hi]
        found = _region_run(fused, inside, free, with_stats)
        if found is None:
            continue
        run, use_stats = found
        pairs = _region_forward_pairs(fused, run, use_stats)
        bwd = _region_backward_pairs(fused, run, t_ops, g_ops, g_free, use_stats)
        made += pairs + bwd
        anchors.last_region = (fused.last, run[-1].last)
        free.difference_update(op.key for op in run)
        result.regions.append(Region(fused.key, tuple(op.key for op in run),
                                     _region_note(fused, run, pairs, bwd, use_stats)))
        spent_target.update(_rows_of(t_ops, [fused.key]))
        spent_golden.update(_rows_of(g_ops, [op.key for op in run]))
    _apply(result, target, made)
    result.notes += [r.note for r in result.regions[:_REGION_NOTES]]
    if len(result.regions) > _REGION_NOTES:
        result.notes.append(f"... and {len(result.regions) - _REGION_NOTES} more fused regions (see regions)")
    return spent_golden, spent_target


def _rows_of(ops: dict[str, _Op], forward_keys: list[str]) -> set[str]:
    """Row names of these forward ops and of their backward twins."""
    keys = forward_keys + [k for k in map(_backward_key, forward_keys) if k is not None]
    return {r.name for k in keys if k in ops for r in ops[k].rows}


def _region_run(fused: _Op, inside: list[_Op], free: set[str],
                with_stats: set[str]) -> tuple[list[_Op], bool] | None:
    """The golden ops ``fused`` replaces among ``inside`` (golden API calls between the partners of its
    neighbours, in order), and whether statistics decided it; None when no run fits."""
    f_in, f_out = fused.of_role("input"), fused.of_role("output")
    use_stats = all(_has_stats(r) for r in f_in + f_out) and \
        all(op.key in with_stats for op in inside if op.key in free)
    start = next((i for i, op in enumerate(inside) if op.key in free
                  and any(_same_tensor(r, f_in[0], use_stats) for r in op.of_role("input"))), None)
    if start is None:
        return None
    run: list[_Op] = []
    for op in inside[start:start + _MAX_RUN]:
        if op.key not in free:
            break  # a golden op that already has a partner ends the stretch the fused op can stand for
        run.append(op)
        if use_stats and any(_same_tensor(g, t, True) for g in op.of_role("output") for t in f_out):
            return run, True
    if use_stats:
        return None
    ends = [i for i, op in enumerate(run) if any(g.shape == f_out[0].shape for g in op.of_role("output"))]
    return (run[: ends[-1] + 1], False) if ends else None


def _external_inputs(run: list[_Op]) -> list[DumpEntry]:
    """Inputs of the run not produced inside it (by value), in execution order."""
    produced: list[DumpEntry] = []
    external = []
    for op in run:
        external += [r for r in op.of_role("input") if not any(_same_tensor(r, p, True) for p in produced)]
        produced += op.of_role("output")
    return external


def _region_forward_pairs(fused: _Op, run: list[_Op], use_stats: bool) -> list[Pair]:
    """Fused inputs with the run's external inputs, fused outputs with the run's outputs (last op first).

    Without statistics only the first input and the output are placed (by shape): the other inputs
    could be any tensor of the same shape, and a wrong pair would read as a divergence."""
    f_in, f_out = fused.of_role("input"), fused.of_role("output")
    if not use_stats:
        first = next(r for r in run[0].of_role("input") if r.shape == f_in[0].shape)
        last = next(r for r in run[-1].of_role("output") if r.shape == f_out[0].shape)
        return [Pair(first.name, f_in[0].name, "region"), Pair(last.name, f_out[0].name, "region")]
    pairs = _match_rows(f_in, _external_inputs(run))
    outputs = [r for op in reversed(run) for r in op.of_role("output")]
    return pairs + _match_rows(f_out, outputs)


def _match_rows(targets: list[DumpEntry], goldens: list[DumpEntry]) -> list[Pair]:
    """Each target row with the first unused golden row holding the same tensor (shape and statistics)."""
    pairs: list[Pair] = []
    taken: set[str] = set()
    for t in targets:
        g = next((g for g in goldens if g.name not in taken and _same_tensor(g, t, True)), None)
        if g is not None:
            taken.add(g.name)
            pairs.append(Pair(g.name, t.name, "region"))
    return pairs


def _region_backward_pairs(fused: _Op, run: list[_Op], t_ops: dict[str, _Op], g_ops: dict[str, _Op],
                           g_free: set[str], use_stats: bool) -> list[Pair]:
    """The fused op's backward: its incoming gradient is the last golden op's (same shape), and with
    statistics each gradient it returns pairs with a golden backward output holding the same values (an
    input consumed twice inside the run has no such single row and stays unmatched)."""
    t_key, g_key = _backward_key(fused.key), _backward_key(run[-1].key)
    if t_key not in t_ops or g_key not in g_ops:
        return []
    t_bwd = t_ops[t_key]
    g_in = [r for r in g_ops[g_key].of_role("input") if r.name in g_free]
    pairs: list[Pair] = []
    for t in t_bwd.of_role("input"):
        same = [g for g in g_in if g.shape == t.shape and g.name not in {p.golden_name for p in pairs}]
        pick = next((g for g in same if _stats_close(g, t)), same[0] if same else None)
        if pick is not None:
            pairs.append(Pair(pick.name, t.name, "region"))
    if not use_stats:
        return pairs
    g_out = [r for op in run for k in [_backward_key(op.key)] if k in g_ops
             for r in g_ops[k].of_role("output") if r.name in g_free]
    return pairs + _match_rows(t_bwd.of_role("output"), g_out)


def _region_note(fused: _Op, run: list[_Op], fwd: list[Pair], bwd: list[Pair], use_stats: bool) -> str:
    """One line: what the fused op stands for, how sure, and what of it got a partner."""
    span = run[0].key if len(run) == 1 else f"{run[0].key} .. {run[-1].key}"
    how = ("input and output statistics agree" if use_stats else
           "no statistics in the dump: placed by shapes and execution order only")
    n_in, n_out = len(fused.of_role("input")), len(fused.of_role("output"))
    paired_in = sum(1 for p in fwd if ".input" in p.target_name[len(fused.key):])
    back = f", backward rows {len(bwd)}" if bwd else ""
    return (f"fused {fused.key} stands for {len(run)} golden ops ({span}; {how}): paired inputs "
            f"{paired_in}/{n_in}, outputs {len(fwd) - paired_in}/{n_out}{back}")


# --------------------------------------------------------------------------- execution order + shape
# Walking both leftovers in execution order, group by group: first whole ops (a target op whose rows have
# the same places, roles and shapes as a golden op's), then single rows (same role and shape). The next
# candidate within a short window wins, or the first one in it whose statistics agree, which settles
# ties between equal shapes (two blocks of a model) without letting a diverging target lose its partner.

_ORDER_WINDOW = 8
_MIN_GROUP = 4


def _order_groups(target: Dump, t_left: list[DumpEntry],
                  by_order: bool) -> tuple[set[tuple[str, str]], str]:
    """The groups order + shape walks, and why (the start of the note)."""
    every = {_group_of(e) for e in t_left}
    if by_order:
        return every, "asked to pair by order"
    total, left = len(target.entries), len(t_left)
    if left * 2 > total:
        return every, f"most names did not pair ({left} of {total} target tensors)"
    sizes = Counter(_group_of(e) for e in target.entries)
    lefts = Counter(_group_of(e) for e in t_left)
    hit = sorted(g for g, n in lefts.items() if sizes[g] >= _MIN_GROUP and n * 2 > sizes[g])
    if not hit:
        return set(), ""
    label = _groups_label(hit, set(sizes))
    unit = f"{label} tensors" if len(hit) == 1 or "," not in label else "such tensors"
    return set(hit), (f"most {label} names did not pair ({sum(lefts[g] for g in hit)} of "
                      f"{sum(sizes[g] for g in hit)} {unit})")


def _groups_label(hit: list[tuple[str, str]], present: set[tuple[str, str]]) -> str:
    """``Module`` when every Module group of the target is hit, else ``Module forward, API backward``."""
    parts = []
    for kind in ("Module", "API"):
        mine = [g for g in hit if g[0] == kind]
        if mine and len(mine) == sum(1 for g in present if g[0] == kind):
            parts.append(kind)
        else:
            parts += [f"{kind} {phase}" for _, phase in mine]
    return ", ".join(parts)


def _order_pairs(g_left: list[DumpEntry], t_left: list[DumpEntry]) -> list[Pair]:
    """Order + shape pairs, group by group."""
    pairs: list[Pair] = []
    for group in sorted({_group_of(e) for e in t_left}):
        g_rows = [e for e in g_left if _group_of(e) == group]
        t_rows = [e for e in t_left if _group_of(e) == group]
        op_pairs = _order_ops(_ops(g_rows), _ops(t_rows))
        done_g = {p.golden_name for p in op_pairs}
        done_t = {p.target_name for p in op_pairs}
        pairs += op_pairs + _order_rows([e for e in g_rows if e.name not in done_g],
                                        [e for e in t_rows if e.name not in done_t])
    return pairs


def _signature(op: _Op) -> tuple[tuple[str, str, tuple[int, ...]], ...] | None:
    """Places, roles and shapes of an op's rows; None when a shape is unknown (rows then pair singly)."""
    if any(r.shape is None for r in op.rows):
        return None
    return tuple((_suffix(r), r.role, tuple(r.shape or ())) for r in op.rows)


def _pick(cands: Sequence[int], close: Sequence[bool]) -> int:
    """The first candidate whose statistics agree, else the first one."""
    return next((c for c, ok in zip(cands, close, strict=True) if ok), cands[0])


def _order_ops(g_ops: list[_Op], t_ops: list[_Op]) -> list[Pair]:
    """Whole ops with the same signature, in order; rows pair by their place in the op."""
    pairs: list[Pair] = []
    cursor = 0
    for t in t_ops:
        sig = _signature(t)
        if sig is None:
            continue
        cands = [j for j in range(cursor, min(len(g_ops), cursor + _ORDER_WINDOW)) if _signature(g_ops[j]) == sig]
        if not cands:
            continue
        j = _pick(cands, [all(_stats_close(a, b) for a, b in zip(g_ops[c].rows, t.rows, strict=True))
                          for c in cands])
        pairs += [Pair(g.name, e.name, "order_shape") for g, e in zip(g_ops[j].rows, t.rows, strict=True)]
        cursor = j + 1
    return pairs


def _order_rows(g_rows: list[DumpEntry], t_rows: list[DumpEntry]) -> list[Pair]:
    """Single rows of the same role and shape, in order (an input never pairs with an output)."""
    g_order = sorted(g_rows, key=lambda x: x.index)
    pairs: list[Pair] = []
    cursor = 0
    for e in sorted(t_rows, key=lambda x: x.index):
        if e.shape is None:
            continue
        window = range(cursor, min(len(g_order), cursor + _ORDER_WINDOW))
        cands = [j for j in window if g_order[j].role == e.role and g_order[j].shape == e.shape]
        if not cands:
            continue
        j = _pick(cands, [_stats_close(g_order[c], e) for c in cands])
        pairs.append(Pair(g_order[j].name, e.name, "order_shape"))
        cursor = j + 1
    return pairs


def _exact_pairs(golden: Dump, target: Dump, mapping: dict[str, str] | None) -> Pairing:
    mapping = mapping or {}
    prefixes = sorted(((k, v) for k, v in mapping.items() if k.endswith(".")), key=lambda kv: -len(kv[0]))
    golden_left = {e.name for e in golden.entries}
    result = Pairing()
    for e in target.entries:
        want = _mapped(e.name, mapping, prefixes) if mapping else None
        if want is not None and want in golden_left:
            result.pairs.append(Pair(want, e.name, "mapping"))
            golden_left.discard(want)
        elif e.name in golden_left:
            result.pairs.append(Pair(e.name, e.name, "exact"))
            golden_left.discard(e.name)
        else:
            result.unmatched_target.append(e.name)
    result.unmatched_golden = [e.name for e in golden.entries if e.name in golden_left]
    return result
