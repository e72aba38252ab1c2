"""Which golden tensor is compared with which target tensor.

Pairing is separate from the metrics because it is where migrations differ most: a renamed
module, an extra cast, a fused operator. Strategies run in order and each only looks at what
the previous ones left unmatched; every pair records the ``method`` that matched it so a reviewer
can judge how much to trust the row:

1. ``mapping`` / ``exact``: a user mapping, then identical names. An API call number only names the same
   call when both runs make that API's calls alike: where one run calls an API more often than the other
   (a swapped activation, a fused op written out), an identical name whose call sits elsewhere between its
   paired neighbours is dropped again;
2. ``normalised``: names that agree once wrappers, class names and API namespaces are dropped;
3. ``renumbered``: the same API at the same place (between the same paired neighbours) under another call
   number;
4. ``region``: one fused API (``Functional.scaled_dot_product_attention``, ``Functional.layer_norm``,
   ``NPU.npu_fusion_attention``, ...) against the run of decomposed APIs it replaces, on either side;
5. ``different_api``: the one unpaired API call of each run between the same paired neighbours, when they
   take the same data and return tensors of the same shapes (``F.relu`` where the golden calls ``F.gelu``);
6. ``order_shape``: execution order + role + shape, when asked (``by_order``) or automatically when most
   names did not pair (a renamed model), see :func:`pair_entries`. A target module holding exactly the
   tensors of the module recorded just before it (a wrapper the golden lacks) stays unmatched.

What the fallbacks did is written to :attr:`Pairing.notes` (and :attr:`Pairing.regions`), because a
pairing that was guessed must say so next to the numbers it produced.

Mapping file (YAML or JSON): ``{target_name: golden_name}`` — the same direction as msprobe's
``data_mapping`` (NPU name -> bench name). A key ending in ``.`` is a prefix rule
(``Module.layer1.: Module.layers.0.``) applied to every name starting with it.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

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
    """A fused op and the ops of the other run it replaces: kept so a reviewer sees what a ``region`` row spans.

    ``fused_side`` is ``target`` (one fused target API, ``golden_keys`` the decomposed golden run) or
    ``golden`` (one fused golden API in ``golden_keys``, the decomposed target run in ``target_keys``, whose
    first key is ``target_key``)."""

    target_key: str
    golden_keys: tuple[str, ...]
    note: str
    fused_side: str = "target"
    target_keys: tuple[str, ...] = ()


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
    """Pair the two dumps' entries: mapping first (explicit beats implicit), then exact names (less those
    whose API call numbers shifted), normalised names, renumbered calls, fused regions (either side), a
    different API in the same place, then execution order + shape (see the module docstring).

    Order + shape runs on every group when ``by_order`` is set. Without it, it runs only where names
    clearly failed: more than half of all target tensors unmatched, or more than half of one group of at
    least ``_MIN_GROUP`` tensors (Module forward, Module backward, API forward, ...; see :func:`_group_of`).
    A few leftovers stay unmatched as msprobe leaves them, since pairing them by position could join
    tensors that only share a shape; a renamed model, though, would otherwise compare nothing."""
    result = _exact_pairs(golden, target, mapping)
    if result.unmatched_target or result.unmatched_golden:
        _drop_shifted(golden, target, result)
    if not (result.unmatched_target and result.unmatched_golden):
        return result
    _apply(result, target, _normalised_pairs(golden, target, result))
    # a name a dump holds twice cannot say which of its rows a pair means: only names pair it
    spent_golden, spent_target = _duplicated(golden), _duplicated(target)
    g_ops, t_ops = _Layout(golden), _Layout(target)
    _apply(result, target, _gap_pairs(g_ops, t_ops, result, spent_golden, spent_target, swaps=False))
    _apply(result, target, _backward_twins(g_ops, t_ops, result, spent_golden, spent_target))
    regions_golden, regions_target = _pair_regions(g_ops, t_ops, result, spent_golden, spent_target)
    spent_golden |= regions_golden
    spent_target |= regions_target
    _apply(result, target, _gap_pairs(g_ops, t_ops, result, spent_golden, spent_target, swaps=True))
    t_left = [target.entry(n) for n in result.unmatched_target if n not in spent_target]
    g_left = [golden.entry(n) for n in result.unmatched_golden if n not in spent_golden]
    if not (t_left and g_left):
        return result
    groups, reason = _order_groups(target, t_left, by_order)
    if not groups:  # too few left for the order fallback: renamed modules may still pair by class and place
        _apply(result, target, _renamed_modules(g_ops, t_ops, result, spent_golden, spent_target))
        return result
    new, wrappers = _order_pairs([e for e in g_left if _group_of(e) in groups],
                                 [e for e in t_left if _group_of(e) in groups])
    _apply(result, target, new)
    result.auto_order_fallback = not by_order
    result.notes.append(f"{reason}: paired {len(new)} by execution order and shape")
    if wrappers:
        shown = ", ".join(wrappers[:3]) + (f" and {len(wrappers) - 3} more" if len(wrappers) > 3 else "")
        result.notes.append(f"{len(wrappers)} target modules left unmatched as wrappers the golden does not have "
                            f"({shown}): each takes and returns exactly the tensors of the module recorded just "
                            "before it")
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
    """Leftovers whose normalised name is unique on both sides (never two identical names: exact pairing
    left those apart on purpose, see :func:`_drop_shifted`)."""
    g_norm: dict[str, list[str]] = {}
    for n in result.unmatched_golden:
        g_norm.setdefault(normalise_name(n), []).append(n)
    t_count = Counter(normalise_name(n) for n in result.unmatched_target)
    pairs = []
    for n in result.unmatched_target:
        key = normalise_name(n)
        cands = g_norm.get(key, [])
        if len(cands) == 1 and t_count[key] == 1 and cands[0] != n:
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


@dataclass
class _Layout:
    """A dump's ops, built once on first use: the region search (in both directions) and the gap pairing
    all walk them, and on a dump of 300k rows building them is most of the cost."""

    dump: Dump
    _ops: list[_Op] | None = None
    _by_key: dict[str, _Op] | None = None

    @property
    def ops(self) -> list[_Op]:
        if self._ops is None:
            self._ops = _ops(self.dump.entries)
        return self._ops

    @property
    def by_key(self) -> dict[str, _Op]:
        if self._by_key is None:
            self._by_key = {op.key: op for op in self.ops}
        return self._by_key


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


def _stats_close(a: DumpEntry, b: DumpEntry, at_least: float = 0.0) -> bool:
    """Whether both rows carry statistics and they agree (to the dtypes' tolerance, or ``at_least``): the
    evidence that two tensors are the same."""
    if not (_has_stats(a) and _has_stats(b)):
        return False
    tol = max(_tolerance(a, b), at_least)
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


# --------------------------------------------------------------------------- API call numbers
# msprobe numbers the calls of each API (``Functional.gelu.2.forward`` is the third gelu call). Where one run
# makes a call the other does not (``F.relu`` for one ``F.gelu``, a GELU written out with tensor operations),
# every later call of that API is numbered one off, so identical names join different calls: the target's
# ``gelu.1`` (its third activation) meets the golden's ``gelu.1`` (the second). Such a pair lies outside the
# stretch between the golden partners of its paired neighbours, which gives it away; calls of APIs both runs
# make equally often are trusted as named. Between two paired neighbours, the calls left over then pair as
# the same API under another call number, or, one on each side, as a different API in the same place.

_API_KEY = re.compile(r"^(?!Module\.)(?P<api>.+)\.(?P<n>\d+)\.(?P<dir>forward|backward)$")
_MAX_GAP = 8  # unpaired API calls per side between two paired neighbours that gap pairing looks at
_SWAP_NOTES = 10  # different-API lines in Pairing.notes; the rest are summed up in one line


def _api_of(key: str) -> tuple[str, str] | None:
    """(API, direction) of an API call's key: ``Functional.gelu.1.forward`` -> (``Functional.gelu``,
    ``forward``); None for module keys, whose numbers count calls of one module, not of an API."""
    m = _API_KEY.match(key)
    return (m.group("api"), m.group("dir")) if m else None


def _calls(dump: Dump) -> dict[str, tuple[str, str]]:
    """(API, direction) of every API call key of the dump, in dump order."""
    out: dict[str, tuple[str, str]] = {}
    for key in dict.fromkeys(e.module_key for e in dump.entries):
        api = _api_of(key)
        if api is not None:
            out[key] = api
    return out


def _drop_shifted(golden: Dump, target: Dump, result: Pairing) -> None:
    """Undo name pairs of APIs the runs call a different number of times whose golden call lies outside the
    stretch between the golden partners of the target call's neighbours (the call numbers shifted)."""
    g_keys, t_keys = _calls(golden), _calls(target)
    g_count, t_count = Counter(g_keys.values()), Counter(t_keys.values())
    shifted = {api for api in g_count.keys() | t_count.keys() if g_count[api] != t_count[api]}
    suspect_keys = {key for key, api in t_keys.items() if api in shifted}
    if not suspect_keys:
        return
    suspects: dict[str, list[Pair]] = {}
    trusted: list[Pair] = []
    exact_backward: dict[str, list[Pair]] = {}
    for p in result.pairs:
        key = target.entry(p.target_name).module_key
        if key in suspect_keys and p.method == "exact":
            suspects.setdefault(key, []).append(p)
        else:
            trusted.append(p)
            if p.method == "exact" and key.endswith(".backward"):
                exact_backward.setdefault(key, []).append(p)
    anchors = _Anchors.of(golden, target, trusted)
    g_rows, t_rows = _tensor_rows(golden), _tensor_rows(target)
    dropped = [key for key, pairs in suspects.items()
               if _misplaced(golden, target, anchors, pairs) or _other_shapes(golden, target, pairs)
               or _other_signature(golden, pairs, g_rows, t_rows.get(key, 0))
               or _next_call_fits_better(golden, target, key, pairs)]
    # a backward call is numbered as its forward call: when that one lost its same-name partner, so does it,
    # even where both runs make as many backward calls of the API (an eval-mode dropout has none)
    twins = {key[: -len("forward")] + "backward" for key in dropped if key.endswith(".forward")}
    dropped += [key for key in twins if key not in dropped and (key in suspects or key in exact_backward)]
    suspects.update({key: exact_backward[key] for key in twins if key in exact_backward})
    if not dropped:
        return
    gone = [p for key in dropped for p in suspects[key]]
    gone_target = {p.target_name for p in gone}
    result.pairs = [p for p in result.pairs if p.target_name not in gone_target]
    result.unmatched_target = sorted(result.unmatched_target + [p.target_name for p in gone],
                                     key=lambda n: target.entry(n).index)
    result.unmatched_golden = sorted(result.unmatched_golden + [p.golden_name for p in gone],
                                     key=lambda n: golden.entry(n).index)
    shown = ", ".join(dropped[:3]) + (f" and {len(dropped) - 3} more" if len(dropped) > 3 else "")
    result.notes.append(f"{len(dropped)} API calls did not keep their same-name golden partner ({shown}): the "
                        "runs call that API a different number of times and the golden call of that number "
                        "lies elsewhere between the paired neighbours")


