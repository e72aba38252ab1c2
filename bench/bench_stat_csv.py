"""Benchmark of the statistics-mode CSV writer alone (``write_csv`` on ~300k statistics rows), in process.

``compare-dumps`` writes msprobe's statistics CSV in a forked child beside the diagnosis; how long
that text takes decides whether the command waits for it. This bench isolates it: it builds the
rows of a synthetic msprobe L1 statistics pair once (``bench_statistics_compare.generate``, reused
from ``--workdir`` when already there), runs the diagnosis on them (which sets the Result cells as
the CLI does), then times ``write_csv`` ``--repeat`` times and prints the best and the median wall
and CPU seconds. With ``--reference FILE`` it also checks that every CSV written is byte for byte
that file (keep one from a known-good build: msprobe's users diff our CSV against theirs).

Run: ``python bench/bench_stat_csv.py [--calls 100000] [--workdir DIR] [--repeat 3] [--reference CSV]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

# this checkout's acc_agent (not whichever one is installed), and the pair generator beside this file
sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100_000, help="API calls in the generated pair (default 100000)")
    ap.add_argument("--workdir", type=Path, help="where the pair is generated, or found from an earlier run")
    ap.add_argument("--repeat", type=int, default=3, help="times write_csv is run (default 3)")
    ap.add_argument("--reference", type=Path, help="a CSV every run must equal byte for byte")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.workdir or Path(tmp)
        return _bench(work, args.calls, args.repeat, args.reference)


def _bench(work: Path, calls: int, repeat: int, reference: Path | None) -> int:
    import bench_statistics_compare as pair

    from acc_agent.io.dumps import open_dump_set
    from acc_agent.numerics import diagnosis
    from acc_agent.tools._compare_csv import write_csv
    from acc_agent.tools._rank_tasks import dump_info, plan_rank
    from acc_agent.tools._stat_rows import statistics_rows

    golden, target = work / "golden" / "step0" / "rank0", work / "target" / "step0" / "rank0"
    if not (golden / "dump.json").is_file() or not (target / "dump.json").is_file():
        pair.generate(work, calls, int(calls * 0.6), 0)
    gc.disable()  # as compare-dumps runs (gc_paused): millions of small objects live until the end
    g_set = open_dump_set(str(golden))
    g = g_set.ranks[next(iter(g_set.ranks))]
    t_set = open_dump_set(str(target), like=g_set)
    t = t_set.ranks[next(iter(t_set.ranks))]
    plan = plan_rank(g, t, None, "", False, None, False)
    rows = statistics_rows(g, t, plan.stat_pairs, None, scalars=plan.with_scalars)
    diagnosis.diagnose(rows.rows, g, t, None, None)
    dumps = {"": (dump_info(g), dump_info(t))}
    out = work / "bench_stat.csv"
    walls: list[float] = []
    cpus: list[float] = []
    same = True
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        write_csv(rows.rows, out, scalar_rows=rows.scalar_rows, dumps=dumps)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        if reference is not None and out.read_bytes() != reference.read_bytes():
            same = False
    print(f"{len(rows.rows)} rows, {len(rows.scalar_rows)} non-tensor arguments, {out.stat().st_size / 1e6:.0f} MB CSV")
    print(f"write_csv: best {min(walls):.2f} s wall ({min(cpus):.2f} s CPU), "
          f"median {statistics.median(walls):.2f} s wall ({statistics.median(cpus):.2f} s CPU) of {repeat}")
    if reference is not None:
        print("CSV equals the reference" if same else "CSV DIFFERS from the reference")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
