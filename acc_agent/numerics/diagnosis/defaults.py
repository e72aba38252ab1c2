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
}


def default_of(api: str, argument: str) -> tuple[bool, object]:
    """(known, value): the default of ``argument`` (``input.approximate``, or the bare keyword) of ``api``."""
    name = argument.rsplit(".", 1)[-1]
    table = DEFAULTS.get(api)
    if table is None or name not in table:
        return False, None
    return True, table[name]
