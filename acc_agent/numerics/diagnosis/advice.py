"""Next actions for an operator fault that fit the operator and what its numbers show.

One list of generic checks for every operator reads as boilerplate and gets ignored. Here the
first action is what the operator's own data showed (``probes``), then the checks that break that
kind of operator in a migration (a BatchNorm's train/eval mode, a softmax's mask and scale, a
linear layer's weight layout and accumulation dtype, ...), each as a check with the tool call that
performs it. Reporting the operator to the vendor is advised only once its inputs and parameters
are shown identical on both sides; until then, the advice is how to show that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acc_agent.frontend import invoke
from acc_agent.numerics.diagnosis.probes import Probe, family

if TYPE_CHECKING:
    from acc_agent.io.dumps import Dump
    from acc_agent.numerics.diagnosis.graph import Node, Tensor

#: Checks that break each operator family in a migration (what to look at, in plain words).
FAMILY_CHECKS: dict[str, list[str]] = {
    "batch_norm": [
        "Check that the layer runs in the same mode on both sides: model.eval() before inference (train mode "
        "normalises with the batch's own statistics and updates the running ones).",
        "Check that the running mean/variance were loaded from the checkpoint (not left at 0/1) and that eps and "
        "momentum are the same.",
    ],
    "layer_norm": [
        "Check the epsilon on both sides (1e-5 vs 1e-6 vs 1e-12 differ in configs and fused kernels).",
        "Check fused vs decomposed: a fused NPU normalisation may compute the variance in another dtype; compare "
        "with the decomposed form (mean, variance, rsqrt) kept in FP32.",
    ],
    "softmax": [
        "Check the mask reaching the softmax: the fill value (-inf, -10000, dtype minimum), the masked positions and "
        "the dim the softmax runs over.",
        "Check the scale applied before it (1/sqrt(head_dim)) and the dtype it runs in (FP32 softmax vs FP16).",
    ],
    "attention": [
        "Check the attention mask (causal offset, padding mask, fill value) and the scale (1/sqrt(head_dim)).",
        "Check the layout the fused attention kernel expects (BSH vs BNSD, head count) and the softmax dtype.",
    ],
    "linear": [
        "Check the weight's layout and conversion: a checkpoint converted for another framework may hold it "
        "transposed or split/merged differently (q/k/v fused, gate/up fused).",
        "Check the accumulation dtype: an FP16/BF16 matmul that accumulates in low precision (or HF32 on the NPU) "
        "loses more than the golden's FP32 accumulation; keep this layer in FP32 to see.",
    ],
    "conv": [
        "Check the data layout (NCHW vs NHWC) and the weight layout, padding, stride, dilation and groups.",
        "Check the convolution algorithm's accumulation dtype (FP16 accumulation on the NPU vs FP32).",
    ],
    "dropout": [
        "Check that dropout is off in evaluation (model.eval()) on both sides, or compare with the same seed "
        "and the same random-number generator: dropout masks never match across devices.",
    ],
    "embedding": [
        "Check the token ids reaching it (tokenizer, vocabulary, special tokens) and padding_idx.",
        "Check the embedding table: vocabulary size, resized or tied embeddings, and the checkpoint conversion.",
    ],
    "activation": [
        "Check the variant: exact (erf) vs tanh-approximated GELU, SiLU vs a fused SwiGLU, and the dtype it runs in.",
    ],
    "resize": [
        "Check the interpolation mode, align_corners and the output size/scale factor on both sides.",
    ],
    "reduction": [
        "Check the reduced dims, keepdim and the accumulation dtype (a low-precision sum over a long axis).",
    ],
    "cast": [
        "Check the dtype both sides cast to (float16 vs bfloat16 vs float32) and where the cast happens.",
    ],
}


def actions(node: Node, probe_result: Probe | None, golden: Dump | None, target: Dump | None,
            direction: str) -> list[str]:
    """Next actions for an operator fault at ``node`` (the first diverging call)."""
    op = node.key
    fam = family(op)
    out: list[str] = []
    if probe_result is not None:
        out.append(_from_probe(probe_result, op, fam))
    out += FAMILY_CHECKS.get(fam, [])
    out += _parameter_checks(node, golden, target)
    replay = _replay_check(node, golden, target, direction)
    if replay:
        out.append(replay)
    if direction == "backward":
        out.append(f"The forward pass agrees: check {op}'s backward — a custom autograd Function or a fused kernel's "
                   "gradient formula, gradient scaling (loss scale, clipping) and hooks on the gradients.")
    out.append(_check_inputs(node, golden, target))
    if fam in ("dropout", "other") or probe_result is None:
        out.append("If the operator is random or order-dependent (dropout, sampling, atomic reductions), first "
                   "compare two target runs of the same input: "
                   + invoke("detect_nondeterminism", run_a="<first target dump>", run_b="<second target dump>")
                   + "; a random operator is not a migration fault.")
    vendor = _vendor(node, probe_result)
    if vendor:
        out.append(vendor)
    return out


def _from_probe(p: Probe, op: str, fam: str) -> str:
    fix = {
        "gelu_tanh": "Use the same GELU on both sides (approximate='none' for the exact one, or 'tanh' on both).",
        "gelu_erf": "Use the same GELU on both sides (approximate='tanh' on both, or the exact one on both).",
        "gelu_sigmoid": "Use the same GELU on both sides: the target runs the quick (sigmoid) approximation, often a "
                        "fused NPU kernel or a model config's hidden_act ('quick_gelu'); switch it to the golden's.",
        "batch_statistics": "Call model.eval() on the target (or freeze this BatchNorm) so it normalises with its "
                            "running statistics.",
        "running_statistics": "Run the target in the same mode as the golden (train mode if the golden "
                              "normalises with batch statistics).",
        "epsilon": "Set the same eps on both sides (model config / the fused kernel's argument).",
        "softmax_axis": "Make the softmax run over the same dim on both sides (check the layout the tensor has there).",
        "dropout_active": "Turn dropout off in both runs for the comparison (model.eval(), or p=0).",
        "output_follows_inputs": "The operator is consistent with its inputs on the target: look at what feeds it "
                                 "(an input or argument this dump does not compare) before suspecting the kernel.",
        "output_not_from_inputs": "The kernel itself is the suspect: reproduce it alone from the recorded inputs "
                                  "(below) before reporting it.",
    }.get(p.shows, "")
    return f"Measured: {p.statement}. {fix}".strip()


def _check_inputs(node: Node, golden: Dump | None, target: Dump | None) -> str:
    """The concrete comparison of the operator's inputs, with the tool call and the files."""
    first = node.inputs[0] if node.inputs else None
    out = node.outputs[0] if node.outputs else None
    if first is not None and first.m.measure == "tensor" and golden is not None and target is not None:
        g_in, t_in = _path(golden, first.row.golden_name or first.name), _path(target, first.name)
        if g_in and t_in:
            call = invoke("compare_tensors", golden=g_in, target=t_in)
            if out is not None:
                g_out, t_out = _path(golden, out.row.golden_name or out.name), _path(target, out.name)
                if g_out and t_out:
                    call += " and " + invoke("compare_tensors", golden=g_out, target=t_out)
            return (f"Re-run {node.key} alone on both platforms from the golden's recorded inputs and compare the "
                    f"inputs and outputs with {call}: equal inputs with different outputs are the kernel's.")
    return (f"Re-dump {node.key} in tensor mode on both sides (msprobe task 'tensor' with this API in its 'list'), "
            f"then compare its inputs and outputs with {invoke('compare_tensors', golden='<golden file>', target='<target file>')}"
            ": statistics alone cannot show that the inputs are identical.")


