"""Run configuration from what a log or config file states, in canonical hyper-parameter names.

Sources: the Megatron/MindSpeed argument dump (``---- arguments ----`` block), the mmcv/mmengine
``Config:`` dump (python ``x = dict(...)`` statements, read with ``ast`` — never executed), HF
``trainer_state.json`` fields, the HF ``***** Running training *****`` header and
``TrainingArguments(...)`` dump, values printed on Megatron iteration lines, and YAML/JSON config
files. Seed 001: "ensure both sides use the same configuration before comparing" — learning rate,
batch sizes, parallelism, warm-up, model size, precision, flash attention.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from acc_agent.errors import AccAgentError
from acc_agent.io.logs.hf_header import HfRunInfo
from acc_agent.io.logs.source import LogSource

_ARG_LINE = re.compile(r"^\s*([A-Za-z_][\w]*)\s\.{3,}\s(.*?)\s*$")
_TS_PREFIX = re.compile(r"^\S*\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d\S*\s+-\s+\w+\s+-\s+\w+\s+-")
MAX_CONFIG_LINES = 20_000
#: Largest YAML / Python config file read (real ones are kilobytes; comparing settings is quadratic-ish).
MAX_CONFIG_FILE_BYTES = 1 << 20

# canonical name -> spellings, most specific first (dotted names come from nested configs)
ALIASES: dict[str, tuple[str, ...]] = {
    "lr": ("lr", "learning_rate", "optimizer.lr", "optim_wrapper.optimizer.lr", "optimizer.params.lr", "train.lr", "base_lr"),
    "min_lr": ("min_lr",),
    "lr_schedule": ("lr_decay_style", "lr_scheduler_type", "lr_config.policy", "scheduler.type"),
    "warmup": ("lr_warmup_iters", "lr_config.warmup_iters", "warmup_iters", "warmup_steps", "lr_warmup_fraction", "warmup_epochs"),
    "global_batch_size": ("global_batch_size", "total_train_batch_size", "total_batch_size"),
    "micro_batch_size": ("micro_batch_size", "per_device_train_batch_size", "train_batch_size", "data.samples_per_gpu", "train_dataloader.batch_size", "batch_size"),
    "gradient_accumulation": ("gradient_accumulation_steps", "accumulate_grad_batches"),
    "tensor_parallel": ("tensor_model_parallel_size", "tp", "tensor_parallel_size"),
    "pipeline_parallel": ("pipeline_model_parallel_size", "pp", "pipeline_parallel_size"),
    "context_parallel": ("context_parallel_size",),
    "expert_parallel": ("expert_model_parallel_size",),
    "sequence_parallel": ("sequence_parallel",),
    "world_size": ("world_size", "num_gpus", "gpus", "device_num"),
    "num_layers": ("num_layers", "num_hidden_layers", "n_layer", "model.depth"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "attention_heads": ("num_attention_heads", "n_head"),
    "ffn_hidden_size": ("ffn_hidden_size", "intermediate_size"),
    "seq_length": ("seq_length", "max_seq_length", "max_position_embeddings", "block_size"),
    "precision": ("precision", "params_dtype", "mixed_precision", "amp_type", "amp_level"),
    "fp16": ("fp16", "fp16.loss_scale"),
    "bf16": ("bf16",),
    "flash_attention": ("use_flash_attn", "use_flash_attention", "attn_implementation", "use_fused_attention"),
    "seed": ("seed",),
    "train_steps": ("train_iters", "max_steps", "max_iters", "runner.max_iters", "train_cfg.max_iters"),
    "train_examples": ("num_examples", "num_train_examples", "train_samples"),
    "logging_interval": ("logging_steps", "log_interval", "log_every_n_steps"),
    "train_epochs": ("num_train_epochs", "max_epochs", "epochs", "runner.max_epochs", "train_cfg.max_epochs"),
    "weight_decay": ("weight_decay", "optimizer.weight_decay", "optim_wrapper.optimizer.weight_decay"),
    "grad_clip": ("clip_grad", "max_grad_norm", "optimizer_config.grad_clip.max_norm", "gradient_clip_val"),
    "optimizer": ("optimizer", "optim", "optimizer.type", "optim_wrapper.optimizer.type"),
    "loss_scale": ("loss_scale", "initial_loss_scale"),
}


def _scalar(text: str) -> str | int | float | bool | None:
    t = text.strip()
    if t in ("True", "true"):
        return True
    if t in ("False", "false"):
        return False
    if t in ("None", "null"):
        return None
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return t


def flatten(obj: object, prefix: str = "", out: dict[str, object] | None = None, depth: int = 0) -> dict[str, object]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; settings nested deeper than 64 levels are not settings."""
    out = {} if out is None else out
    if depth > 64:  # a JSON document nested a thousand deep would exhaust the stack here
        return out
    if isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, f"{prefix}{k}.", out, depth + 1)
    elif isinstance(obj, (list, tuple)) and not all(isinstance(x, (int, float, str, bool)) or x is None for x in obj):
        return out
    else:
        out[prefix.rstrip(".")] = list(obj) if isinstance(obj, tuple) else obj
    return out


