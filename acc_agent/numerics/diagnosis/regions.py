"""A first divergence at the edge of a fused region: the fault is the region's, and its constants are compared.

Pairing joins a fused call on one side with the run of calls it stands for on the other (an attention kernel
for matmul, scale, softmax, matmul; a layer norm for mean, sub, pow, mean, add, sqrt, div, mul, add). Inside
the run nothing has a partner, so the first divergence lands on the call that closes the region, and "its
inputs agree" speaks of that call alone. What tells the two sides apart is usually a constant (an eps, a
scale, an approximation): the fused call takes it as an argument, the written-out run as a scalar of one of
its calls, and msprobe records both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from acc_agent.numerics.diagnosis.explain import value_text
from acc_agent.numerics.diagnosis.graph import fingerprint

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump
    from acc_agent.models.diagnosis import Diagnosis, FirstDivergence

#: Constants listed per side.
SHOWN = 6


def region_context(fd: FirstDivergence | None, diag: Diagnosis, regions: Sequence[Mapping[str, object]],
                   golden: Dump, target: Dump) -> None:
    """Say so when the first divergence closes a fused region, and list both sides' constants."""
    if fd is None or fd.module is None:
        return
    for region in regions:
        run, golden_keys = _keys(region.get("target_run")), _keys(region.get("golden"))
        if run and golden_keys and region.get("fused_side") != "target" and _sends_back(fd, run, target):
            span = f"{run[0]} .. {run[-1]}" if len(run) > 1 else run[0]
            text = (f" The gradient {fd.name} comes back from the backward of the target's written-out run {span} "
                    f"({len(run)} calls), which stands for the golden's fused {golden_keys[0]}: msprobe records that "
                    "run's backward only in part, so what it sends back is compared here first, and the run (its "
                    "constants above all) is where to look.")
            t_consts = _constants(target, run)
            if t_consts:
                text += (f" Constants of the golden's side: {_constants(golden, golden_keys) or 'none recorded'}; of the "
                         f"target's: {t_consts}.")
            diag.explanation += text
            return
        if not run or not golden_keys or fd.module not in (run[-1], region.get("target")):
            continue
        target_fused = region.get("fused_side") == "target"
        spanned = golden_keys if target_fused else run  # the decomposed side
        span = f"{spanned[0]} .. {spanned[-1]}" if len(spanned) > 1 else spanned[0]
        if fd.enters_through == "argument":
            # the argument is the finding; the region only says which golden call the target's stands for
            golden_span = f"{golden_keys[0]} .. {golden_keys[-1]}" if len(golden_keys) > 1 else golden_keys[0]
            target_span = f"{run[0]} .. {run[-1]}" if len(run) > 1 else run[0]
            text = (f" The target's {target_span} stands for the golden's {golden_span} (another API for the same "
                    f"computation); the difference comes in with the argument {fd.argument} of {fd.module}, not from "
                    "a computation.")
        elif target_fused:
            text = (f" {fd.module} is the target's fused call standing for the golden's {len(golden_keys)} calls "
                    f"{span}: it takes their inputs and gives another output, so the fault is the fused call's.")
        else:
            calls = "call" if len(run) == 1 else "calls"
            text = (f" {fd.module} closes the target's written-out run {span} ({len(run)} {calls}), which stands for "
                    f"the golden's fused {golden_keys[0]}: the run as a whole takes its inputs and gives another "
                    "output, so the fault is anywhere in that run.")
        g_consts, t_consts = _constants(golden, golden_keys), _constants(target, run)
        if g_consts or t_consts:
            text += (f" Constants of the golden's side: {g_consts or 'none recorded'}; of the target's: "
                     f"{t_consts or 'none recorded'}.")
            diag.next_actions.insert(0, "Compare the constants of the fused call with those of the calls it stands "
                                        "for (an eps, a scale, an approximation: listed in the explanation); the one "
                                        "that differs is the fault.")
        diag.explanation += text
        return


def _sends_back(fd: FirstDivergence, run: Sequence[str], target: Dump) -> bool:
    """Whether ``fd`` is a gradient no dumped call produced, entering the backward of a call whose forward output the
    written-out ``run`` takes (a key projection read by the run's einsum): the run's backward sent it."""
    module = fd.module or ""
    if fd.direction != "backward" or fd.enters_through != "argument" or not module.endswith(".backward"):
        return False
    forward = module[: -len(".backward")] + ".forward"
    made = {fingerprint(e) for e in target.entries if e.module_key == forward and e.role == "output"} - {None}
    calls = set(run)
    return bool(made) and any(e.role == "input" and e.module_key in calls and fingerprint(e) in made
                              for e in target.entries)


def _keys(value: object) -> list[str]:
    """A region's list of call keys (an empty list for anything else)."""
    return [str(k) for k in value] if isinstance(value, list | tuple) else []


def _constants(dump: Dump, keys: Sequence[str]) -> str:
    """The scalar arguments recorded for these calls, e.g. ``1e-05 (Functional.layer_norm.0.forward input.4)``."""
    found: list[str] = []
    for key in keys:
        for s in dump.scalars.get(key, []):
            arg = s.name[len(key) + 1:]
            if arg.startswith("output") or isinstance(s.value, bool) or not isinstance(s.value, int | float | str):
                continue
            found.append(f"{value_text(s.value)} ({key} {arg})")
    return ", ".join(found[:SHOWN])  # the first few: a long written-out run's constants are in the CSV's rows
