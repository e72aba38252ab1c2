"""Tool sentences (summaries, reasons, diagnoses, next actions) in the document's language.

Why at render time: the tools answer in English and that text is part of their output contract
(agents and scripts read it, saved JSON results carry it). A Chinese report must still read as
Chinese, so the renderer translates the tools' sentences with a table of patterns
(:mod:`acc_agent.render.zh_rules`): each pattern captures the computed parts (numbers, names,
paths, commands) and puts them unchanged into the Chinese sentence, so both languages print the
very same values. Paths under the project folder are shown relative to it in both languages, as
every other path of the documents is, so a report does not depend on where it was generated.
"""

from __future__ import annotations

import re
from functools import lru_cache, partial

from acc_agent.render.zh_rules import RULES


@lru_cache(maxsize=1)
def _compiled() -> tuple[tuple[re.Pattern[str], str], ...]:
    # longest first: a sentence pattern must see its clauses still in English
    return tuple((re.compile(pattern), zh) for pattern, zh in sorted(RULES, key=lambda r: -len(r[0])))


#: English clarifications: the one error figure named without its kind gets its kind; a field name or
#: variable a tool's sentence quotes is said in words (the JSON keeps it for scripts, a reader has no use for it).
_EN_RULES = (
    (re.compile(r"\brelative error (?=[-\d.])"), "relative L2 error "),
    (re.compile(r"\(fault_enters: operator or inputs\)"),
     "(its result says whether the difference enters through the operator or through its inputs)"),
    (re.compile(r"\bbatch_size / mean latency"), "batch size / mean latency"),
)


def relative_paths(text: str, base: str | None) -> str:
    """Strip the project folder from absolute paths inside ``text`` (paths read relative to mig.yaml)."""
    if not base:
        return text
    base = base.rstrip("/")
    return text.replace(base + "/", "")


def to_zh(text: str) -> str:
    """The Chinese form of one tool sentence; parts no rule knows stay as they are."""
    rules = _compiled()

    def apply(fragment: str, depth: int) -> str:
        for pattern, zh in rules:
            fragment = pattern.sub(partial(fill, zh, depth), fragment)
        return fragment

    def fill(zh: str, depth: int, m: re.Match[str]) -> str:
        values = {}
        for name, value in m.groupdict().items():
            value = value or ""
            values[name] = apply(value, depth + 1) if name.startswith("t_") and depth < 4 else value
        return zh.format(**values)

    return apply(text, 0)


def tool_text(text: str, lang: str, base: str | None = None) -> str:
    """``text`` (a tool's English sentence) as the document in ``lang`` prints it."""
    text = relative_paths(text, base)
    if lang == "zh":
        return to_zh(text)
    for pattern, repl in _EN_RULES:
        text = pattern.sub(repl, text)
    return text


#: Words that stay English in a Chinese engineering report: tool, format and metric names.
KEPT_WORDS = frozenset([
    "loss", "batch", "dtype", "shape", "rtol", "atol", "golden", "bench", "dump", "dumps", "torch", "msprobe", "npu", "smi", "npu-smi", "nvidia-smi", "cann", "gelu", "softmax", "mask", "eps", "grad", "norm", "lr", "fp", "fp16", "bf16", "fp32", "int8", "nan", "inf", "mean", "max", "min", "p50", "p95", "p99", "ms", "samples", "requests", "kpi", "cosine", "top", "acc", "agent", "mig", "yaml", "readme", "md", "csv", "json", "npy", "npz", "pt", "safetensors", "tensor", "api", "hccl", "aicore", "aicpu", "ai", "core", "cpu", "gpu", "cuda", "nms", "io", "sha", "sigmoid", "tanh", "erf", "sin", "cos", "exp", "silu", "swiglu", "layernorm", "batchnorm", "relu", "matmul", "hf32", "tf32", "md5", "l2", "ulp", "forward", "backward", "step", "steps", "mmcv", "mindspore", "megatron", "mindspeed", "health", "driver", "firmware", "toolkit", "source", "quick", "python", "compare", "summary", "pytorch", "epoch", "numpy", "profiling", "running", "momentum", "checkpoint", "epsilon", "variance", "rsqrt", "task", "rank", "level", "mix", "dropout", "train", "hook", "hooks", "autograd", "function", "arange", "replay", "squeeze", "unmatched", "acc-agent", "true", "false", "import",
    "dim", "keepdim", "attention", "padding", "head", "stride", "dilation", "groups", "token", "id", "tokenizer", "embedding",
    "adam", "betas", "top-k", "topk", "argmax", "argmin", "sort",
    "result",  # msprobe's CSV column
    "reshape", "transpose", "sum",
])

_IDENT = re.compile(r"`[^`]*`|'[^'\s][^']*'|<[^<>]*>|&\w+;|acc-agent [a-z][a-z-]*|npu-smi [a-z]+|(?<![!-~])--?[A-Za-z][\w-]*"
                    r"|[!-~]*[_/\\.=<>:@#\[\]{}()0-9][!-~]*|\b[A-Z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*\b")


def english_words(text: str) -> list[str]:
    """The English words of ``text`` that are neither identifiers nor kept technical terms.

    Used by the tests to hold a Chinese report Chinese: code spans, paths, names with digits,
    underscores or dots, acronyms and the terms of :data:`KEPT_WORDS` do not count.
    """
    bare = _IDENT.sub(" ", text)
    words = re.findall(r"[A-Za-z][A-Za-z'-]*[A-Za-z]", bare)
    return [w for w in words if w.lower().strip("'-") not in KEPT_WORDS]
