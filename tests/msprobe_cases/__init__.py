"""Real msprobe dump pairs with ONE known injected fault each, and the answer a diagnosis must give.

``make_case(name, cache_root)`` dumps the golden, target (and bench) runs of a case, each in its own
fresh interpreter (msprobe keeps global state), checks the dumps show the fault where the case says
(see ``verify.py``) and caches them under ``cache_root/<name>-<hash of these sources>/``, so a rerun
costs nothing and an edited generator never reuses stale dumps. A case directory appears atomically
(built in a temporary sibling, then renamed): a killed run never leaves half a case behind.

Layout of a case directory: ``golden/dump``, ``target/dump`` (and ``bench/dump``), each an msprobe dump
root with ``step0/rank*/{dump.json, dump_tensor_data/, stack.json, construct.json}``, plus
``case.json`` (the expected answer and the measured facts).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .specs import CASE_NAMES, SPECS, CaseSpec
from .verify import CaseError, verify

__all__ = ["CASE_NAMES", "Case", "CaseError", "default_cache_root", "make_case", "source_hash"]

HERE = Path(__file__).resolve().parent
DUMP_SCRIPT = HERE / "_dump.py"
#: One dump takes ~7 s on a 2-core machine (most of it importing torch and msprobe).
DUMP_TIMEOUT_S = 300
#: Temporary case folders older than this are leftovers of a killed run and are removed.
STALE_TMP_S = 3600


@dataclass(frozen=True)
class Case:
    """A generated case: where its dumps are and what a correct diagnosis says about them."""

    name: str
    golden: Path  # msprobe dump ROOT (holds step0/rank*/)
    target: Path
    bench: Path | None
    first_op: str | None  # dump.json key of the call at fault (target's key when names differ)
    category: str
    pass_: str | None
    rank: str | None
    argument: str | None
    description: str
    step: int | None = None
    also_accept: tuple[str | None, ...] = ()
    measured: dict[str, Any] = field(default_factory=dict)

    @property
    def accepted_first_ops(self) -> tuple[str | None, ...]:
        """first_op plus the alternatives the spec also accepts (precision drift: none or the first linear)."""
        return (self.first_op, *self.also_accept)


def default_cache_root() -> Path:
    """``$ACC_AGENT_CASE_CACHE`` or ``~/.cache/acc-agent/msprobe-cases``."""
    env = os.environ.get("ACC_AGENT_CASE_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "acc-agent" / "msprobe-cases"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def source_hash() -> str:
    """Hash of the generator's sources and of the versions that shape a dump (torch, msprobe, python)."""
    h = hashlib.sha256()
    for path in sorted(HERE.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    h.update(f"{_version('torch')}|{_version('mindstudio-probe')}|{sys.version_info[:2]}".encode())
    return h.hexdigest()[:12]


def _run_side(name: str, side: str, out: Path, world_size: int) -> None:
    """Dump one side: ``world_size`` fresh processes (one per rank) sharing a file:// store."""
    out.mkdir(parents=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0", "CUDA_VISIBLE_DEVICES": ""}
    procs: list[tuple[subprocess.Popen[bytes], Any]] = []
    failures = []
    try:
        for rank in range(world_size):
            log = (out / f"log_rank{rank}.txt").open("wb")
            cmd = [sys.executable, str(DUMP_SCRIPT), name, side, str(out), str(rank), str(world_size)]
            procs.append((subprocess.Popen(cmd, cwd=out, env=env, stdout=log, stderr=subprocess.STDOUT), log))
        for rank, (proc, _) in enumerate(procs):
            try:
                proc.wait(timeout=DUMP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.returncode != 0:
                tail = (out / f"log_rank{rank}.txt").read_text(errors="replace")[-3000:]
                failures.append(f"{name}/{side} rank {rank} exited {proc.returncode}:\n{tail}")
                break  # the other ranks would only wait for it at the next collective
    finally:  # interrupted (Ctrl-C, a failing rank): leave no dump process running behind us
        for proc, log in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
    if failures:
        raise RuntimeError("\n".join(failures))
    _tidy(out)


def _tidy(out: Path) -> None:
    """Keep only the dump root; drop msprobe's absolute data path (readers use dump_tensor_data/ beside)."""
    for dump_json in (out / "dump").glob("step*/*/dump.json"):
        doc = json.loads(dump_json.read_text(encoding="utf-8"))
        doc["dump_data_dir"] = None
        dump_json.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    for child in out.iterdir():
        if child.name != "dump":
            if child.is_dir():
                shutil.rmtree(child)
            else:
                child.unlink()


def _remove_stale_tmp(root: Path, name: str) -> None:
    now = time.time()
    for tmp in root.glob(f".tmp-{name}-*"):
        try:
            if now - tmp.stat().st_mtime > STALE_TMP_S:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            pass


def _description(spec: CaseSpec, facts: dict[str, Any]) -> str:
    """What was injected, what must be found, and the numbers measured in these very dumps."""
    if spec.first_op is None:
        expect = f"Expected: {spec.category}, no first divergence"
        if spec.also_accept:
            expect += f" (or {', '.join(str(a) for a in spec.also_accept if a)})"
    else:
        expect = f"Expected: {spec.category} at {spec.first_op}"
        if spec.rank:
            expect += f" on {spec.rank}"
        if spec.pass_:
            expect += f" ({spec.pass_} pass)"
        if spec.argument:
            expect += f", through argument {spec.argument}"
    measured = []
    if "first_op_outputs" in facts:
        before = (f"the {facts['keys_before']} paired keys before it agree ({facts['leaves_before']} "
                  f"leaves, worst rel L2 {facts['noise_before']:.3g})" if facts["keys_before"]
                  else "it is the first dumped call")
        measured.append(f"{spec.first_op}: inputs [{facts['first_op_inputs']}], outputs "
                        f"[{facts['first_op_outputs']}]; {before}")
    if "golden_only" in facts:
        for side in ("golden", "target"):
            keys = facts[f"{side}_only"]
            measured.append(f"{len(keys)} keys only in {side}" + (f" (e.g. {', '.join(keys[:3])})" if keys else ""))
    if "worst_rel_l2" in facts:
        measured.append(f"largest error anywhere: {facts['worst_row']} rel L2 {facts['worst_rel_l2']:.3g}")
    if "linear_rel_l2" in facts:
        measured.append("linear outputs rel L2: " + ", ".join(f"{k} {v:.3g}" for k, v in
                                                              facts["linear_rel_l2"].items()))
    for key, value in facts.items():
        if key.endswith("_first_diff"):
            measured.append(f"{key.removesuffix('_first_diff')} first differs at {value}")
    if "bench_worst_rel_l2" in facts:
        measured.append(f"bench vs golden: worst rel L2 {facts['bench_worst_rel_l2']:.3g} (clean)")
    text = f"{spec.what} {expect}."
    if measured:
        text += " Measured in these dumps (task " + str(facts.get("task")) + "): " + "; ".join(measured) + "."
    return text


def _load(spec: CaseSpec, case_dir: Path) -> Case:
    doc = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
    bench = case_dir / "bench" / "dump"
    return Case(
        name=spec.name,
        golden=case_dir / "golden" / "dump",
        target=case_dir / "target" / "dump",
        bench=bench if "bench" in spec.sides else None,
        first_op=spec.first_op,
        category=spec.category,
        pass_=spec.pass_,
        rank=spec.rank,
        argument=spec.argument,
        description=doc["description"],
        also_accept=spec.also_accept,
        measured=doc["measured"],
        step=spec.step,
    )


def make_case(name: str, cache_root: str | Path | None = None) -> Case:
    """Generate (or reuse from the cache) the dumps of case ``name`` and return it with its answer."""
    spec = SPECS[name]
    root = Path(cache_root).expanduser() if cache_root is not None else default_cache_root()
    final = root / f"{name}-{source_hash()}"
    if (final / "case.json").is_file():
        return _load(spec, final)
    root.mkdir(parents=True, exist_ok=True)
    _remove_stale_tmp(root, name)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{name}-", dir=root))
    try:
        started = time.monotonic()
        for side in spec.sides:
            _run_side(name, side, tmp / side, spec.world_size)
        facts = verify(spec, tmp)
        facts["generation_s"] = round(time.monotonic() - started, 1)
        doc = {"name": name, "category": spec.category, "first_op": spec.first_op, "pass": spec.pass_,
               "rank": spec.rank, "argument": spec.argument, "description": _description(spec, facts),
               "measured": facts}
        (tmp / "case.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / "case.json").is_file():  # not a concurrent run that finished first
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return _load(spec, final)