def _other_shapes(golden: Dump, target: Dump, pairs: list[Pair]) -> bool:
    """Whether a row of the call has another shape than its same-name golden partner: of an API the runs call
    a different number of times, that is another call under the same number (a target-only ``x + 1.0`` on a
    (4, 17, 1536) tensor is not the golden's residual add of (4, 17, 384))."""
    for p in pairs:
        t_shape, g_shape = target.entry(p.target_name).shape, golden.entry(p.golden_name).shape
        if t_shape is not None and g_shape is not None and t_shape != g_shape:
            return True
    return False


def _tensor_rows(dump: Dump) -> Counter[str]:
    """Tensor rows per call key."""
    return Counter(e.module_key for e in dump.entries)


def _other_signature(golden: Dump, pairs: list[Pair], g_rows: Counter[str], t_count: int) -> bool:
    """Whether the call and its same-name golden partner take or give another number of tensors: of an API the runs
    call a different number of times, that is another call under the same number (a target-only ``x + 0.0`` just
    before the golden's residual ``x + y``: the same first input, but a scalar where the golden adds a tensor)."""
    g_key = golden.entry(pairs[0].golden_name).module_key
    return g_rows.get(g_key, 0) != t_count


def _next_call_fits_better(golden: Dump, target: Dump, key: str, pairs: list[Pair]) -> bool:
    """Whether the target's next call of the API gives outputs far closer to the golden partner's than this call's:
    a call the target makes in addition (``x / 1.0`` just before the golden's ``x / 4.0``, the same inputs in)
    took the number of the call that follows it."""
    m = _API_KEY.match(key)
    if m is None:
        return False
    after = f"{m.group('api')}.{int(m.group('n')) + 1}.{m.group('dir')}"
    g_out = [e for e in (golden.entry(p.golden_name) for p in pairs) if e.role == "output"]
    t_out = [e for e in (target.entry(p.target_name) for p in pairs) if e.role == "output"]
    n_out = [target.by_name[n] for n in (f"{after}.output.{i}" for i in range(len(t_out))) if n in target.by_name]
    if not g_out or len(n_out) != len(g_out) or len(t_out) != len(g_out):
        return False
    here = max(_stat_distance(g, t) for g, t in zip(g_out, t_out, strict=True))
    there = max(_stat_distance(g, t) for g, t in zip(g_out, n_out, strict=True))
    return here > 0.01 and there < 0.1 * here


