"""compare_performance and the statistics under it, on seeded numpy timings and real measurements."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from acc_agent.errors import AccAgentError
from acc_agent.models.performance import (
    MeasurementSettings,
    MeasurePerformanceInput,
    MeasurePerformanceOutput,
)
from acc_agent.numerics.stats import bootstrap_ratio, detect_outliers, detect_warmup, mann_whitney, summarize
from acc_agent.registry import call_tool
from acc_agent.tools.perf.measurement import batch_statistics


def _lognormal(median_ms: float, n: int, seed: int, sigma: float = 0.05) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(median_ms * np.exp(rng.normal(0.0, sigma, n)))


def _results(path: Path, per_batch: dict[int, list[float]], scope: str = "end_to_end",
             stages: dict[int, dict[str, list[float]]] | None = None) -> Path:
    params = MeasurePerformanceInput(callable="x:y", scope=scope)  # type: ignore[arg-type]
    rows = [batch_statistics(bs, [int(v * 1e6) for v in ms], params, 10, {k: [int(v * 1e6) for v in vals] for k, vals in (stages or {}).get(bs, {}).items()})
            for bs, ms in per_batch.items()]
    out = MeasurePerformanceOutput(
        verdict="measured", summary="synthetic", results=rows,
        settings=MeasurementSettings(source="callable", target="x:y", scope=scope, scope_description=scope,  # type: ignore[arg-type]
                                     batch_sizes=list(per_batch), warmup=10, warmup_reason="r", iterations=100,
                                     iterations_reason="r", throughput_definition="samples/s", synchronisation="none"),
    )
    path.write_text(out.model_dump_json(), encoding="utf-8")
    return path


def test_summary_matches_numpy() -> None:
    values = _lognormal(10.0, 200, 1)
    s = summarize(values)
    assert s.p50 == pytest.approx(np.percentile(values, 50)) and s.p99 == pytest.approx(np.percentile(values, 99))
    assert s.std == pytest.approx(np.std(values, ddof=1)) and s.n == 200


def test_outliers_and_warmup_are_found_not_dropped() -> None:
    values = [50.0, 20.0] + _lognormal(10.0, 100, 2) + [40.0]
    w = detect_warmup(values)
    assert w.count == 2 and w.leading_values == [50.0, 20.0]
    o = detect_outliers(values)
    assert {0, 1, 102} <= set(o.indices)


def test_bootstrap_ci_covers_the_true_ratio() -> None:
    base, targ = _lognormal(10.0, 150, 3), _lognormal(15.0, 150, 4)
    ci = bootstrap_ratio(base, targ, "p50", resamples=1000)
    assert ci.low < 1.5 < ci.high and ci.high - ci.low < 0.1
    assert ci.ratio == pytest.approx(np.median(targ) / np.median(base))
    same = bootstrap_ratio(base, _lognormal(10.0, 150, 5), "mean", resamples=1000)
    assert same.low < 1.0 < same.high
    mw = mann_whitney(base, targ)
    assert mw.p_value < 1e-10 and mw.probability_target_slower > 0.99
    assert mann_whitney(base, base).p_value == pytest.approx(1.0)


def test_verdicts_against_the_target_ratio(tmp_path: Path) -> None:
    b = _results(tmp_path / "b.json", {1: _lognormal(10.0, 120, 6), 8: _lognormal(40.0, 120, 7)})
    t = _results(tmp_path / "t.json", {1: _lognormal(15.0, 120, 8), 8: _lognormal(44.0, 120, 9)})
    slow = call_tool("compare_performance", {"baseline": str(b), "target": str(t)})
    assert slow.verdict == "not_met"
    r1 = slow.rows[0]
    assert r1.ratio == pytest.approx(1.5, rel=0.05) and r1.ci_low is not None and r1.ci_low > 1.0
    assert r1.throughput_ratio == pytest.approx(1 / 1.5, rel=0.06)
    assert any("per-call overhead" in c for c in slow.likely_causes)  # ratio 1.5 at bs 1 vs 1.1 at bs 8
    assert call_tool("compare_performance", {"baseline": str(b), "target": str(t), "target_ratio": 2.0}).verdict == "met"
    edge = call_tool("compare_performance", {"baseline": str(b), "target": str(t), "target_ratio": 1.1})
    assert edge.verdict in ("inconclusive", "not_met") and edge.rows[1].met is None  # bs 8 CI straddles 1.1


def test_scope_batch_and_settings_mismatches_are_stated(tmp_path: Path) -> None:
    b = _results(tmp_path / "b.json", {1: _lognormal(10.0, 50, 1), 4: _lognormal(20.0, 50, 2)})
    t = _results(tmp_path / "t.json", {1: _lognormal(10.0, 50, 3), 16: _lognormal(60.0, 50, 4)}, scope="device_only")
    refused = call_tool("compare_performance", {"baseline": str(b), "target": str(t)})
    assert refused.verdict == "not_comparable" and refused.rows == []
    assert "scope differs" in refused.summary and "--allow-scope-mismatch" in refused.summary
    forced = call_tool("compare_performance", {"baseline": str(b), "target": str(t), "allow_scope_mismatch": True})
    assert [r.batch_size for r in forced.rows] == [1]
    assert any("scope differs" in m for m in forced.mismatches)
    assert any("one side only" in m and "[4, 16]" in m for m in forced.mismatches)


def test_stage_that_explains_the_gap(tmp_path: Path) -> None:
    n = 60
    base_stages = {"preprocess": _lognormal(2.0, n, 1), "inference": _lognormal(6.0, n, 2), "postprocess": _lognormal(1.0, n, 3)}
    targ_stages = {"preprocess": _lognormal(2.1, n, 4), "inference": _lognormal(5.0, n, 5), "postprocess": _lognormal(6.0, n, 6)}
    b_total = list(np.sum([base_stages[k] for k in base_stages], axis=0))
    t_total = list(np.sum([targ_stages[k] for k in targ_stages], axis=0))
    b = _results(tmp_path / "b.json", {4: b_total}, scope="segmented", stages={4: base_stages})
    t = _results(tmp_path / "t.json", {4: t_total}, scope="segmented", stages={4: targ_stages})
    out = call_tool("compare_performance", {"baseline": str(b), "target": str(t)})
    assert out.verdict == "not_met" and out.bottleneck_stage == "postprocess"
    gap = out.stage_gaps[0]
    assert gap.stage == "postprocess" and gap.delta_ms == pytest.approx(5.0, rel=0.1)
    assert gap.share_of_gap is not None and gap.share_of_gap > 0.9
    assert "AICPU" in out.likely_causes[0]


def test_real_measurements_compare(tmp_path: Path) -> None:
    """Two real runs of the same calibrated workload, one made 2x heavier: the ratio is found."""
    import test_perf_measure as workloads  # noqa: F401 - the module the callables live in

    common: dict[str, Any] = {"batch_sizes": [2], "warmup": 2, "iterations": 30}
    base = call_tool("measure_performance", {"callable": "test_perf_measure:spin", "out": str(tmp_path / "b.json"), **common})
    targ = call_tool("measure_performance", {"callable": "test_perf_compare:double_spin", "out": str(tmp_path / "t.json"), **common})
    assert base.verdict == targ.verdict == "measured"
    out = call_tool("compare_performance", {"baseline": str(tmp_path / "b.json"), "target": str(tmp_path / "t.json"),
                                            "target_ratio": 1.2})
    row = next(r for r in out.rows if r.batch_size == 2)
    assert 1.6 < row.ratio < 2.6 and out.verdict == "not_met"


def double_spin(batch_size: int) -> None:
    from test_perf_measure import spin

    spin(batch_size)
    spin(batch_size)


def test_bad_results_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"verdict": "measured"}))
    good = _results(tmp_path / "g.json", {1: _lognormal(1.0, 10, 1)})
    with pytest.raises(AccAgentError) as err:
        call_tool("compare_performance", {"baseline": str(bad), "target": str(good)})
    assert err.value.code == "invalid_results" and "bad.json" in err.value.message
    with pytest.raises(AccAgentError) as err:
        call_tool("compare_performance", {"baseline": str(tmp_path / "none.json"), "target": str(good)})
    assert err.value.code == "file_not_found"
    not_run = tmp_path / "nr.json"
    not_run.write_text(call_tool("measure_performance", {"requested": False}).model_dump_json())
    out = call_tool("compare_performance", {"baseline": str(not_run), "target": str(good)})
    assert out.verdict == "not_comparable" and "not_executed" in out.summary


def test_real_logs_a100_megatron_vs_npu_mindspeed(tmp_path: Path) -> None:
    """Log-to-log comparison of two real CI runs (GPU A100 and Ascend): numbers trace back to the files."""
    logs = Path(__file__).resolve().parent / "data" / "realdata" / "logs"
    gpu = logs / "NVIDIA-Megatron-LM__gpt3_mcore_te_tp1_pp1_dist_optimizer_no_mmap_bin_files__golden_values_dev_dgx_a100.json"
    npu = logs / "ascend-MindSpeed-LLM__tests_st_baseline_results__qwen3_8b_tp2_pp4_vpp2.json"
    for log, name in ((gpu, "b.json"), (npu, "t.json")):
        call_tool("measure_performance", {"from_log": str(log), "batch_sizes": [8], "out": str(tmp_path / name)})
    out = call_tool("compare_performance", {"baseline": str(tmp_path / "b.json"), "target": str(tmp_path / "t.json")})
    gpu_ms = [v * 1000 for v in json.loads(gpu.read_text())["iteration-time"]["values"].values()]
    npu_ms = json.loads(npu.read_text())["time info"]
    row = out.rows[0]
    assert row.baseline_ms == pytest.approx(float(np.median(gpu_ms[1:])))  # first step: warm-up, excluded
    assert row.target_ms == pytest.approx(float(np.median(npu_ms[1:])))
    assert row.ci_low is not None and row.ci_low < row.ratio < (row.ci_high or 0)
    assert out.verdict == "not_met" and any("iterations differs" in m for m in out.mismatches)


def test_throughput_only_side_is_not_compared_on_latency(tmp_path: Path) -> None:
    readme = Path(__file__).resolve().parent / "data" / "realdata" / "logs" / "mindspore-ai-models__official_cv_ResNet_README.md"
    log = tmp_path / "fps.log"
    log.write_text("\n".join(ln for ln in readme.read_text(encoding="utf-8").splitlines() if "fps:" in ln) + "\n")
    call_tool("measure_performance", {"from_log": str(log), "batch_sizes": [32], "out": str(tmp_path / "t.json")})
    b = _results(tmp_path / "b.json", {32: _lognormal(20.0, 50, 1)}, scope="training_step")
    out = call_tool("compare_performance", {"baseline": str(b), "target": str(tmp_path / "t.json")})
    assert out.verdict == "not_comparable" and any("throughput-only" in m for m in out.mismatches)
