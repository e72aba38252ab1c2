"""Benchmark of ``acc-agent compare-dumps`` on a dump root with many rank folders: one worker against
one per core (and, with ``--dask``, a Dask ``LocalCluster``), in the same invocation.

It writes a synthetic msprobe-layout pair ``GOLDEN/step0/rank{0..N-1}`` / ``TARGET/step0/rank{0..N-1}``
(golden fp32, target its fp16 rounding; in one rank one operator's output is negated) and times,
each in a fresh subprocess, ``compare-dumps GOLDEN TARGET --json --workers W`` for W = 1 and
W = 2, 4, ... up to the core count (``--scheduler local`` with ``--dask``). Reference: the
1-worker run. Printed: wall and CPU seconds of each, the speed-up against 1 worker and the
parallel efficiency (speed-up / workers), and that every run names the same rank and tensor as
the first divergence with identical rows. The machine's load average is printed before and after:
on a shared machine other processes take cores, and the speed-up can only reach the idle ones.

Each worker count runs ``--repeat`` times, alternating with the others; the best wall time of
each is compared (all are printed).

Run: ``python bench/bench_ranks.py [--ranks 64] [--tensors 12] [--elements 131072] [--repeat 3]
[--dask] [--workdir DIR]``. Exit code 1 if a run disagrees or the speed-up with all cores is under 0.7x
the core count.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def write_rank(root: Path, rank: int, tensors: int, elements: int, broken: bool, seed: int) -> None:
    """One rank folder on each side: ``tensors`` chained forward outputs of ``elements`` each."""
    rng = np.random.default_rng(seed)
    sides: dict[str, dict[str, Any]] = {"golden": {}, "target": {}}
    for side in sides:
        (root / side / "step0" / f"rank{rank}" / "dump_tensor_data").mkdir(parents=True, exist_ok=True)
    for i in range(tensors):
        key = f"Functional.linear.{i}.forward"
        name = f"{key}.output.0"
        g = rng.standard_normal(elements, dtype=np.float32).reshape(-1, 64)
        t = g.astype(np.float16)
        if broken and i == tensors // 2:
            t = -t
        for side, arr in (("golden", g), ("target", t)):
            folder = root / side / "step0" / f"rank{rank}"
            np.save(folder / "dump_tensor_data" / f"{name}.npy", arr)
            sides[side][key] = {"input_args": [], "input_kwargs": {}, "output": [{
                "type": "torch.Tensor", "dtype": f"torch.{arr.dtype}", "shape": list(arr.shape),
                "requires_grad": False, "data_name": f"{name}.npy"}]}
    for side, data in sides.items():
        folder = root / side / "step0" / f"rank{rank}"
        (folder / "dump.json").write_text(json.dumps({"task": "tensor", "level": "L1", "framework": "pytorch",
                                                      "dump_data_dir": str(folder / "dump_tensor_data"),
                                                      "data": data}))


def generate(root: Path, ranks: int, tensors: int, elements: int) -> int:
    """The pair; returns the rank whose operator is broken."""
    broken = ranks * 3 // 5
    for r in range(ranks):
        write_rank(root, r, tensors, elements, r == broken, 1000 + r)
    return broken


def run(golden: Path, target: Path, extra: list[str]) -> dict[str, Any]:
    """One fresh ``compare-dumps`` process: wall seconds, CPU seconds of it and its workers, the JSON."""
    cmd = [sys.executable, "-m", "acc_agent", "compare-dumps", str(golden), str(target), "--json",
           "--all-rows", *extra]
    before = os.times()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = os.times()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"run failed ({' '.join(extra)}):\n{proc.stderr[-3000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"wall": wall, "cpu": cpu, "out": json.loads(proc.stdout)}


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = ("verdict", "summary", "rows", "first_divergence", "diagnosis", "unmatched_golden", "unmatched_target")
    return all(a[k] == b[k] for k in keys)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--tensors", type=int, default=12, help="tensor pairs per rank")
    ap.add_argument("--elements", type=int, default=131072, help="elements per tensor")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each worker count (best wall time is kept)")
    ap.add_argument("--dask", action="store_true", help="also run with --scheduler local (needs acc-agent[distributed])")
    ap.add_argument("--workdir", default=None, help="where to generate the dumps (default: a temp dir, removed)")
    args = ap.parse_args()
    n_cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench-ranks-"))
    ok = True
    try:
        broken = generate(work, args.ranks, args.tensors, args.elements)
        mb = sum(p.stat().st_size for p in work.rglob("*.npy")) / 1e6
        print(f"machine: {n_cores} cores, load average {os.getloadavg()[0]:.2f} "
              f"(1 min); {args.ranks} ranks x {args.tensors} tensor pairs of {args.elements} elements, "
              f"{mb:.0f} MB of .npy; rank{broken} has the broken operator")
        golden, target = work / "golden", work / "target"
        for p in work.rglob("*.npy"):  # a warm page cache for every run alike
            p.read_bytes()
        counts = [1] + [w for w in (2, 4, 8, 16, 32, 64) if w <= n_cores]
        if n_cores not in counts:
            counts.append(n_cores)
        runs: dict[str, dict[str, Any]] = {}
        walls: dict[str, list[float]] = {}
        for _ in range(args.repeat):  # alternate the counts, so that load from other processes hits all alike
            for w in counts:
                label = f"{w} worker{'s' if w > 1 else ''}"
                r = run(golden, target, ["--workers", str(w)])
                walls.setdefault(label, []).append(r["wall"])
                if label not in runs or r["wall"] < runs[label]["wall"]:  # best of the repeats
                    if label in runs and runs[label]["out"] != r["out"]:
                        print(f"FAIL: two runs of {label} disagree")
                        ok = False
                    runs[label] = r
        print("all wall times: " + "; ".join(f"{k}: " + ", ".join(f"{x:.2f}" for x in v) + " s"
                                             for k, v in walls.items()))
        if args.dask:
            runs[f"dask local ({n_cores} workers)"] = run(golden, target, ["--scheduler", "local"])
        ref = runs["1 worker"]
        fd = ref["out"]["first_divergence"]
        print(f"reference  1 worker: {ref['wall']:.2f} s wall, {ref['cpu']:.2f} s CPU; first divergence "
              f"{fd['rank'] if fd else None} {fd['name'] if fd else None}")
        for label, r in runs.items():
            if label == "1 worker":
                continue
            w = n_cores if label.startswith("dask") else int(label.split()[0])
            speed = ref["wall"] / r["wall"]
            same = _same(ref["out"], r["out"])
            ok = ok and same
            print(f"measured   {label}: {r['wall']:.2f} s wall, {r['cpu']:.2f} s CPU; speed-up {speed:.2f}x "
                  f"(efficiency {speed / w:.0%}); rows and diagnosis identical to 1 worker: {same}")
            if not label.startswith("dask") and w == n_cores and n_cores > 1 and speed < 0.7 * n_cores:
                print(f"FAIL: speed-up with {w} workers below {0.7 * n_cores:.1f}x")
                ok = False
        if fd is None or fd.get("rank") != f"rank{broken}":
            print(f"FAIL: the first divergence is not in rank{broken}")
            ok = False
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print("all acceptance bounds met" if ok else "some acceptance bounds missed")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