def _stat_distance(a: DumpEntry, b: DumpEntry) -> float:
    """Largest relative difference of two entries' recorded statistics (inf where they cannot be compared)."""
    worst = 0.0
    for k in ("Max", "Min", "Mean", "Norm"):
        x, y = a.stats.get(k), b.stats.get(k)
        if not isinstance(x, int | float) or not isinstance(y, int | float):
            continue
        x, y = float(x), float(y)
        if not (math.isfinite(x) and math.isfinite(y)):
            if x != y:
                return math.inf
            continue
        scale = max(abs(x), abs(y))
        if scale > 0:
            worst = max(worst, abs(x - y) / scale)
    return worst


def _misplaced(golden: Dump, target: Dump, anchors: _Anchors, pairs: list[Pair]) -> bool:
    """Whether the golden rows of ``pairs`` (one call) lie outside the stretch their target rows' neighbours
    bound; False when the neighbours cross and so bound nothing."""
    t_idx = [target.entry(p.target_name).index for p in pairs]
    g_idx = [golden.entry(p.golden_name).index for p in pairs]
    lo, hi = anchors.bounds(min(t_idx), max(t_idx))
    return hi > lo and not (lo < min(g_idx) and max(g_idx) < hi)


def _free_api_ops(ops: _Layout, unmatched: list[str], skip: set[str],
                  kind: Callable[[str], object] | None = None) -> list[_Op]:
    """API calls (module calls with ``kind=_module_class``) none of whose rows has a partner yet, in execution
    order."""
    free = set(unmatched) - skip
    if not free:
        return []
    is_kind = kind or _api_of
    keys = dict.fromkeys(ops.dump.entry(n).module_key for n in free)
    found = [ops.by_key[k] for k in keys if is_kind(k) and all(r.name in free for r in ops.by_key[k].rows)]
    return sorted(found, key=lambda op: op.first)


def _gap_windows(anchors: _Anchors, t_ops: list[_Op], g_ops: list[_Op], limit: int, *, inner_only: bool,
                 used: set[str] | None = None) -> Iterator[tuple[list[_Op], list[_Op]]]:
    """(target calls, golden calls) between the same two paired neighbours, at most ``limit`` a side; with
    ``inner_only`` never before the first or after the last neighbour. Golden calls whose key is in ``used`` (which
    the caller may add to between windows) are left out."""
    gaps: dict[int, list[_Op]] = {}
    for op in t_ops:  # in execution order, so a forward call is placed before its backward twin is tried
        gaps.setdefault(bisect.bisect_left(anchors.t_idx, op.first), []).append(op)
    g_firsts = [op.first for op in g_ops]
    for i, mine in gaps.items():
        lo = anchors.g_idx[i - 1] if i > 0 else -1
        hi = anchors.g_idx[i] if i < len(anchors.g_idx) else math.inf
        if hi <= lo or len(mine) > limit or (inner_only and not 0 < i < len(anchors.t_idx)):
            continue
        theirs: list[_Op] = []
        k = bisect.bisect_right(g_firsts, lo)
        while k < len(g_ops) and g_ops[k].first < hi and len(theirs) <= limit:
            if g_ops[k].last < hi and (used is None or g_ops[k].key not in used):
                theirs.append(g_ops[k])
            k += 1
        if theirs and len(theirs) <= limit:
            yield mine, theirs


def _gap_pairs(golden: _Layout, target: _Layout, result: Pairing, skip_golden: set[str], skip_target: set[str],
               *, swaps: bool) -> list[Pair]:
    """Pairs for the free API calls between the same two paired neighbours: the same API under another
    call number (``renumbered``), or, with ``swaps``, the only free call of each run there when they take
    the same data (``different_api``, see :func:`_swapped`). Notes say what was paired this way."""
    t_ops = _free_api_ops(target, result.unmatched_target, skip_target)
    g_ops = _free_api_ops(golden, result.unmatched_golden, skip_golden)
    if not (t_ops and g_ops):
        return []
    anchors = _Anchors.of(golden.dump, target.dump, result.pairs)
    swapped: set[tuple[str, str]] = set()  # (golden key, target key) of the different-API calls paired here
    used: set[str] = set()
    found: list[tuple[_Op, _Op]] = []
    # a different API is only placed between two paired neighbours, never at an end
    for mine, theirs in _gap_windows(anchors, t_ops, g_ops, _MAX_GAP, inner_only=swaps, used=used):
        matched = _swapped(theirs, mine, swapped) if swaps else _renumbered(theirs, mine)
        used.update(g.key for g, _ in matched)
        swapped.update((g.key, t.key) for g, t in matched)
        found += matched
    return _gap_result(found, result, swaps)


