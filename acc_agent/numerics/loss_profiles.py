"""Named standards a baseline-vs-target loss-curve comparison is held to.

Why named profiles instead of one tolerance table: users are held to different bars and need to say
which one a verdict used. A profile is a list of criteria — a metric, a statistic, a limit — and
every criterion is reported with its value, its limit and pass/fail, so a reviewer can check the
verdict line by line.

``ascend`` (the default) is the acceptance bar for a model migrated to Ascend NPU: the loss curve
may not sit more than 1 % away from the baseline on average, the very first step — before any
optimisation could make the runs drift apart — must agree within 0.5 % (or 0.005 in absolute
terms, which is the looser of the two only for small losses), and the gradient norm within 10 %
on average. An average, not the worst point: single steps of two healthy runs differ by more than
1 % where the batch is hard, while a steady 1.5 % offset is a real difference.

``ci`` is how Megatron-LM / MindSpeed functional tests compare a run against golden values: the
worst point may not deviate more than 2 % in loss, 10 % in grad norm, 5 % in throughput and 10 % in
memory, after the first 5 steps. Throughput and memory criteria are reported beside the verdict
(speed is judged by compare-performance), the accuracy criteria decide it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Statistic = Literal["mean_relative_error", "max_relative_deviation", "first_step"]
Kind = Literal["accuracy", "performance"]

STATISTIC_LABELS: dict[str, str] = {
    "mean_relative_error": "mean relative error",
    "max_relative_deviation": "max relative deviation",
    "first_step": "first-step relative error",
}
METRIC_LABELS: dict[str, str] = {
    "loss": "loss",
    "grad_norm": "grad norm",
    "throughput": "throughput",
    "tflops_per_device": "TFLOP/s per device",
    "step_time_ms": "step time",
    "memory_mb": "memory",
    "memory_allocated_mb": "allocated memory",
    "memory_max_allocated_mb": "max allocated memory",
    "memory_reserved_mb": "reserved memory",
    "memory_max_reserved_mb": "max reserved memory",
    "eval_loss": "validation loss",
    "lr": "learning rate",
}


def metric_label(metric: str) -> str:
    """How a report names a metric (``grad_norm`` -> ``grad norm``)."""
    return METRIC_LABELS.get(metric, metric.replace("_", " "))


@dataclass(frozen=True)
class Criterion:
    """One rule: ``statistic`` of ``metric`` (or of every metric starting with it, for ``memory_``) <= ``limit``."""

    metric: str
    statistic: Statistic
    limit: float
    kind: Kind = "accuracy"
    abs_limit: float | None = None  # first step: also met when the absolute difference is within this

    def matches(self, metric: str) -> bool:
        return metric == self.metric or (self.metric.endswith("_") and metric.startswith(self.metric))

    def label(self, metric: str) -> str:
        return f"{metric_label(metric)} {STATISTIC_LABELS[self.statistic]}"


@dataclass(frozen=True)
class Profile:
    name: str
    title: str
    description: str
    criteria: tuple[Criterion, ...]
    skip_first: int
    default_statistic: Statistic
    fallback_limit: float

    def criteria_for(self, metric: str) -> list[Criterion]:
        return [c for c in self.criteria if c.matches(metric)]


ASCEND = Profile(
    name="ascend",
    title="Ascend migration acceptance",
    description="mean relative loss error at most 1 %; first-step loss within 0.5 % (or 0.005 absolute); "
    "mean relative grad-norm error at most 10 %",
    criteria=(
        Criterion("loss", "mean_relative_error", 0.01),
        Criterion("loss", "first_step", 0.005, abs_limit=0.005),
        Criterion("grad_norm", "mean_relative_error", 0.10),
    ),
    skip_first=0,
    default_statistic="mean_relative_error",
    fallback_limit=0.01,
)

_PERF = ("throughput", "tflops_per_device", "step_time_ms")
CI = Profile(
    name="ci",
    title="Megatron-LM / MindSpeed functional-test convention",
    description="after the first 5 steps, max relative deviation: loss 2 %, grad norm 10 %, throughput 5 %, memory 10 %",
    criteria=(
        Criterion("loss", "max_relative_deviation", 0.02),
        Criterion("grad_norm", "max_relative_deviation", 0.10),
        *(Criterion(m, "max_relative_deviation", 0.05, kind="performance") for m in _PERF),
        Criterion("memory_", "max_relative_deviation", 0.10, kind="performance"),
    ),
    skip_first=5,
    default_statistic="max_relative_deviation",
    fallback_limit=0.02,
)

PROFILES: dict[str, Profile] = {p.name: p for p in (ASCEND, CI)}
DEFAULT_PROFILE = ASCEND.name
PERFORMANCE_METRICS = (*_PERF, "memory_")


def is_performance(metric: str) -> bool:
    """Speed and memory metrics: compared like the others, never deciding an accuracy verdict."""
    return any(metric == p or (p.endswith("_") and metric.startswith(p)) for p in PERFORMANCE_METRICS)
