"""``bisect_precision``: the smallest set of modules to keep in FP32 so the model is accurate in BF16/FP16.

Runs the user's model on the CPU: FP32 as the golden, then with its weight-holding modules in the low
precision, and searches a minimal keep-set (see ``acc_agent.numerics.bisect``). The model comes from
the user's own code (``FILE.py:FUNC`` or ``package.module:FUNC`` returning ``(model, example_inputs)``):
that function is imported and called, nothing else is executed.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Literal

from acc_agent.errors import AccAgentError
from acc_agent.models.common import Evidence
from acc_agent.models.replay import BisectPrecisionInput, BisectPrecisionOutput, BisectStep
from acc_agent.text_columns import render
from acc_agent.tools.spec import tool

#: Default tolerance: this many unit roundoffs of the low precision, as relative L2 error of the output.
DEFAULT_ROUNDINGS = 5.0


def render_text(out: BisectPrecisionOutput) -> str:
    lines = [f"error with every eligible module in {out.low}: {out.error_all_low:.3g} (tolerance {out.tolerance:.3g})"]
    if out.keep_high_precision:
        lines.append("keep in FP32: " + ", ".join(out.keep_high_precision)
                     + (f" -> error {out.error_with_keep_set:.3g}" if out.error_with_keep_set is not None else ""))
    worst = sorted(out.sensitivity.items(), key=lambda kv: -kv[1])[:5]
    if worst:
        lines.append("most sensitive alone: " + ", ".join(f"{n} ({e:.3g})" for n, e in worst))
    return render(out, lines)


def _load(spec: str) -> tuple[object, object]:
    """The user's (model, example_inputs): whatever FUNC returned, checked by the caller."""
    target, sep, func = spec.rpartition(":")
    if not sep or not target or not func:
        raise AccAgentError("invalid_model_spec", f"{spec!r} is not FILE.py:FUNC or module:FUNC",
                            hint="Example: model.py:build (build() returns (model, example_inputs)).")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise AccAgentError("missing_file", f"{path} does not exist", path=str(path),
                                hint="Give the path of the Python file that builds the model (FILE.py:FUNC).")
        module_name = f"_acc_agent_bisect_{abs(hash(str(path.resolve())))}"
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise AccAgentError("invalid_model_spec", f"cannot import {path}", path=str(path), hint="Pass FILE.py:FUNC or module:FUNC, where FUNC() returns (model, example_inputs).")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module
        try:
            loader_spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - the user's code failed: say so with its error
            raise AccAgentError("model_import_failed", f"importing {path} failed: {type(exc).__name__}: {exc}",
                                path=str(path), hint="Fix the error in that file (run it with python first).") from None
    else:
        try:
            module = importlib.import_module(target)
        except Exception as exc:  # noqa: BLE001
            raise AccAgentError("model_import_failed", f"importing {target} failed: {type(exc).__name__}: {exc}",
                                hint="Pass FILE.py:FUNC for a script, or install the package.") from None
    fn = getattr(module, func, None)
    if not callable(fn):
        raise AccAgentError("invalid_model_spec", f"{target} has no function {func}", hint="Pass FILE.py:FUNC or module:FUNC, where FUNC() returns (model, example_inputs).")
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001
        raise AccAgentError("model_build_failed", f"{func}() failed: {type(exc).__name__}: {exc}",
                            hint=f"Make {func}() run without arguments and return (model, example_inputs).") from None
    if not isinstance(result, tuple) or len(result) != 2:
        raise AccAgentError("invalid_model_spec", f"{func}() must return (model, example_inputs)",
                            hint="Return a tuple: the torch.nn.Module and a tuple of its example inputs.")
    return result[0], result[1]


@tool(
    description="Call when a model loses accuracy in bf16/fp16: runs it (FILE.py:FUNC giving model and inputs) on the CPU "
    "in FP32 and in low precision. Returns the minimal set of layers to keep in FP32.",
    title="Bisect mixed precision",
    read_only=False,
    destructive=True,
    idempotent=False,
    open_world=True,
    positional=("model",),
    text_renderer=render_text,
)
def bisect_precision(params: BisectPrecisionInput) -> BisectPrecisionOutput:
    import torch

    from acc_agent.numerics import budgets
    from acc_agent.numerics.bisect import bisect

    model, inputs = _load(params.model)
    if not isinstance(model, torch.nn.Module):
        raise AccAgentError("invalid_model_spec", "the function's first result is not a torch.nn.Module",
                            hint="Return (model, example_inputs) with model a torch.nn.Module.")
    model = model.float()
    low = torch.bfloat16 if params.low == "bf16" else torch.float16
    tol = params.tolerance or DEFAULT_ROUNDINGS * budgets.unit_roundoff("bfloat16" if params.low == "bf16" else "float16")

    from acc_agent.numerics.bisect import eligible_modules
    from acc_agent.progress import report

    n = len(eligible_modules(model))
    evaluations = [0]

    def progress(message: str) -> None:
        # stderr for a person at a shell; progress notifications (and cancellation) for an MCP client
        print(f"bisect-precision: {message}", file=sys.stderr, flush=True)
        evaluations[0] += 1
        report(evaluations[0], max(evaluations[0], 1 + 3 * n), message)

    found = bisect(model, inputs, low, tol, progress)
    if not found.eligible:
        verdict: Literal["all_low_ok", "keep_set_found", "not_reached", "no_eligible_layers"] = "no_eligible_layers"
        summary = "the model has no module with weights to run in low precision"
    elif not found.keep:
        verdict, summary = "all_low_ok", (f"every eligible module can run in {params.low}: output error "
                                          f"{found.error_all_low:.3g} <= {tol:.3g}")
    elif found.error_keep is not None and found.error_keep <= tol:
        verdict = "keep_set_found"
        summary = (f"keep {len(found.keep)} of {len(found.eligible)} modules in FP32 ({', '.join(found.keep[:6])}): "
                   f"output error {found.error_keep:.3g} <= {tol:.3g} (all in {params.low}: {found.error_all_low:.3g})")
    else:
        verdict, summary = "not_reached", (f"even with {len(found.keep)} modules in FP32 the output error is "
                                           f"{found.error_keep:.3g} > {tol:.3g}")
    return BisectPrecisionOutput(
        verdict=verdict, summary=summary, low=params.low, tolerance=tol, eligible=found.eligible,
        keep_high_precision=found.keep, error_all_low=found.error_all_low, error_with_keep_set=found.error_keep,
        sensitivity=found.sensitivity,
        steps=[BisectStep(step=s.step, keep_high_precision=s.keep, output_rel_err=s.error) for s in found.steps],
        evidence=[Evidence(kind="command", ref=params.model, detail="model and example inputs"),
                  Evidence(kind="threshold", ref=f"relative L2 error <= {tol:.3g}",
                           detail="of the model output against its FP32 run"
                                  + ("" if params.tolerance else f" (5 unit roundoffs of {params.low})"))],
    )