#: Unpaired module calls per side between two paired neighbours that module renaming looks at.
_MAX_MODULE_GAP = 64


def _module_class(key: str) -> tuple[str, str] | None:
    """(class, direction) of a module call's key: ``Module.encoder.layer.3.ffn_out.dense.Linear.forward.0`` ->
    (``Linear``, ``forward``); None for API calls."""
    if not key.startswith("Module."):
        return None
    parts = key.split(".")
    for i in range(len(parts) - 1, 1, -1):
        if parts[i] in ("forward", "backward", "parameters_grad"):
            return parts[i - 1], parts[i]
    return None


def _renamed_modules(golden: _Layout, target: _Layout, result: Pairing, skip_golden: set[str],
                     skip_target: set[str]) -> list[Pair]:
    """Module calls renamed in the target (an attribute ``intermediate`` now ``ffn_in``): between the same two
    paired neighbours, the unpaired module calls of both runs pair in order when they are the same classes with
    the same shapes, one for one; anything less certain stays unpaired."""
    t_ops = _free_api_ops(target, result.unmatched_target, skip_target, kind=_module_class)
    g_ops = _free_api_ops(golden, result.unmatched_golden, skip_golden, kind=_module_class)
    if not (t_ops and g_ops):
        return []
    anchors = _Anchors.of(golden.dump, target.dump, result.pairs)
    found: list[tuple[_Op, _Op]] = []
    for mine, theirs in _gap_windows(anchors, t_ops, g_ops, _MAX_MODULE_GAP, inner_only=True):
        if len(theirs) != len(mine):
            continue
        if all(_module_class(g.key) == _module_class(t.key) and _signature(g) is not None
               and _signature(g) == _signature(t) for g, t in zip(theirs, mine, strict=True)):
            found += list(zip(theirs, mine, strict=True))
    if not found:
        return []
    pairs = [Pair(g_row.name, t_row.name, "renamed") for g, t in found
             for g_row, t_row in zip(g.rows, t.rows, strict=True)]  # equal signatures: the rows line up
    result.notes.append(f"paired {len(found)} module calls the target names differently with the golden module of "
                        f"the same class and shapes in the same place, e.g. {found[0][1].key} with {found[0][0].key}")
    return pairs


def _backward_twins(golden: _Layout, target: _Layout, result: Pairing, skip_golden: set[str],
                    skip_target: set[str]) -> list[Pair]:
    """The free backward calls whose forward call paired under another call number, with that golden call's
    backward twin (``dropout.12.backward`` follows ``dropout.12.forward`` to the golden's ``dropout.16``)."""
    partner: dict[str, str] = {}
    for p in result.pairs:
        t_key, g_key = target.dump.entry(p.target_name).module_key, golden.dump.entry(p.golden_name).module_key
        if t_key != g_key and t_key.endswith(".forward") and _api_of(t_key) is not None:
            partner[t_key] = g_key
    if not partner:
        return []
    free_golden = {op.key: op for op in _free_api_ops(golden, result.unmatched_golden, skip_golden)}
    found: list[tuple[_Op, _Op]] = []
    for op in _free_api_ops(target, result.unmatched_target, skip_target):
        g_forward = partner.get(op.key[: -len("backward")] + "forward") if op.key.endswith(".backward") else None
        twin = free_golden.pop(g_forward[: -len("forward")] + "backward", None) if g_forward else None
        if twin is not None and _signature(twin) == _signature(op):
            found.append((twin, op))
    return _gap_result(found, result, swaps=False)


def _renumbered(theirs: list[_Op], mine: list[_Op]) -> list[tuple[_Op, _Op]]:
    """Golden and target calls of one gap that are calls of the same API, as many on each side, in order,
    with the same tensor shapes."""
    by_api: dict[tuple[str, str] | None, tuple[list[_Op], list[_Op]]] = {}
    for op in theirs:
        by_api.setdefault(_api_of(op.key), ([], []))[0].append(op)
    for op in mine:
        by_api.setdefault(_api_of(op.key), ([], []))[1].append(op)
    found: list[tuple[_Op, _Op]] = []
    for gs, ts in by_api.values():
        if len(gs) == len(ts) and all(_signature(g) is not None and _signature(g) == _signature(t)
                                      for g, t in zip(gs, ts, strict=True)):
            found += list(zip(gs, ts, strict=True))
    return found


#: How far (relative) the statistics of two calls' inputs may differ for the calls to count as taking the
#: same data: a low-precision target drifts a few percent from the golden by the middle of a network,
#: while a fault upstream (whose own call is then the first divergence) usually moves them more.
_SAME_DATA_TOL = 0.05


def _swapped(theirs: list[_Op], mine: list[_Op], swapped: set[tuple[str, str]]) -> list[tuple[_Op, _Op]]:
    """The gap's one golden and one target call when they are a different API in the same place, else nothing.

    Both run in the same direction, take as many tensors (at least one) and return tensors of the same
    shapes (an activation swapped for another). A forward call must also take the same data: inputs whose
    statistics agree, where the dump has them (without, shapes and place are all there is); a backward call
    pairs when its forward twin did (it is in ``swapped``), since its incoming gradient already carries the
    forward difference."""
    if len(theirs) != 1 or len(mine) != 1:
        return []
    g, t = theirs[0], mine[0]
    g_api, t_api = _api_of(g.key), _api_of(t.key)
    if g_api is None or t_api is None or g_api[1] != t_api[1]:
        return []
    g_in, t_in = g.of_role("input"), t.of_role("input")
    g_out, t_out = g.of_role("output"), t.of_role("output")
    if not (g_in and g_out) or len(g_in) != len(t_in) or len(g_out) != len(t_out) \
            or any(a.shape != b.shape for a, b in zip(g_out, t_out, strict=True)):
        return []
    if g_api[1] == "backward":
        twins = (_forward_key(g.key), _forward_key(t.key))
        return [(g, t)] if twins in swapped else []
    with_stats = all(_has_stats(r) for r in g_in + t_in)
    same_data = all(a.shape == b.shape and _stats_close(a, b, _SAME_DATA_TOL) for a, b in zip(g_in, t_in, strict=True))
    return [(g, t)] if same_data or not with_stats else []


