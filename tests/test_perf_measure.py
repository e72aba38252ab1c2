"""measure_performance on real workloads, commands, a real log, and every kind of bad input."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from acc_agent.cli import main
from acc_agent.errors import AccAgentError
from acc_agent.registry import call_tool
from acc_agent.timing import stage

LOGS = Path(__file__).resolve().parent / "data" / "realdata" / "logs"
MINDSPEED = LOGS / "ascend-MindSpeed-Core-MS__tests_st_net_test_ds3_pretrain__pta_det.txt"
HERE = __name__


def spin(batch_size: int) -> None:
    """Busy-wait 0.2 ms per sample: a calibrated, CPU-only workload."""
    end = time.perf_counter() + 0.0002 * batch_size
    while time.perf_counter() < end:
        pass


def staged(payload: dict[str, Any]) -> float:
    with stage("preprocess"):
        x = payload["x"] * 2.0
    with stage("inference"):
        y = x @ payload["w"]
    with stage("postprocess"):
        return float(y.sum())


def make_payload(batch_size: int) -> dict[str, Any]:
    rng = np.random.default_rng(batch_size)
    return {"x": rng.standard_normal((batch_size, 64)), "w": rng.standard_normal((64, 64))}


def fails_on_big_batches(batch_size: int) -> None:
    if batch_size > 4:
        raise RuntimeError(f"out of memory at batch {batch_size}")


def hangs(batch_size: int) -> None:
    if batch_size > 1:
        time.sleep(60)


def _measure(**args: Any) -> Any:
    base = {"warmup": 2, "iterations": 20}
    base.update(args)
    return call_tool("measure_performance", base)


def test_calibrated_workload_and_batch_1_added() -> None:
    out = _measure(callable=f"{HERE}:spin", batch_sizes=[4])
    assert out.verdict == "measured"
    assert [r.batch_size for r in out.results] == [1, 4]
    assert any("batch size 1 added" in n for n in out.notes)
    r1, r4 = out.results
    assert 0.2 <= r1.p50_ms < 0.2 * 2 and 0.8 <= r4.p50_ms < 0.8 * 2  # busy-wait: only preemption adds time
    assert r4.throughput == pytest.approx(4 / (r4.mean_ms / 1000))
    assert r4.throughput_unit == "samples/s" and len(r4.samples_ms) == 20 and r4.iterations == 20
    assert r4.p50_ms == pytest.approx(float(np.percentile(r4.samples_ms, 50)))
    assert r4.warmup == 2 and r4.warmup_detection is not None and "compilation" in r4.warmup_detection.reason
    s = out.settings
    assert s is not None and s.scope == "end_to_end" and s.batch_sizes == [1, 4] and "per sample" in s.throughput_definition
    assert s.synchronisation.startswith("none") and out.trigger and out.environment["python"]
    assert any("below the 10" in n for n in out.notes)  # warmup 2 is flagged


def test_setup_hook_and_stage_timings() -> None:
    out = _measure(callable=f"{HERE}:staged", setup=f"{HERE}:make_payload", batch_sizes=[1, 32], scope="segmented",
                   throughput_unit="requests")
    r = out.results[1]
    assert set(r.stages) == {"preprocess", "inference", "postprocess"}
    assert all(len(st.samples_ms) == 20 for st in r.stages.values())
    total_share = sum(st.share_of_total or 0 for st in r.stages.values())
    assert 0.3 < total_share <= 1.0  # stages cover most of the call
    assert r.throughput == pytest.approx(1 / (r.mean_ms / 1000)) and r.throughput_unit == "requests/s"
    assert r.peak_host_memory_mb and r.peak_host_memory_mb > 10


def test_callable_that_raises_gives_error_rows_and_the_rest_completes() -> None:
    out = _measure(callable=f"{HERE}:fails_on_big_batches", batch_sizes=[1, 2, 8])
    assert out.verdict == "partial"
    assert [r.status for r in out.results] == ["ok", "ok", "error"]
    err = out.results[2].error or ""
    assert "RuntimeError: out of memory at batch 8" in err and "fails_on_big_batches" in err
    assert out.results[2].p50_ms is None


def test_callable_that_hangs_is_interrupted() -> None:
    t0 = time.perf_counter()
    out = _measure(callable=f"{HERE}:hangs", batch_sizes=[1, 2], timeout_s=1)
    assert time.perf_counter() - t0 < 10
    assert [r.status for r in out.results] == ["ok", "error"] and out.verdict == "partial"
    assert "CallTimeout" in (out.results[1].error or "") and "--timeout-s 1 s exceeded" in (out.results[1].error or "")


def test_command_ok_nonzero_and_hang() -> None:
    py = sys.executable
    ok = _measure(command=f'{py} -c "import os,sys; sys.exit(0 if os.environ[\'ACC_AGENT_BATCH_SIZE\'] == \'{{batch_size}}\' else 3)"',
                  batch_sizes=[1, 2], warmup=1, iterations=3)
    assert ok.verdict == "measured" and all(r.p50_ms and r.p50_ms > 1 for r in ok.results)
    assert "whole process" in (ok.settings.synchronisation if ok.settings else "")
    bad = _measure(command=f'{py} -c "import sys; print(\'boom\', file=sys.stderr); sys.exit(4)"', warmup=0, iterations=2)
    assert bad.verdict == "error" and "exited with code 4" in (bad.results[0].error or "") and "boom" in (bad.results[0].error or "")
    hang = _measure(command=f'{py} -c "import time; time.sleep(30)"', warmup=0, iterations=1, timeout_s=1)
    assert hang.verdict == "error" and "did not finish within 1 s" in (hang.results[0].error or "")
    missing = _measure(command="definitely-not-a-program-xyz", warmup=0, iterations=1)
    assert missing.verdict == "error" and "cannot run" in (missing.results[0].error or "")


def test_not_executed_has_exactly_the_three_parts() -> None:
    out = _measure(callable=f"{HERE}:spin", requested=False, environment_verdict="manual_stop", batch_sizes=[8])
    assert out.verdict == "not_executed" and out.results == []
    ne = out.not_executed
    assert ne is not None and set(ne.model_dump()) == {"reason", "missing_conditions", "command_template"}
    # the reason names the rule, never the document it comes from
    assert "not triggered" in ne.reason and "§" not in ne.reason and len(ne.missing_conditions) == 3
    assert any("manual_stop" in m for m in ne.missing_conditions)
    assert ne.command_template.startswith("acc-agent measure-performance --callable") and "--batch-sizes 1,8" in ne.command_template
    agreed = _measure(callable=f"{HERE}:spin", requested=False, environment_verdict="auto", user_agreed=True)
    assert agreed.verdict == "measured" and "agreed" in (agreed.trigger or "")
    kpi = _measure(callable=f"{HERE}:spin", requested=False, latency_kpi=True, iterations=5)
    assert kpi.verdict == "measured" and "KPI" in (kpi.trigger or "")
    nothing = _measure()
    assert nothing.verdict == "not_executed" and "nothing to measure" in nothing.not_executed.reason


def test_timings_from_a_real_mindspeed_log() -> None:
    out = _measure(from_log=str(MINDSPEED), batch_sizes=[16])
    text = MINDSPEED.read_text(encoding="utf-8", errors="replace")
    logged = [float(v) for v in re.findall(r"elapsed time per iteration \(ms\): ([0-9.]+)", text)]
    assert out.verdict == "measured" and out.settings is not None and out.settings.source == "log"
    r = out.results[0]
    assert logged[0] > 3 * logged[1]  # the real first step is a warm-up outlier ...
    assert r.warmup == 1 and r.iterations == len(logged) - 1  # ... detected and excluded, and said so
    assert r.batch_size == 16 and [x.batch_size for x in out.results] == [16]  # no batch 1 invented for a log
    assert r.scope == "training_step" and out.settings.scope == "training_step"
    assert r.p50_ms == pytest.approx(float(np.percentile(logged[1:], 50)))
    assert "not repeated" in (r.warmup_detection.reason if r.warmup_detection else "")
    assert any(e.ref == str(MINDSPEED) for e in out.evidence)


def test_throughput_only_log(tmp_path: Path) -> None:
    """Only the real `fps:` lines of the MindSpore ResNet README: throughput is reported, latency is N/A."""
    readme = LOGS / "mindspore-ai-models__official_cv_ResNet_README.md"
    lines = [ln for ln in readme.read_text(encoding="utf-8").splitlines() if "fps:" in ln]
    log = tmp_path / "fps_only.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fps = [float(v) for v in re.findall(r"fps: ([0-9.]+)", "\n".join(lines))]
    out = _measure(from_log=str(log), batch_sizes=[32])
    r = out.results[0]
    assert out.verdict == "measured" and r.p50_ms is None and r.samples_ms == []
    assert fps[0] < 0.5 * fps[1] and r.warmup == 1  # the real first value is warm-up
    assert r.throughput == pytest.approx(float(np.median(fps[1:])))
    assert any("latency statistics are N/A" in n for n in out.notes)
    assert "latency N/A" in out.summary


def test_bad_inputs_are_structured() -> None:
    with pytest.raises(AccAgentError) as e1:
        _measure(callable=f"{HERE}:spin", command="true")
    assert e1.value.code == "conflicting_targets"
    with pytest.raises(AccAgentError) as e2:
        _measure(callable="no_such_module_xyz:run")
    assert e2.value.code == "callable_not_found" and "no_such_module_xyz" in e2.value.message
    with pytest.raises(AccAgentError) as e3:
        _measure(callable="spin")
    assert e3.value.code == "invalid_callable"
    with pytest.raises(AccAgentError) as e4:
        _measure(callable=f"{HERE}:spin", batch_sizes=[0, 4])
    assert e4.value.code == "invalid_batch"
    import importlib.util

    if importlib.util.find_spec("torch_npu") is None:  # CI machines have no Ascend stack
        with pytest.raises(AccAgentError) as e6:
            _measure(callable=f"{HERE}:spin", sync="npu")
        assert e6.value.code == "sync_unavailable" and "torch_npu" in e6.value.message
    with pytest.raises(AccAgentError) as e5:
        _measure(from_log="/nonexistent/log.txt")
    assert e5.value.code == "file_not_found"


def test_cli_results_file_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "perf.json"
    with pytest.raises(SystemExit) as exc:
        main(["measure-performance", "--callable", f"{HERE}:spin", "--batch-sizes", "1,2", "--warmup", "1",
              "--iterations", "5", "--out", str(out_file), "--json"])
    assert exc.value.code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out_file.read_text()) and printed["results"][1]["batch_size"] == 2
    with pytest.raises(SystemExit) as exc:
        main(["measure-performance", "--callable", f"{HERE}:fails_on_big_batches", "--batch-sizes", "8",
              "--warmup", "0", "--iterations", "2", "--json"])
    assert exc.value.code == 0  # partial: batch 1 ran
    assert json.loads(capsys.readouterr().out)["verdict"] == "partial"
    with pytest.raises(SystemExit) as exc:
        main(["measure-performance", "--command", f"{sys.executable} -c 'raise SystemExit(2)'", "--warmup", "0",
              "--iterations", "1", "--json"])
    assert exc.value.code == 1 and json.loads(capsys.readouterr().out)["verdict"] == "error"
    with pytest.raises(SystemExit) as exc:
        main(["measure-performance", "--callable", f"{HERE}:spin", "--no-requested", "--json"])
    assert exc.value.code == 3 and json.loads(capsys.readouterr().out)["verdict"] == "not_executed"  # not run: inconclusive
