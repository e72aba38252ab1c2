"""Benchmark of the CLI's start-up: ``--help`` and argument errors against a bare ``python -c pass``.

Every command line runs in a fresh process, ``--repeat`` times, alternating with the reference
run so load on a shared machine hits both alike; the median of each is printed with the ratio to
the reference. Measured: the ``acc-agent`` console script installed next to this interpreter
(what a venv or pipx user runs; ``python -m acc_agent`` where there is none) with ``--help``,
``compare-dumps --help``, a missing argument and an unknown option. The CLI's manifest
(``acc_agent/cli_manifest.py``) is built by one warm-up call first, as any first call after an
install or an edit does; that call's time is printed too.

Bytecode: with ``PYTHONDONTWRITEBYTECODE`` set (as on the CI machine) every import of acc-agent's
own modules compiles from source, which an installed package never does. The bench then measures
with bytecode in a temporary ``PYTHONPYCACHEPREFIX`` (the installed case, the acceptance figure)
and also as the environment is (printed, not judged).

Run: ``python bench/bench_startup.py [--repeat 7]``. Exit code 1 if a median exceeds 0.25 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BOUND_S = 0.25
LINES: list[tuple[str, list[str]]] = [
    ("--help", ["--help"]),
    ("compare-dumps --help", ["compare-dumps", "--help"]),
    ("missing argument", ["compare-dumps"]),
    ("unknown option", ["compare-dumps", "a", "b", "--bogus"]),
]


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("acc-agent")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "acc_agent"]


def _once(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, capture_output=True, env=env, check=False)
    return time.perf_counter() - t0


def measure(env: dict[str, str], repeat: int) -> tuple[float, float, dict[str, float]]:
    """(warm-up call, reference median, {line: median}) under ``env``."""
    cli = _cli()
    warm = _once([*cli, "--help"], env)  # builds the manifest (and the bytecode, where written)
    ref: list[float] = []
    times: dict[str, list[float]] = {label: [] for label, _ in LINES}
    for _ in range(repeat):
        for label, args in LINES:
            ref.append(_once([sys.executable, "-c", "pass"], env))
            times[label].append(_once([*cli, *args], env))
    return warm, statistics.median(ref), {k: statistics.median(v) for k, v in times.items()}


def report(title: str, warm: float, ref: float, medians: dict[str, float]) -> None:
    print(f"\n== {title}")
    print(f"reference  `{Path(sys.executable).name} -c pass`: {ref:.3f} s (median)")
    print(f"first call (writes the manifest): {warm:.3f} s")
    for label, t in medians.items():
        print(f"measured   {label:22s}: {t:.3f} s  = {t / ref:.1f}x the bare interpreter, "
              f"{t - ref:+.3f} s over it")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; python {sys.version.split()[0]}; "
          f"CLI: {' '.join(_cli())}")
    cache = tempfile.mkdtemp(prefix="bench-startup-")
    ok = True
    try:
        base = {**os.environ, "ACC_AGENT_CACHE_DIR": str(Path(cache) / "manifest")}
        base.pop("ACC_AGENT_NO_CLI_CACHE", None)
        installed = {**base, "PYTHONPYCACHEPREFIX": str(Path(cache) / "pyc")}
        installed.pop("PYTHONDONTWRITEBYTECODE", None)
        warm, ref, medians = measure(installed, args.repeat)
        report("with bytecode (an installed package)", warm, ref, medians)
        for label, t in medians.items():
            if t > BOUND_S:
                print(f"FAIL: {label} took {t:.3f} s > {BOUND_S} s")
                ok = False
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            report("as this environment runs it (PYTHONDONTWRITEBYTECODE set: acc-agent compiled on every call)",
                   *measure(base, args.repeat))
        print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print("all acceptance bounds met" if ok else "some acceptance bounds missed")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
