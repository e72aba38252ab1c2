"""``detect_nondeterminism``: two dumps of the same run on the same platform and input, bit by bit.

Random errors (the seed's "random error detection": the same inputs giving different outputs)
make every other comparison unreliable, so they are checked first: run twice, dump both, and list
the tensors that are not bit-identical in execution order. The *origin* of non-determinism is a
module whose inputs are bit-identical in both runs but whose outputs are not (an atomic-add
reduction, a non-deterministic kernel, dropout left on); everything after it differs only because
its inputs already did. Only tensors are compared, one pair at a time (no whole-dump loading).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from acc_agent import frontend
from acc_agent.models.common import Evidence, Model, ToolInput, ToolOutput
from acc_agent.text_safety import terminal_lines
from acc_agent.tools.spec import tool


class DetectNondeterminismInput(ToolInput):
    run_a: str = Field(description="First dump of the run: msprobe dump.json, its rank folder, or a folder of .npy "
                                   "files.")
    run_b: str = Field(description="Second dump of the same run, same platform and same input.")
    mapping: str | None = Field(default=None, description="YAML name mapping run_b -> run_a. As for compare_dumps, "
                                                          "when the two runs name tensors differently.")
    top: int = Field(default=50, ge=1, description="Entries listed inline, first ones first.")


class NondeterministicEntry(Model):
    name: str
    index: int = Field(description="Execution order in run_b.")
    module: str = Field(description="Module/API call (dump.json key) the tensor belongs to.")
    role: str
    differing_ratio: float | None = Field(default=None, description="Share of elements whose bits differ.")
    max_abs_err: float | None = None
    rel_l2_err: float | None = None
    origin: bool = Field(default=False, description="Inputs bit-identical, outputs not: the module that "
                                                    "introduces the randomness.")
    note: str = ""


class DetectNondeterminismOutput(ToolOutput):
    failing_verdicts: ClassVar[frozenset[str]] = frozenset({"nondeterministic", "error"})

    verdict: Literal["deterministic", "nondeterministic", "error"]
    run_a: str
    run_b: str
    compared: int = 0
    identical: int = 0
    first_nondeterministic: str | None = Field(default=None, description="Row name of the first tensor that differs.")
    origins: list[str] = Field(default_factory=list, description="Modules whose inputs match bit for bit but whose "
                                                                 "outputs do not, in execution order.")
    entries: list[NondeterministicEntry] = Field(default_factory=list)
    entries_total: int = 0
    unmatched_a: list[str] = Field(default_factory=list)
    unmatched_b: list[str] = Field(default_factory=list)
    next_actions: list[str] = Field(default_factory=list)


def _diff(a: Any, b: Any) -> tuple[bool, float | None, float | None, float | None, str]:
    """(identical, differing share, max abs err, relative L2 err, note) of two arrays, bitwise."""
    import numpy as np

    if a.shape != b.shape or a.dtype != b.dtype:
        return False, None, None, None, f"shape/dtype differ: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
    if a.size == 0:
        return True, 0.0, 0.0, 0.0, ""
    ab = np.ascontiguousarray(a).view(np.uint8).reshape(a.size, -1)
    bb = np.ascontiguousarray(b).view(np.uint8).reshape(b.size, -1)
    differs = (ab != bb).any(axis=1)
    count = int(differs.sum())
    if count == 0:
        return True, 0.0, 0.0, 0.0, ""
    if a.dtype.kind not in "fiub":
        return False, count / a.size, None, None, ""
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    finite = np.isfinite(fa) & np.isfinite(fb)
    delta = np.abs(fa - fb)[finite]
    norm = float(np.linalg.norm(fa[finite]))
    max_abs = float(delta.max()) if delta.size else None
    rel = float(np.linalg.norm(delta)) / norm if norm > 0 else None
    note = "" if finite.all() else "NaN/Inf placement differs"
    return False, count / a.size, max_abs, rel, note


def _split(name: str) -> tuple[str, str]:
    from acc_agent.numerics.diagnosis import split_name as _split_name

    return _split_name(name)


def _innermost(modules: list[str]) -> list[str]:
    """Drop a container module when a module inside it is an origin too (the inner one is the cause)."""
    from acc_agent.numerics.diagnosis import ROOT_MODULE_PATHS
    from acc_agent.numerics.diagnosis import module_path as _module_path

    paths = {m: _module_path(m) for m in modules}
    keep = []
    for m in modules:
        p = paths[m]
        inner = [o for o in modules if o != m and p is not None
                 and (p in ROOT_MODULE_PATHS or (paths[o] or "").startswith(p + "."))]
        if not inner:
            keep.append(m)
    return keep


def render_text(out: DetectNondeterminismOutput) -> str:
    lines = [f"[{out.verdict}] {out.summary}"]
    for e in out.entries:
        flag = "ORIGIN " if e.origin else "       "
        share = "-" if e.differing_ratio is None else f"{e.differing_ratio:.2%}"
        mae = "-" if e.max_abs_err is None else f"{e.max_abs_err:.3e}"
        lines.append(f"{flag}{e.index:5d} {e.name}  differing {share}  max_abs {mae} {e.note}")
    if out.entries_total > len(out.entries):
        lines.append(f"... {out.entries_total - len(out.entries)} more")
    return terminal_lines(lines)


@tool(
    description="Call when two runs of the same input on the same platform differ, before cross-platform checks: compares "
    "two dumps bit for bit. Returns verdict deterministic | nondeterministic, where randomness starts.",
    title="Detect non-determinism",
    read_only=True,
    positional=("run_a", "run_b"),
    text_renderer=render_text,
)
def detect_nondeterminism(params: DetectNondeterminismInput) -> DetectNondeterminismOutput:
    from acc_agent.errors import AccAgentError
    from acc_agent.io.dumps import Dump, open_dump
    from acc_agent.io.pairing import load_mapping, pair_entries

    run_a, run_b = open_dump(params.run_a), open_dump(params.run_b)
    for side, d, path in (("run_a", run_a, params.run_a), ("run_b", run_b, params.run_b)):
        if not isinstance(d, Dump):
            raise AccAgentError("multi_rank_dump", f"{side} ({path}) holds several ranks",
                                hint="Pass one rank directory per run (e.g. step0/rank0).", path=path)
    assert isinstance(run_a, Dump) and isinstance(run_b, Dump)
    mapping = load_mapping(params.mapping) if params.mapping else None
    pairing = pair_entries(run_a, run_b, mapping)
    evidence = [Evidence(kind="file", ref=str(run_a.source), detail=f"run A ({len(run_a.entries)} tensors)"),
                Evidence(kind="file", ref=str(run_b.source), detail=f"run B ({len(run_b.entries)} tensors)"),
                Evidence(kind="threshold", ref="bitwise equality", detail="a tensor is deterministic only if every "
                                                                           "bit matches")]
    found: list[NondeterministicEntry] = []
    differs_by_module: dict[str, dict[str, bool]] = {}
    compared = identical = 0
    errors: list[str] = []
    for pair in pairing.pairs:
        try:
            a = run_a.load(pair.golden_name)
            b = run_b.load(pair.target_name)
        except AccAgentError as err:
            errors.append(f"{pair.target_name}: {err.message}")
            continue
        compared += 1
        same, share, mae, rel, note = _diff(a, b)
        module, role = _split(pair.target_name)
        state = differs_by_module.setdefault(module, {"input": False, "output": False, "seen_input": False})
        if role == "input":
            state["seen_input"] = True
        if same:
            identical += 1
            continue
        if role in ("input", "output"):
            state[role] = True
        found.append(NondeterministicEntry(name=pair.target_name, index=run_b.entry(pair.target_name).index,
                                           module=module, role=role, differing_ratio=share, max_abs_err=mae,
                                           rel_l2_err=rel, note=note))
    origins: list[str] = []
    for e in found:
        st = differs_by_module[e.module]
        if e.role == "output" and st["seen_input"] and not st["input"]:
            e.origin = True
            if e.module not in origins:
                origins.append(e.module)
    origins = _innermost(origins)
    for e in found:
        e.origin = e.origin and e.module in origins
    if compared == 0:
        return DetectNondeterminismOutput(
            verdict="error", summary="no tensor pair could be compared: " + (errors[0] if errors else
                                                                              "no names in common"),
            evidence=evidence, run_a=params.run_a, run_b=params.run_b, unmatched_a=pairing.unmatched_golden,
            unmatched_b=pairing.unmatched_target,
            next_actions=["Dump both runs with the same tool and settings (task 'tensor'), or pass "
                          f"{frontend.option('mapping')}."])
    first = found[0].name if found else None
    if found:
        where = f"; randomness starts in {origins[0]}" if origins else ""
        summary = (f"{len(found)} of {compared} tensors differ between two runs of the same input; first: "
                   f"{first}{where}")
        actions = [
            "Make the run deterministic before comparing platforms: fix seeds, put the model in eval() (dropout "
            "off), and enable deterministic algorithms (torch.use_deterministic_algorithms(True); on Ascend also "
            "the deterministic-computation switch of torch_npu / HCCL).",
            f"Look at the origin modules first ({', '.join(origins[:3]) or 'see entries'}): reductions with atomic "
            "adds, scatter/index_add, and some fused attention kernels are the usual sources.",
            "Re-dump twice after the change: this tool should then report every tensor identical.",
        ]
    else:
        summary = f"all {compared} compared tensors are bit-identical between the two runs"
        actions = ["The run is deterministic on this input: differences against another platform are real."]
    if errors:
        summary += f"; {len(errors)} tensors could not be read"
    return DetectNondeterminismOutput(
        verdict="nondeterministic" if found else "deterministic", summary=summary, evidence=evidence,
        run_a=params.run_a, run_b=params.run_b, compared=compared, identical=identical,
        first_nondeterministic=first, origins=origins, entries=found[: params.top], entries_total=len(found),
        unmatched_a=pairing.unmatched_golden, unmatched_b=pairing.unmatched_target, next_actions=actions,
    )
