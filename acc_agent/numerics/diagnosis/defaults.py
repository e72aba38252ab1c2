"""What an API computes with when a keyword argument is left out: its default.

msprobe records only the arguments a call passes, so ``F.gelu(x)`` on one side and ``F.gelu(x, approximate="tanh")``
on the other differ by an argument one side leaves out. Left out may mean "the default written out elsewhere"
(``approximate="none"``), which is no difference; against the API's documented default, a value one side sets is a
setting like any other. Only defaults that are values are listed: a default of None often stands for a computed value
(``scaled_dot_product_attention``'s ``scale`` is 1/sqrt(head size)), which the recorded value may equal.
"""

from __future__ import annotations

#: Keyword defaults of the torch.nn.functional (and torch) APIs msprobe dumps, by API name.
DEFAULTS: dict[str, dict[str, object]] = {
    "gelu": {"approximate": "none"},
    "dropout": {"p": 0.5, "training": True, "inplace": False},
    "dropout1d": {"p": 0.5, "training": True}, "dropout2d": {"p": 0.5, "training": True},
    "dropout3d": {"p": 0.5, "training": True},
    "cross_entropy": {"label_smoothing": 0.0, "reduction": "mean", "ignore_index": -100},
    "nll_loss": {"reduction": "mean", "ignore_index": -100},
    "mse_loss": {"reduction": "mean"}, "l1_loss": {"reduction": "mean"},
    "smooth_l1_loss": {"reduction": "mean", "beta": 1.0}, "huber_loss": {"reduction": "mean", "delta": 1.0},
    "kl_div": {"reduction": "mean", "log_target": False},
    "binary_cross_entropy": {"reduction": "mean"}, "binary_cross_entropy_with_logits": {"reduction": "mean"},
    "layer_norm": {"eps": 1e-5}, "group_norm": {"eps": 1e-5}, "instance_norm": {"eps": 1e-5, "momentum": 0.1},
    "batch_norm": {"eps": 1e-5, "momentum": 0.1, "training": False},
    "scaled_dot_product_attention": {"dropout_p": 0.0, "is_causal": False, "enable_gqa": False},
    "leaky_relu": {"negative_slope": 0.01}, "elu": {"alpha": 1.0}, "celu": {"alpha": 1.0},
    "softplus": {"beta": 1.0, "threshold": 20.0}, "hardtanh": {"min_val": -1.0, "max_val": 1.0},
    "normalize": {"p": 2.0, "dim": 1, "eps": 1e-12}, "cosine_similarity": {"dim": 1, "eps": 1e-8},
    "interpolate": {"mode": "nearest"}, "pad": {"mode": "constant"},
    "embedding": {"scale_grad_by_freq": False, "sparse": False},
    # x.var(dim) divides by n - 1 unless told otherwise: a hand-written layer norm needs unbiased=False
    "var": {"unbiased": True}, "std": {"unbiased": True}, "var_mean": {"unbiased": True},
    "std_mean": {"unbiased": True},
}

#: The keywords an API also takes by position after its first argument, in order: ``F.leaky_relu(x, 0.2)`` records
#: the slope as ``input.1``. Only signatures that have one form (``torch.var(x, False)`` may mean ``unbiased``).
POSITIONAL: dict[str, tuple[str, ...]] = {
    "gelu": ("approximate",),
    "leaky_relu": ("negative_slope", "inplace"), "elu": ("alpha", "inplace"), "celu": ("alpha", "inplace"),
    "softplus": ("beta", "threshold"), "hardtanh": ("min_val", "max_val", "inplace"),
    "dropout": ("p", "training", "inplace"), "dropout1d": ("p", "training", "inplace"),
    "dropout2d": ("p", "training", "inplace"), "dropout3d": ("p", "training", "inplace"),
    "normalize": ("p", "dim", "eps"), "cosine_similarity": ("x2", "dim", "eps"),
    "layer_norm": ("normalized_shape", "weight", "bias", "eps"), "group_norm": ("num_groups", "weight", "bias", "eps"),
    "batch_norm": ("running_mean", "running_var", "weight", "bias", "training", "momentum", "eps"),
    "cross_entropy": ("target", "weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing"),
    "nll_loss": ("target", "weight", "size_average", "ignore_index", "reduce", "reduction"),
    "mse_loss": ("target", "size_average", "reduce", "reduction"), "l1_loss": ("target", "size_average", "reduce",
                                                                             "reduction"),
    "smooth_l1_loss": ("target", "size_average", "reduce", "reduction", "beta"),
    "huber_loss": ("target", "reduction", "delta"),
    "kl_div": ("target", "size_average", "reduce", "reduction", "log_target"),
    "binary_cross_entropy": ("target", "weight", "size_average", "reduce", "reduction"),
    "binary_cross_entropy_with_logits": ("target", "weight", "size_average", "reduce", "reduction"),
    "interpolate": ("size", "scale_factor", "mode"), "pad": ("pad", "mode"),
    "embedding": ("weight", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse"),
    "scaled_dot_product_attention": ("key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"),
}


def default_of(api: str, argument: str) -> tuple[bool, object]:
    """(known, value): the default of ``argument`` (``input.approximate``, ``input.1`` for an argument passed by
    position, or the bare keyword) of ``api``."""
    name = argument.rsplit(".", 1)[-1]
    if name.isdigit():
        names = POSITIONAL.get(api, ())
        position = int(name)
        name = names[position - 1] if 1 <= position <= len(names) else name
    table = DEFAULTS.get(api)
    if table is None or name not in table:
        return False, None
    return True, table[name]