def _forward_key(key: str) -> str:
    """``Functional.gelu.1.backward`` -> ``Functional.gelu.1.forward``."""
    return key[: -len("backward")] + "forward" if key.endswith(".backward") else key


def _gap_result(found: list[tuple[_Op, _Op]], result: Pairing, swaps: bool) -> list[Pair]:
    """Row pairs of the calls paired in gaps (each row with the other call's row in the same place, role and
    shape), and the notes saying so."""
    method = "different_api" if swaps else "renumbered"
    pairs: list[Pair] = []
    for g, t in found:
        by_place = {(_suffix(r), r.role, tuple(r.shape or ())): r for r in g.rows if r.shape is not None}
        pairs += [Pair(by_place[k].name, r.name, method) for r in t.rows
                  for k in [(_suffix(r), r.role, tuple(r.shape or ()))] if r.shape is not None and k in by_place]
    if not found:
        return pairs
    if not swaps:
        g, t = found[0]
        result.notes.append(f"paired {len(found)} API calls with the golden call of the same API in the same place "
                            f"under another call number (one run makes a call the other does not), e.g. {t.key} "
                            f"with {g.key}")
        return pairs
    result.notes += [f"{t.key} paired with the golden's {g.key} by position: a different API between the same "
                     "paired neighbours, taking the same data" for g, t in found[:_SWAP_NOTES]]
    if len(found) > _SWAP_NOTES:
        result.notes.append(f"... and {len(found) - _SWAP_NOTES} more calls paired with a different API by position")
    return pairs


# --------------------------------------------------------------------------- fused regions
# A run that calls one fused API where the other ran decomposed ones (matmul, div, softmax, matmul for
# attention; mean, sub, pow, mean, add, sqrt, div, mul, add for a layer norm; pow, mul, add, tanh, ... for
# a tanh GELU) leaves both sides unmatched, so the compare would skip exactly the op a migration most often
# gets wrong, and an order fallback would join the fused op with one piece of the decomposed run. The fused
# op is usually the target's (the NPU kernel), but a port that lacks a kernel writes the math out, so the
# golden can hold the fused call as well. The decomposed run starts at the first free op that consumes the
# fused op's first input and ends at the op that produces its output; with statistics both ends are checked
# by value, without them only shapes and execution order place the run (and the region's note says so).
# Everything below is written for a fused TARGET op; the golden-fused case runs the same code with the two
# dumps swapped (see :class:`_Sides`).

_MAX_RUN = 64  # decomposed ops one fused op may stand for
_SCAN = 128  # decomposed API calls after the left anchor searched for the run's start (keeps large dumps linear)
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

    def bounds(self, first: int, last: int) -> tuple[float, float]:
        """Golden indices of the partners of the target rows just before ``first`` and just after ``last``
        (-1 and inf where there is none); the second is not above the first when the pairs cross."""
        i = bisect.bisect_left(self.t_idx, first)
        j = bisect.bisect_right(self.t_idx, last)
        lo = float(self.g_idx[i - 1]) if i > 0 else -1.0
        hi = float(self.g_idx[j]) if j < len(self.g_idx) else math.inf
        return lo, hi

    def window(self, op: _Op) -> tuple[float, float]:
        """Golden indices strictly between the partners of the target rows just before and after ``op``."""
        lo, hi = self.bounds(op.first, op.last)
        i = bisect.bisect_left(self.t_idx, op.first)
        if self.last_region[0] >= 0 and (i == 0 or self.t_idx[i - 1] < self.last_region[0]):
            lo = float(self.last_region[1])
        return lo, (hi if hi > lo else math.inf)


def _backward_key(key: str) -> str | None:
    """``Functional.layer_norm.0.forward`` -> ``Functional.layer_norm.0.backward``."""
    return key[: -len("forward")] + "backward" if key.endswith(".forward") else None


@dataclass
class _Sides:
    """The two dumps as the region search sees them: ``fused`` holds the fused op, ``other`` the decomposed run.

    Pairs are made as Pair(other row, fused row) and turned into golden/target pairs by :meth:`pair`."""

    fused: _Layout
    other: _Layout
    fused_free: set[str]
    other_free: set[str]
    golden_fused: bool

    def pair(self, p: Pair) -> Pair:
        return Pair(p.target_name, p.golden_name, p.method) if self.golden_fused else p

    def oriented(self, pairs: Iterable[Pair]) -> list[Pair]:
        return [self.pair(p) for p in pairs]  # swapping twice is the identity


def _pair_regions(golden: _Layout, target: _Layout, result: Pairing, skip_golden: set[str],
                  skip_target: set[str]) -> tuple[set[str], set[str]]:
    """Pair free fused APIs with the decomposed runs they replace, fused target ops first, then fused golden
    ops; return the golden and target rows the regions account for (paired or not), which the later
    fallbacks must leave alone."""
    before = len(result.regions)
    spent_golden: set[str] = set()
    spent_target: set[str] = set()
    for golden_fused in (False, True):
        g_free = set(result.unmatched_golden) - skip_golden - spent_golden
        t_free = set(result.unmatched_target) - skip_target - spent_target
        sides = (_Sides(golden, target, g_free, t_free, True) if golden_fused
                 else _Sides(target, golden, t_free, g_free, False))
        if not (g_free and t_free):
            continue
        fused_rows, other_rows = _fused_regions(sides, target.dump, result)
        spent_golden |= fused_rows if golden_fused else other_rows
        spent_target |= other_rows if golden_fused else fused_rows
    found = result.regions[before:]
    result.notes += [r.note for r in found[:_REGION_NOTES]]
    if len(found) > _REGION_NOTES:
        result.notes.append(f"... and {len(found) - _REGION_NOTES} more fused regions (see regions)")
    return spent_golden, spent_target


