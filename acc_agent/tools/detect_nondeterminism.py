"""``detect_nondeterminism``: two dumps of the same run on the same platform and input, bit by bit.

Random errors (the seed's "random error detection": the same inputs giving different outputs)
make every other comparison unreliable, so they are checked first: run twice, dump both, and list
the tensors that are not bit-identical in execution order. The *origin* of non-determinism is a
module whose inputs are bit-identical in both runs but whose outputs are not (an atomic-add
reduction, a non-deterministic kernel, dropout left on); everything after it differs only because
its inputs already did. Only tensors are compared, one pair at a time (no whole-dump loading).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acc_agent import frontend
from acc_agent.models.common import Evidence
from acc_agent.models.nondeterminism import (
    DetectNondeterminismInput,
    DetectNondeterminismOutput,
    NondeterministicEntry,
)
from acc_agent.text_columns import Column, Table, render
from acc_agent.tools.spec import tool

if TYPE_CHECKING:
    from acc_agent.io.arrays import Array


def _diff(a: Array, b: Array) -> tuple[bool, float | None, float | None, float | None, str]:
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


def _innermost(modules: list[str]) -> list[str]:
    """Drop a container module when a module inside it is an origin too (the inner one is the cause)."""
    from acc_agent.numerics.diagnosis import ROOT_MODULE_PATHS, module_path

    paths = {m: module_path(m) for m in modules}
    keep = []
    for m in modules:
        p = paths[m]
        inner = [o for o in modules if o != m and p is not None
                 and (p in ROOT_MODULE_PATHS or (paths[o] or "").startswith(p + "."))]
        if not inner:
            keep.append(m)
    return keep


def _measured(e: NondeterministicEntry) -> str:
    share = "-" if e.differing_ratio is None else f"{e.differing_ratio:.2%}"
    mae = "-" if e.max_abs_err is None else f"{e.max_abs_err:.3e}"
    return f"{e.name}  differing {share}  max_abs {mae} {e.note}"


#: One line per differing tensor: ORIGIN where the randomness enters, its position in run B, what differs.
_ENTRY_LINES = Table[NondeterministicEntry]([
    Column(lambda e: "ORIGIN" if e.origin else "", width=6),
    Column(lambda e: str(e.index), width=5, align=">"),
    Column(_measured),
], indent="")


def render_text(out: DetectNondeterminismOutput) -> str:
    more = out.entries_total - len(out.entries)
    return render(out, _ENTRY_LINES.lines(out.entries), [f"... {more} more"] if more > 0 else [])


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
    from acc_agent.numerics.diagnosis import split_name

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
        module, role = split_name(pair.target_name)
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
