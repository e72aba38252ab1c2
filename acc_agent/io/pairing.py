"""Which golden tensor is compared with which target tensor.

Pairing is separate from the metrics because it is where migrations differ most: a renamed
module, an extra cast, a fused operator. Strategies run in order and each only looks at what
the previous ones left unmatched; every pair records the ``method`` that matched it so a reviewer
can judge how much to trust the row. This first version has exact names and a user mapping;
more fallbacks (normalised names, execution order + shape) are added here behind the same
signature.

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


def pair_entries(golden: Dump, target: Dump, mapping: dict[str, str] | None = None) -> Pairing:
    """Pair the two dumps' entries: mapping first (explicit beats implicit), then exact names."""
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