def _fused_regions(sides: _Sides, target: Dump, result: Pairing) -> tuple[set[str], set[str]]:
    """Regions with the fused op on ``sides.fused``: pairs go into ``result``; returns the rows of the fused
    side and of the other side that the regions account for."""
    o_ops, f_ops = sides.other.by_key, sides.fused.by_key
    candidates = [op for op in _free_api_ops(sides.fused, list(sides.fused_free), set())
                  if _group_of(op.rows[0]) == ("API", "forward") and op.of_role("input") and op.of_role("output")]
    if not candidates:
        return set(), set()
    o_fwd = [op for op in sides.other.ops if _group_of(op.rows[0]) == ("API", "forward")]
    free = {op.key for op in o_fwd if all(r.name in sides.other_free for r in op.rows)}
    if not free:
        return set(), set()
    firsts = [op.first for op in o_fwd]
    with_stats = {op.key for op in o_fwd if all(_has_stats(r) for r in op.rows if r.shape is not None)}
    anchors = _Anchors.of(sides.other.dump, sides.fused.dump, sides.oriented(result.pairs))
    crowd = Counter(bisect.bisect_left(anchors.t_idx, op.first) for op in candidates)
    made: list[Pair] = []
    spent_fused: set[str] = set()
    spent_other: set[str] = set()
    partner = {p.target_name: p.golden_name for p in sides.oriented(result.pairs)}  # fused-side row -> other's
    f_firsts = [op.first for op in sides.fused.ops]
    for fused in candidates:
        lo, hi = anchors.window(fused)
        begin = bisect.bisect_right(firsts, lo)
        inside = [op for op in o_fwd[begin:begin + _SCAN] if op.first < hi]
        # whether ``inside`` reaches the next paired op (or the end of the dump), not only the scan's length
        bounded = begin + _SCAN >= len(o_fwd) or o_fwd[begin + _SCAN].first >= hi
        found = _region_run(fused, inside, free, with_stats, bounded,
                            functools.partial(_linked_input, sides, fused, partner, f_firsts))
        if found is None or not _fits(found, crowd[bisect.bisect_left(anchors.t_idx, fused.first)]):
            continue
        run, use_stats, output_moved, through, feeders = found
        pairs = _region_forward_pairs(fused, run, use_stats, output_moved, through)
        # a feeder's gradient is the same values as the gradient of what it made, in the layout of what it took
        # (``w`` for ``w.t()``): the fused op's gradients pair with the run's own calls' first
        bwd = _region_backward_pairs(fused, run, f_ops, o_ops, sides.other_free, use_stats and not output_moved,
                                     feeders)
        made += pairs + bwd
        anchors.last_region = (fused.last, run[-1].last)
        free.difference_update(op.key for op in run)
        note = _region_note(fused, run, pairs, bwd, use_stats, sides.golden_fused, output_moved, through)
        keys = tuple(op.key for op in run)
        result.regions.append(Region(keys[0], (fused.key,), note, "golden", keys) if sides.golden_fused
                              else Region(fused.key, keys, note, "target", (fused.key,)))
        spent_fused.update(_rows_of(f_ops, [fused.key]))
        spent_other.update(_rows_of(o_ops, list(keys)))
    _apply(result, target, sides.oriented(made))
    return spent_fused, spent_other


class _Run(NamedTuple):
    """The decomposed ops a fused op stands for, and how they were found."""

    ops: list[_Op]
    use_stats: bool  # statistics decided it (else shapes and execution order only)
    output_moved: bool  # the fused op's output differs from the run's: placed by shape and order
    through: DumpEntry | None  # the run's first input, found as the partner of what produced the fused op's
    feeders: int = 0  # the run's first calls only make what it takes (``w.t()``; see :func:`_feeders`)


def _linked_input(sides: _Sides, fused: _Op, partner: dict[str, str], f_firsts: list[int]) -> DumpEntry | None:
    """The other side's partner of the call output the fused op's first input is, on the fused op's own side.

    A fault upstream changes that input's values, so no decomposed op takes the same data; but the op that
    consumes the partner of its producer is the decomposed run's start all the same (dataflow through the pairing,
    not through values). None when no nearby earlier call output is that input and has a partner."""
    f_in = fused.of_role("input")
    if not f_in or not _has_stats(f_in[0]):
        return None
    at = bisect.bisect_left(f_firsts, fused.first)
    for op in reversed(sides.fused.ops[max(0, at - _SCAN):at]):
        for r in op.of_role("output"):
            if r.name in partner and _same_tensor(r, f_in[0], True):
                return sides.other.dump.entry(partner[r.name])
    return None


def _fits(found: _Run, crowd: int) -> bool:
    """Whether a run found for a fused op can be what it replaces.

    A fused op stands for at least as many ops as there are free calls around it on its own side: where its
    side holds more, that side is the decomposed one and this op is one piece of it. And without statistics
    a run of one op is only a call of the same shape in the same place, which the different-API pairing
    says more plainly than a region would."""
    run, use_stats = found.ops, found.use_stats
    return len(run) >= crowd and (use_stats or len(run) > 1)


def _rows_of(ops: dict[str, _Op], forward_keys: list[str]) -> set[str]:
    """Row names of these forward ops and of their backward twins."""
    keys = forward_keys + [k for k in map(_backward_key, forward_keys) if k is not None]
    return {r.name for k in keys if k in ops for r in ops[k].rows}