def _literal(node: ast.AST) -> object:
    """A literal or a ``dict(...)`` call; anything else (names, lambdas) is kept as its source text."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return {kw.arg: _literal(kw.value) for kw in node.keywords if kw.arg}
    if isinstance(node, ast.Dict):
        return {(_literal(k) if k is not None else "**"): _literal(v) for k, v in zip(node.keys, node.values, strict=False)}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return ast.unparse(node)


def _python_config(block: str) -> dict[str, object]:
    """Top-level ``name = value`` statements of an mmcv config dump, statement by statement."""
    out: dict[str, object] = {}
    # ast.parse raises RecursionError/MemoryError on deeply nested expressions (1+1+...+1, 50,000
    # deep) and ValueError on NUL bytes: each means "not a config statement", like a SyntaxError.
    unreadable = (SyntaxError, ValueError, RecursionError, MemoryError)
    try:
        tree = ast.parse(block)
        statements = tree.body
    except unreadable:
        statements = []
        for chunk in re.split(r"\n(?=[A-Za-z_]\w*\s*=)", block):
            try:
                statements.extend(ast.parse(chunk).body)
            except unreadable:
                continue
    for st in statements:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            try:
                out[st.targets[0].id] = _literal(st.value)
            except RecursionError:  # a literal nested too deeply to be a setting
                continue
    return out


#: Largest side file (training_args.json) read; the real one is a few kilobytes.
MAX_SIDE_JSON_BYTES = 16 << 20


def _side_json(path: Path) -> object:
    """A JSON file read next to a log (training_args.json); unreadable or damaged counts as empty.

    Why not an error: the log itself was readable and already gives settings; the side file only adds.
    """
    try:
        if path.stat().st_size > MAX_SIDE_JSON_BYTES:
            return {}
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}


def raw_config_from_log(path: Path) -> tuple[dict[str, object], str]:
    """Flat ``name -> value`` settings a log states, and where they came from."""
    source = LogSource.open(path)
    sample = source.sample()
    if sample.first_char in "{[" and path.suffix.lower() in (".json", ""):
        doc = source.load_json()
        if isinstance(doc, dict) and "log_history" in doc:
            keys = ("train_batch_size", "logging_steps", "max_steps", "num_train_epochs", "eval_steps", "save_steps")
            flat = {k: doc[k] for k in keys if k in doc}
            args_file = path.with_name("training_args.json")
            if args_file.is_file():
                flat.update(flatten(_side_json(args_file)))
            return flat, "trainer_state.json fields" + (" + training_args.json" if args_file.is_file() else "")
        return (flatten(doc) if isinstance(doc, dict) else {}), "JSON document"
    settings: dict[str, object] = {}
    where: list[str] = []
    in_args = False
    in_cfg = False
    cfg_lines: list[str] = []
    cfg_start = 0
    first_iter: str | None = None
    hf = HfRunInfo()
    for lineno, line in source.lines():
        if lineno > MAX_CONFIG_LINES and not in_args and not in_cfg:
            break
        hf.feed(lineno, line)
        if "------ arguments ------" in line or "-- arguments --" in line:
            in_args = True
            where.append(f"argument dump from line {lineno}")
            continue
        if in_args:
            if "end of arguments" in line:
                in_args = False
                continue
            m = _ARG_LINE.match(line)
            if m:
                settings[m.group(1)] = _scalar(m.group(2))
            continue
        if in_cfg:
            if _TS_PREFIX.match(line) or line.startswith("```"):
                settings.update(flatten(_python_config("\n".join(cfg_lines))))
                where.append(f"Config dump, lines {cfg_start}-{lineno - 1}")
                in_cfg = False
            elif len(cfg_lines) < MAX_CONFIG_LINES:  # a config dump is a few hundred lines: the rest is skipped
                cfg_lines.append(line)
                continue
            else:
                continue
        if line.rstrip().endswith("- INFO - Config:"):
            in_cfg, cfg_start, cfg_lines = True, lineno + 1, []
            continue
        if first_iter is None and " iteration " in line and "global batch size" in line:
            first_iter = line
            m2 = re.search(r"global batch size:\s*(\d+)", line)
            if m2:
                settings.setdefault("global_batch_size", int(m2.group(1)))
            m3 = re.search(r"iteration\s+\d+\s*/\s*(\d+)", line)
            if m3:
                settings.setdefault("train_iters", int(m3.group(1)))
            where.append(f"iteration line {lineno}")
    if in_cfg and cfg_lines:
        settings.update(flatten(_python_config("\n".join(cfg_lines))))
        where.append(f"Config dump from line {cfg_start}")
    if hf.arguments:
        where.append(f"TrainingArguments dump from line {hf.arguments_line}")
    if hf.header:
        where.append(f"training header from line {hf.header_line}")
    for key, value in hf.as_config().items():
        settings.setdefault(key, value)
    return settings, "; ".join(where) or "nothing found"


def raw_config_from_file(path: Path) -> tuple[dict[str, object], str]:
    """A YAML/JSON config file, flattened; other files are read as logs."""
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml", ".py") and path.is_file() and path.stat().st_size > MAX_CONFIG_FILE_BYTES:
        raise AccAgentError("config_too_large", f"{path} is {path.stat().st_size >> 10} KiB, not a training config file",
                            hint="Pass the run's config file (a few kilobytes) or its log.", path=str(path))
    if suffix in (".yaml", ".yml"):
        import yaml

        from acc_agent.io.safe_yaml import load_yaml

        try:
            doc = load_yaml(path.read_text(encoding="utf-8"), str(path))  # bounded: flatten() walks every alias
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise AccAgentError("invalid_yaml", f"{path} is not valid YAML: {exc}", hint="Fix the YAML syntax.", path=str(path)) from None
        return (flatten(doc) if isinstance(doc, dict) else {}), "YAML config"
    if suffix == ".py":
        return flatten(_python_config(path.read_text(encoding="utf-8", errors="replace"))), "python config (read with ast, not executed)"
    return raw_config_from_log(path)


def canonical_config(flat: dict[str, object]) -> dict[str, tuple[object, str]]:
    """``canonical name -> (value, original key)`` for the hyper-parameters that must match."""
    lowered = {k.lower(): (k, v) for k, v in flat.items()}
    out: dict[str, tuple[object, str]] = {}
    for canon, spellings in ALIASES.items():
        for spelling in spellings:
            hit = lowered.get(spelling)
            if hit is None:
                # nested spellings: any key ending in ".<spelling>" (e.g. model.num_layers)
                hit = next(((k, v) for lk, (k, v) in lowered.items() if lk.endswith("." + spelling)), None) if "." not in spelling else None
            if hit is not None and hit[1] is not None and not isinstance(hit[1], dict):
                out[canon] = (hit[1], hit[0])
                break
    if "precision" not in out:
        if out.get("bf16", (False, ""))[0] is True:
            out["precision"] = ("bf16", out["bf16"][1])
        elif out.get("fp16", (False, ""))[0] not in (False, None, ""):
            out["precision"] = ("fp16", out["fp16"][1])
    out.pop("bf16", None)
    out.pop("fp16", None)
    return out
