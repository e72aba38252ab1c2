"""Which golden tensor is compared with which target tensor.

Pairing is separate from the metrics because it is where migrations differ most: a renamed
module, an extra cast, a fused operator. Strategies run in order and each only looks at what
the previous ones left unmatched; every pair records the ``method`` that matched it so a reviewer
can judge how much to trust the row. Exact names and a user mapping come first; the fallbacks (normalised names, then
execution order + shape) only see what those left unmatched.

Mapping file (YAML or JSON): ``{target_name: golden_name}`` — the same direction as msprobe's
``data_mapping`` (NPU name -> bench name). A key ending in ``.`` is a prefix rule
(``Module.layer1.: Module.layers.0.``) applied to every name starting with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from acc_agent.errors import AccAgentError

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump


@dataclass(frozen=True)
class Pair:
    golden_name: str
    target_name: str
    method: str


@dataclass
class Pairing:
    """Pairs in target execution order, plus what found no partner on either side."""

    pairs: list[Pair] = field(default_factory=list)
    unmatched_golden: list[str] = field(default_factory=list)
    unmatched_target: list[str] = field(default_factory=list)


def load_mapping(path: str | Path) -> dict[str, str]:
    """Read a ``{target_name: golden_name}`` mapping file (YAML or JSON)."""
    import yaml

    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AccAgentError("missing_file", f"mapping file {p} does not exist", path=str(p)) from None
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
    normalised names; with ``by_order`` also execution order + shape (see :func:`_fallback_pairs`).

    ``by_order`` is opt-in: msprobe leaves such entries unmatched, and pairing by position can join
    tensors that only share a shape; turn it on when the target renamed or fused layers."""
    result = _exact_pairs(golden, target, mapping)
    if result.unmatched_target and result.unmatched_golden:
        _fallback_pairs(golden, target, result, by_order=by_order)
    return result


# --------------------------------------------------------------------------- fallbacks
# When the target framework renames or wraps modules (DDP's ``module.``, torch.compile's ``_orig_mod.``,
# an NPU class replacing a torch one, ``npu_`` fused APIs), exact names leave rows unmatched. Two
# fallbacks run on what is left, each recording its method so a reviewer can weigh the row:
# ``normalised`` (the names agree once wrappers, class names and API namespaces are dropped, and the
# normalised name is unique on both sides) and, only when asked (``by_order``), ``order_shape``
# (walking both leftovers in execution order, the next golden entry of the same role and shape
# within a short window).

_WRAPPER_SEGMENTS = frozenset({"module", "_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module"})
_API_NAMESPACES = frozenset({"functional", "torch", "tensor", "npu", "aten", "distributed", "vf", "mint", "jit",
                             "primitive"})
_ORDER_WINDOW = 8


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


def _fallback_pairs(golden: Dump, target: Dump, result: Pairing, *, by_order: bool) -> None:
    g_left = {n: golden.entry(n) for n in result.unmatched_golden}
    t_left = [target.entry(n) for n in result.unmatched_target]
    g_norm: dict[str, list[str]] = {}
    for n in g_left:
        g_norm.setdefault(normalise_name(n), []).append(n)
    t_norm: dict[str, int] = {}
    for e in t_left:
        key = normalise_name(e.name)
        t_norm[key] = t_norm.get(key, 0) + 1
    new_pairs: dict[str, Pair] = {}
    for e in t_left:
        key = normalise_name(e.name)
        cands = g_norm.get(key, [])
        if len(cands) == 1 and t_norm[key] == 1 and cands[0] in g_left:
            new_pairs[e.name] = Pair(cands[0], e.name, "normalised")
            del g_left[cands[0]]
    # execution order + shape on what is still left
    g_order = sorted(g_left.values(), key=lambda x: x.index) if by_order else []
    cursor = 0
    for e in t_left if by_order else []:
        if e.name in new_pairs or e.shape is None:
            continue
        for j in range(cursor, min(len(g_order), cursor + _ORDER_WINDOW)):
            g = g_order[j]
            if g.role == e.role and g.shape == e.shape:
                new_pairs[e.name] = Pair(g.name, e.name, "order_shape")
                cursor = j + 1
                break
    if not new_pairs:
        return
    matched_golden = {p.golden_name for p in new_pairs.values()}
    # keep target execution order across all pairs
    by_target = {p.target_name: p for p in result.pairs}
    by_target.update(new_pairs)
    result.pairs = [by_target[e.name] for e in target.entries if e.name in by_target]
    result.unmatched_target = [n for n in result.unmatched_target if n not in new_pairs]
    result.unmatched_golden = [n for n in result.unmatched_golden if n not in matched_golden]


def _exact_pairs(golden: Dump, target: Dump, mapping: dict[str, str] | None) -> Pairing:
    mapping = mapping or {}
    prefixes = sorted(((k, v) for k, v in mapping.items() if k.endswith(".")), key=lambda kv: -len(kv[0]))
    golden_left = {e.name for e in golden.entries}
    result = Pairing()
    for e in target.entries:
        want = _mapped(e.name, mapping, prefixes)
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