def _region_run(fused: _Op, inside: list[_Op], free: set[str], with_stats: set[str],
                bounded: bool = False, linked: Callable[[], DumpEntry | None] | None = None) -> _Run | None:
    """The golden ops ``fused`` replaces among ``inside`` (golden API calls between the partners of its
    neighbours, in order), whether statistics decided it, and whether its output differs from the run's; None
    when no run fits.

    A fused op that computes something else (an attention with another scale) takes the run's inputs but gives
    another output: when the stretch of unpaired golden ops after its first input's consumer closes at a paired
    op, the run ends at the last op with the fused output's shape, and the output is paired by that place.
    ``bounded``: ``inside`` ends where the next paired op starts (so running out of it closes the stretch too).
    ``linked``: finds the golden partner of what produced the fused op's first input (see :func:`_linked_input`),
    asked only when no golden op takes that input's values (a fault upstream moved them): the op consuming that
    partner starts the run, and its output is placed by shape."""
    f_in, f_out = fused.of_role("input"), fused.of_role("output")
    use_stats = all(_has_stats(r) for r in f_in + f_out) and \
        all(op.key in with_stats for op in inside if op.key in free)
    start = next((i for i, op in enumerate(inside) if op.key in free
                  and any(_same_tensor(r, f_in[0], use_stats) for r in op.of_role("input"))), None)
    through = linked() if start is None and use_stats and linked is not None else None
    if through is not None:
        start = next((i for i, op in enumerate(inside) if op.key in free
                      and any(_same_tensor(r, through, True) for r in op.of_role("input"))), None)
    if start is None:
        return None
    run: list[_Op] = []
    closed = bounded and len(inside) - start <= _MAX_RUN
    for op in inside[start:start + _MAX_RUN]:
        if op.key not in free:
            closed = True  # a golden op that already has a partner ends the stretch the fused op can stand for
            break
        run.append(op)
        if use_stats and any(_same_tensor(g, t, True) for g in op.of_role("output") for t in f_out):
            fed = _feeders(inside[:start], run, free)
            return _Run(fed + run, True, False, through, len(fed))
    if use_stats and not closed:
        return None
    ends = [i for i, op in enumerate(run) if any(g.shape == f_out[0].shape for g in op.of_role("output"))]
    if not ends:
        return None
    run = run[: ends[-1] + 1]
    fed = _feeders(inside[:start], run, free) if use_stats else []
    if use_stats and len(run) == 1 and not fed and not _reordered(f_in, run[0].of_role("input")):
        # one call for one call with another output, the same tensors in the same places and nothing made for it: a
        # swapped API, which its own pairing says plainly (or, with data that already differs, leaves unpaired)
        return None
    if use_stats and any(_same_tensor(o, i, True) for o in f_out for i in f_in):
        return None  # a call that returns its input (contiguous, a cast to its own dtype) computes nothing it could fuse
    return _Run(fed + run, use_stats, use_stats, through, len(fed))


def _feeders(before: list[_Op], run: list[_Op], free: set[str]) -> list[_Op]:
    """The free calls just before a run whose outputs the run takes (by value): ``w.t()`` ahead of
    ``torch.addmm(b, x, w.t())``, a key transposed ahead of a written-out attention. They belong to the run, so
    their inputs (the weight itself) pair with the fused op's, not the copy they make."""
    taken = [r for op in run for r in op.of_role("input")]
    found: list[_Op] = []
    for op in reversed(before):
        if op.key not in free or not any(_same_tensor(o, r, True) for o in op.of_role("output") for r in taken):
            break
        found.insert(0, op)
        taken += op.of_role("input")
    return found


def _reordered(f_in: list[DumpEntry], o_in: list[DumpEntry]) -> bool:
    """Whether another call takes the fused op's tensors in other places (``F.linear(x, w, b)`` written out as
    ``torch.addmm(b, x, w.t())``): the pairing of a different API in the same place goes by position, so only a
    region pairs such a call, however its output compares."""
    return any(_same_tensor(f, o, True) and i != j for i, f in enumerate(f_in) for j, o in enumerate(o_in))


def _external_inputs(run: list[_Op]) -> list[DumpEntry]:
    """Inputs of the run not produced inside it (by value), in execution order."""
    produced: list[DumpEntry] = []
    external = []
    for op in run:
        external += [r for r in op.of_role("input") if not any(_same_tensor(r, p, True) for p in produced)]
        produced += op.of_role("output")
    return external


def _region_forward_pairs(fused: _Op, run: list[_Op], use_stats: bool, output_moved: bool = False,
                          through: DumpEntry | None = None) -> list[Pair]:
    """Fused inputs with the run's external inputs, fused outputs with the run's outputs (last op first).

    Without statistics only the first input and the output are placed (by shape): the other inputs
    could be any tensor of the same shape, and a wrong pair would read as a divergence. With statistics and an
    output that differs (``output_moved``), the inputs are matched by value and the output by shape; a first
    input found ``through`` the pairing pairs with the run's input holding that row's values."""
    f_in, f_out = fused.of_role("input"), fused.of_role("output")
    if output_moved:
        last = next(r for r in run[-1].of_role("output") if r.shape == f_out[0].shape)
        external = _external_inputs(run)
        pairs = _match_rows(f_in, external)
        if through is not None and f_in[0].name not in {p.target_name for p in pairs}:
            taken = {p.golden_name for p in pairs}
            takes = next((r for op in run for r in op.of_role("input") if r.name not in taken
                          and r.shape == f_in[0].shape and _same_tensor(r, through, True)), None)
            pairs += [Pair(takes.name, f_in[0].name, "region")] if takes is not None else []
        return pairs + _last_input_left(f_in, external, pairs) + [Pair(last.name, f_out[0].name, "region")]
    if not use_stats:
        first = next(r for r in run[0].of_role("input") if r.shape == f_in[0].shape)
        last = next(r for r in run[-1].of_role("output") if r.shape == f_out[0].shape)
        return [Pair(first.name, f_in[0].name, "region"), Pair(last.name, f_out[0].name, "region")]
    pairs = _match_rows(f_in, _external_inputs(run))
    outputs = [r for op in reversed(run) for r in op.of_role("output")]
    return pairs + _match_rows(f_out, outputs)