def _vendor(node: Node, p: Probe | None) -> str | None:
    """The vendor report, only once inputs and parameters are shown identical (tensor data or md5)."""
    if p is not None and p.shows not in ("output_not_from_inputs",):
        return None  # the data points at a setting or at an input, not at the kernel
    ins = [t for t in node.inputs if t.judged]
    if not ins or any(t.beyond for t in ins) or any(t.m.measure not in ("tensor", "md5") for t in ins):
        return None
    if not _parameters_compared(node, ins):
        return (f"Before reporting {node.key} to the vendor, show its parameters are identical: dump them (msprobe "
                "level 'mix' records a module's parameters) and compare them too.")
    return (f"Its inputs and parameters are shown identical on both sides: report {node.key} to the vendor with its "
            "recorded inputs and outputs, arguments and dtypes, the framework, torch_npu and CANN versions, and "
            "these compare rows — the replay bundle ("
            + invoke("replay_op", golden="<golden dump>", target="<target dump>", op=node.key, bundle="<folder>")
            + ") holds all of it with a standalone repro.py.")


def _dump_dir(dump: Dump | None) -> str | None:
    if dump is None or dump.kind != "msprobe":
        return None
    return str(dump.source.parent)


def _replay_check(node: Node, golden: Dump | None, target: Dump | None, direction: str) -> str | None:
    """The one check that tells kernel from inputs: re-run the call from the target's recorded inputs."""
    from acc_agent.numerics.replay import MODULES

    g_dir, t_dir = _dump_dir(golden), _dump_dir(target)
    if g_dir is None or t_dir is None or direction != "forward" or not node.outputs:
        return None
    if node.outputs[0].m.measure != "tensor":
        return None
    space = node.key.split(".", 1)[0]
    if space not in ("Functional", "Torch", "Tensor", "Aten") and not (
            space == "Module" and node.key.split(".")[-3] in MODULES):
        return None
    return (f"Tell the kernel from its inputs: {invoke('replay_op', golden=g_dir, target=t_dir, op=node.key)} re-runs "
            "the call on the CPU from the target's recorded inputs (fault_enters: operator or inputs).")


def _parameter_checks(node: Node, golden: Dump | None, target: Dump | None) -> list[str]:
    """Compare the weights the call takes, file by file, where the dump holds them."""
    out: list[str] = []
    if golden is None or target is None:
        return out
    for t in node.inputs:
        if t.leaf != "parameter" or t.m.measure != "tensor":
            continue
        g, x = _path(golden, t.row.golden_name or t.name), _path(target, t.name)
        if g and x:
            out.append(f"Compare its {t.arg} (a weight or buffer) file by file: "
                       f"{invoke('compare_tensors', golden=g, target=x)}.")
        if len(out) >= 2:
            break
    return out


def _parameters_compared(node: Node, ins: list[Tensor]) -> bool:
    """Modules take their weights without passing them as arguments: only a dump that holds them shows them."""
    if node.is_module:
        return any(t.role == "parameters" for t in ins)
    return True


def _path(dump: Dump, name: str) -> str | None:
    try:
        path = dump.path_of(name)
    except Exception:  # noqa: BLE001 - a name without a file: no call to show
        return None
    return str(path) if path is not None else None