def _last_input_left(f_in: list[DumpEntry], external: list[DumpEntry], pairs: list[Pair]) -> list[Pair]:
    """The one fused input and the one run input still without a partner, when they have the same shape.

    Every other input took the same data on both sides, so this is where a region whose output differs takes
    something else (a weight scaled on one side): leaving it out would blame the call for what its argument
    brought."""
    f_left = [r for r in f_in if r.name not in {p.target_name for p in pairs}]
    o_left = [r for r in external if r.name not in {p.golden_name for p in pairs}]
    if len(f_left) == 1 and len(o_left) == 1 and f_left[0].shape == o_left[0].shape:
        return [Pair(o_left[0].name, f_left[0].name, "region")]
    return []


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
                           g_free: set[str], use_stats: bool, feeders: int = 0) -> list[Pair]:
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
    g_out = [r for op in run[feeders:] + run[:feeders] for k in [_backward_key(op.key)] if k in g_ops
             for r in g_ops[k].of_role("output") if r.name in g_free]
    return pairs + _match_rows(t_bwd.of_role("output"), g_out)


def _region_note(fused: _Op, run: list[_Op], fwd: list[Pair], bwd: list[Pair], use_stats: bool,
                 golden_fused: bool, output_moved: bool = False, through: DumpEntry | None = None) -> str:
    """One line: what the fused op stands for, how sure, and what of it got a partner."""
    span = run[0].key if len(run) == 1 else f"{run[0].key} .. {run[-1].key}"
    how = (f"it takes {through.name}, the partner of the tensor the fused op takes, which already differs; the "
           "output is placed by shape and execution order" if through is not None else
           "input statistics agree; the output differs and is placed by shape and execution order" if output_moved
           else "input and output statistics agree" if use_stats else
           "no statistics in the dump: placed by shapes and execution order only")
    n_in, n_out = len(fused.of_role("input")), len(fused.of_role("output"))
    paired_in = sum(1 for p in fwd if ".input" in p.target_name[len(fused.key):])
    back = f", backward rows {len(bwd)}" if bwd else ""
    whose, other = ("the golden's ", "target") if golden_fused else ("", "golden")
    ops = "op" if len(run) == 1 else "ops"
    return (f"{whose}fused {fused.key} stands for {len(run)} {other} {ops} ({span}; {how}): paired inputs "
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


def _order_pairs(g_left: list[DumpEntry], t_left: list[DumpEntry]) -> tuple[list[Pair], list[str]]:
    """Order + shape pairs, group by group, and the keys of the target-only wrapper modules left unmatched."""
    pairs: list[Pair] = []
    wrappers: list[str] = []
    for group in sorted({_group_of(e) for e in t_left}):
        g_rows = [e for e in g_left if _group_of(e) == group]
        t_rows = [e for e in t_left if _group_of(e) == group]
        op_pairs, extra = _order_ops(_ops(g_rows), _ops(t_rows), wrappers=group[0] == "Module")
        done_g = {p.golden_name for p in op_pairs}
        done_t = {p.target_name for p in op_pairs} | {r.name for op in extra for r in op.rows}
        wrappers += [op.key for op in extra]
        pairs += op_pairs + _order_rows([e for e in g_rows if e.name not in done_g],
                                        [e for e in t_rows if e.name not in done_t])
    return pairs, wrappers


def _signature(op: _Op) -> tuple[tuple[str, str, tuple[int, ...]], ...] | None:
    """Places, roles and shapes of an op's rows; None when a shape is unknown (rows then pair singly)."""
    if any(r.shape is None for r in op.rows):
        return None
    return tuple((_suffix(r), r.role, tuple(r.shape or ())) for r in op.rows)


def _pick(cands: Sequence[int], close: Sequence[bool]) -> int:
    """The first candidate whose statistics agree, else the first one."""
    return next((c for c, ok in zip(cands, close, strict=True) if ok), cands[0])


def _order_ops(g_ops: list[_Op], t_ops: list[_Op], *, wrappers: bool = False) -> tuple[list[Pair], list[_Op]]:
    """Whole ops with the same signature, in order; rows pair by their place in the op.

    With ``wrappers`` (module groups), a target module whose inputs and outputs are those of the module
    recorded just before it wraps that module (a module is recorded when it finishes, so after everything
    inside it); when the golden has no such level after the partner, it is a wrapper only the target has
    (an extra ``nn.Sequential`` or adapter class). Pairing it by order would give it the next block's
    partner and shift every pair after it, so it is returned unmatched instead."""
    pairs: list[Pair] = []
    extra: list[_Op] = []
    cursor = 0
    prev: tuple[_Op, _Op | None] | None = None  # (last target op handled, its golden partner)
    for t in t_ops:
        sig = _signature(t)
        if sig is None:
            prev = None
            continue
        if wrappers and prev is not None and _wraps(t, prev[0]) and not (
                prev[1] is not None and cursor < len(g_ops) and _wraps(g_ops[cursor], prev[1])):
            extra.append(t)
            prev = (t, None)
            continue
        cands = [j for j in range(cursor, min(len(g_ops), cursor + _ORDER_WINDOW)) if _signature(g_ops[j]) == sig]
        if not cands:
            prev = None
            continue
        j = _pick(cands, [all(_stats_close(a, b) for a, b in zip(g_ops[c].rows, t.rows, strict=True))
                          for c in cands])
        pairs += [Pair(g.name, e.name, "order_shape") for g, e in zip(g_ops[j].rows, t.rows, strict=True)]
        cursor = j + 1
        prev = (t, g_ops[j])
    return pairs, extra


def _wraps(outer: _Op, inner: _Op) -> bool:
    """Whether ``outer`` takes and returns exactly the tensors ``inner`` does: a module that only passes its
    input to ``inner`` and returns its result. Both are rows of one run holding the very same tensors, so
    their statistics (or md5) are identical, not merely close."""
    a = [r for r in outer.rows if r.role in ("input", "output")]
    b = [r for r in inner.rows if r.role in ("input", "output")]
    if not a or len(a) != len(b):
        return False
    return all(x.shape is not None and x.shape == y.shape and _suffix(x) == _suffix(y) and x.role == y.role
               and ((_has_stats(x) and x.stats == y.stats) or (x.md5 is not None and x.md5 == y.md5))
               for x, y in zip(a, b, strict=True))


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
