"""English and Chinese strings shared by the templates and the document checks.

Why one table: the consistency check finds facts in the rendered files by their row labels, so
the labels the templates print and the labels the checker looks for must be the same strings.
"""

from __future__ import annotations

LANGS = ("en", "zh")

STRINGS: dict[str, dict[str, str]] = {
    # verdict words
    "yes": {"en": "yes", "zh": "是"},
    "no": {"en": "no", "zh": "否"},
    "met": {"en": "met", "zh": "达标"},
    "not_met": {"en": "not met", "zh": "未达标"},
    "na": {"en": "N/A", "zh": "N/A"},
    "pass": {"en": "pass", "zh": "通过"},
    "fail": {"en": "fail", "zh": "不通过"},
    "pass_with_conditions": {"en": "pass with conditions", "zh": "有条件通过"},
    "run": {"en": "run", "zh": "运行"},
    "source": {"en": "source", "zh": "来源"},
    # fact labels (consistency matrix)
    "f_baseline_source": {"en": "Baseline source", "zh": "基线来源"},
    "f_baseline_log": {"en": "Baseline log", "zh": "基线日志"},
    "f_band": {"en": "Short-run band", "zh": "短测下降区间"},
    "f_window": {"en": "Short-run window", "zh": "短测窗口"},
    "f_flat": {"en": "Flat-loss step limit", "zh": "loss 无改善步数上限"},
    "f_metric": {"en": "Loss metric", "zh": "loss 指标"},
    "f_target_log": {"en": "Target log", "zh": "目标日志"},
    "f_short_run_result": {"en": "Short-run result", "zh": "短测结果"},
    "f_rtol": {"en": "rtol", "zh": "rtol"},
    "f_atol": {"en": "atol", "zh": "atol"},
    "f_precision": {"en": "Target precision", "zh": "目标精度"},
    "f_latency_kpi": {"en": "Latency KPI (p50)", "zh": "时延 KPI (p50)"},
    "f_accuracy": {"en": "Accuracy met?", "zh": "精度是否达标"},
    "f_performance": {"en": "Performance met?", "zh": "性能是否达标"},
    "f_overall": {"en": "Overall", "zh": "总体结论"},
    "f_hardware": {"en": "Hardware", "zh": "硬件"},
    "f_framework": {"en": "Framework", "zh": "框架"},
    "f_batch": {"en": "Batch", "zh": "batch"},
    "f_date": {"en": "Date", "zh": "日期"},
    "f_reason": {"en": "Why this baseline", "zh": "选取原因"},
    # baseline sources
    "src_project_log": {"en": "project training log", "zh": "项目训练日志"},
    "src_gpu_measured": {"en": "GPU measured (Mig_Readme §2.6)", "zh": "GPU 实测 (Mig_Readme §2.6)"},
    "src_cpu_log": {"en": "CPU log", "zh": "CPU 日志"},
    "src_na": {"en": "N/A", "zh": "N/A"},
    # dataset purposes
    "p_short_run": {"en": "short run", "zh": "训练短测"},
    "p_smoke": {"en": "smoke", "zh": "冒烟"},
    "p_golden": {"en": "golden", "zh": "golden 样本"},
    "p_full": {"en": "full accuracy/performance", "zh": "全量精度/性能"},
    "p_training": {"en": "training", "zh": "训练"},
    "p_inference_acceptance": {"en": "inference acceptance", "zh": "推理验收"},
    # Mig_report §6 boxes
    "v_code_migration": {"en": "Code migration done", "zh": "代码迁移完成"},
    "v_npu_load": {"en": "NPU load and single forward", "zh": "NPU 加载与单次前向"},
    "v_inference_smoke": {"en": "Inference smoke (fixed input, shape/dtype right, no NaN/Inf)",
                          "zh": "推理冒烟（固定输入，shape/dtype 正确，无 NaN/Inf）"},
    "v_golden": {"en": "Golden consistency", "zh": "golden 一致性"},
    "v_training_smoke": {"en": "Training smoke (one batch forward+backward, finite loss)",
                         "zh": "训练冒烟（单 batch 前向+反向，loss 有限）"},
    "v_short_run": {"en": "Training short run (loss drop in band, not repeated)",
                    "zh": "训练短测（loss 降幅在区间内，不重复跑）"},
    "v_formal_training": {"en": "Formal training (loss curve follows the baseline)",
                          "zh": "正式训练（loss 曲线与基线一致）"},
    "v_full_accuracy": {"en": "Full accuracy met", "zh": "全量精度达标"},
    "v_performance": {"en": "Performance met", "zh": "性能达标"},
    # gaps
    "not_run": {"en": "not run", "zh": "未运行"},
    "evidence": {"en": "evidence", "zh": "证据"},
    "why": {"en": "why", "zh": "原因"},
    "fill_with": {"en": "fill with", "zh": "补齐命令"},
    # table source labels
    "lbl_baseline": {"en": "baseline:", "zh": "基线："},
    "lbl_npu": {"en": "NPU:", "zh": "NPU："},
    "lbl_max_abs": {"en": "max abs error:", "zh": "最大绝对误差："},
    "lbl_gpu_baseline": {"en": "GPU baseline:", "zh": "GPU 基线："},
    "lbl_target": {"en": "target:", "zh": "目标："},
    # Mig_Readme §2.6 rows
    "sc_gpu_infer": {"en": "GPU inference baseline (default)", "zh": "GPU 推理基线（默认）"},
    "sc_gpu_train": {"en": "GPU training baseline", "zh": "GPU 训练基线"},
    "sc_cpu": {"en": "CPU (optional)", "zh": "CPU（可选）"},
    "sc_cpu_entry": {"en": "same entry with --device cpu", "zh": "同一入口加 --device cpu"},
    "sc_note_infer": {"en": "latency and golden outputs", "zh": "时延与 golden 输出"},
    "sc_note_train": {"en": "same window as §5.3", "zh": "与 §5.3 同一窗口"},
    "sc_note_cpu": {"en": "only when the project asks for it", "zh": "仅在项目要求时"},
    "sc_as_target": {"en": "as target", "zh": "与目标侧相同"},
    "lbl_ratio": {"en": "ratios:", "zh": "比值："},
    # performance gaps
    "na_cpu_not_requested": {"en": "CPU baseline not requested (a CPU baseline is used only when the project asks for it)",
                             "zh": "未要求 CPU 基线（仅在项目要求时对比 CPU）"},
    "na_batch_not_measured": {"en": "batch {bs} not measured", "zh": "batch {bs} 未测量"},
    "na_both_sides": {"en": "needs both sides", "zh": "需要两侧数据"},
    "na_no_kpi": {"en": "no KPI", "zh": "无 KPI"},
    "na_npu_not_measured": {"en": "NPU latency not measured", "zh": "未测量 NPU 时延"},
    "na_no_cpu": {"en": "no CPU baseline", "zh": "无 CPU 基线"},
    "na_no_bottleneck": {"en": "no bottleneck analysis yet (mig.yaml performance.bottleneck, or compare_performance)",
                         "zh": "尚无瓶颈分析（mig.yaml performance.bottleneck 或 compare_performance）"},
    "na_no_repro": {"en": "mig.yaml performance.reproducibility is empty", "zh": "mig.yaml performance.reproducibility 为空"},
    "miss_not_triggered": {"en": "the user has not asked for performance work and mig.yaml has no latency/throughput KPI "
                                 "(set performance.triggered: true with a reason)",
                           "zh": "用户未要求性能测试，且 mig.yaml 中无时延/吞吐 KPI（设置 performance.triggered: true 并写明原因）"},
    "miss_target_perf": {"en": "no NPU timing result (artefacts.target_perf)", "zh": "无 NPU 计时结果（artefacts.target_perf）"},
    "miss_baseline_perf": {"en": "no baseline timing result (artefacts.baseline_perf), collected via Mig_Readme §2.6",
                           "zh": "无基线计时结果（artefacts.baseline_perf），按 Mig_Readme §2.6 采集"},
    "b_quoted": {"en": 'mig.yaml artefacts.baseline_log names a complete training log; it is quoted, not rerun', "zh": 'mig.yaml 的 artefacts.baseline_log 指向完整训练日志：直接引用，不重跑'},
    "b_gpu": {"en": 'no project training log; the user collects the GPU baseline with Mig_Readme §2.6', "zh": '项目内无训练日志；由用户按 Mig_Readme §2.6 采集 GPU 基线'},
    "b_na": {"en": 'no project training log and no GPU available: no comparison is made rather than a misleading one', "zh": '项目内无训练日志且无可用 GPU：暂停对比，避免误导'},
    "na_no_baseline_log": {"en": 'no baseline log', "zh": '无基线日志'},
    "na_log_path": {"en": 'log path not given', "zh": '未给出日志路径'},
    "na_no_baseline_entry": {"en": 'entry.baseline_inference / entry.baseline_train not set in mig.yaml', "zh": 'mig.yaml 未设置 entry.baseline_inference / entry.baseline_train'},
    "na_no_baseline_cmd": {"en": 'no baseline command: set entry.baseline_inference / entry.baseline_train in mig.yaml', "zh": '无基线命令：在 mig.yaml 设置 entry.baseline_inference / entry.baseline_train'},
    "na_not_stated": {"en": 'not stated', "zh": '未说明'},
    "na_no_local_path": {"en": 'no local path', "zh": '无本地路径'},
    "na_no_latency_kpi": {"en": 'no latency KPI in mig.yaml thresholds.latency_p50_ms', "zh": 'mig.yaml thresholds.latency_p50_ms 中无时延 KPI'},
    "na_no_target_log": {"en": 'artefacts.target_log not configured', "zh": '未配置 artefacts.target_log'},
    "na_both_logs": {"en": 'needs both logs parsed', "zh": '需要两份日志均已解析'},
    "na_drop": {"en": 'relative_drop not computable', "zh": '无法计算 relative_drop'},
    "na_golden_unreadable": {"en": 'golden outputs not readable', "zh": 'golden 输出不可读'},
    "na_target_outputs": {"en": 'target outputs missing', "zh": '缺少目标侧输出'},
    "na_not_computed": {"en": 'not computed for this output', "zh": '该输出未计算'},
    "v_none_found": {"en": 'none found', "zh": '未发现'},
    "na_no_diagnosis": {"en": 'no diagnosis in the result', "zh": '结果中无诊断'},
    "na_not_found": {"en": 'not found', "zh": '未找到'},
    "v_attested": {"en": 'attested', "zh": '已声明'},
    "na_no_code_evidence": {"en": 'no evidence: set attested.code_migration with a ref', "zh": '无证据：在 attested.code_migration 中给出 ref'},
    "v_target_dump": {"en": 'target dump holds a complete forward', "zh": '目标侧 dump 包含完整前向'},
    "na_no_target_dump": {"en": 'no target dump and no attested.npu_load', "zh": '无目标侧 dump，也无 attested.npu_load'},
    "v_golden_nan_free": {"en": 'golden outputs compared, no NaN/Inf on the NPU side', "zh": 'golden 输出已对比，NPU 侧无 NaN/Inf'},
    "na_needs_golden": {"en": 'needs compare_tensors on golden outputs', "zh": '需要对 golden 输出运行 compare_tensors'},
    "v_first_loss": {"en": 'first loss of the target log is finite', "zh": '目标日志首个 loss 为有限值'},
    "na_target_not_parsed": {"en": 'target log not parsed', "zh": '目标日志未解析'},
    "na_no_acc_verdict": {"en": 'no accuracy verdict yet: golden and dump comparisons missing', "zh": '尚无精度结论：缺少 golden 与 dump 对比'},
    "na_no_perf_verdict": {"en": 'no performance verdict yet: no KPI result', "zh": '尚无性能结论：无 KPI 结果'},
    "na_nothing": {"en": 'nothing measured yet', "zh": '尚未测量'},
    "na_no_full_acc": {"en": "no full-accuracy evaluation result; attest it with attested.full_accuracy and the evaluation log",
                       "zh": "无全量精度评测结果；请在 attested.full_accuracy 中给出评测日志"},
    "na_perf_no_result": {"en": "no performance verdict: no KPI and no compare_performance result",
                          "zh": "无性能结论：既无 KPI 也无 compare_performance 结果"},
    "na_perf_not_triggered": {"en": "no performance verdict: performance work not triggered",
                              "zh": "无性能结论：性能测试未触发"},
    "b_not_run": {"en": "select_baseline not run: {why}", "zh": "未运行 select_baseline：{why}"},
    "r_tool_missing": {"en": "the {tool} tool is not available in this installation", "zh": "当前安装中没有 {tool} 工具"},
    "r_not_configured": {"en": "not configured: {fields} in mig.yaml", "zh": "mig.yaml 中未配置：{fields}"},
    "r_path_missing": {"en": "artefacts.{key} points to {value}, which does not exist", "zh": "artefacts.{key} 指向的 {value} 不存在"},
    "r_tool_refused": {"en": "{tool} refused its input: {message}", "zh": "{tool} 拒绝了输入：{message}"},
    "r_tool_failed": {"en": "{tool} failed: {message}", "zh": "{tool} 运行失败：{message}"},
    "r_short_run": {"en": "short-run relative drop", "zh": "短测相对降幅"},
    "r_golden": {"en": "golden outputs within tolerance", "zh": "golden 输出在容差内"},
    "r_dumps": {"en": "layer dumps", "zh": "逐层 dump"},
    "r_inference_only": {"en": "not applicable: inference-only project (mig.yaml model.mode: inference)",
                         "zh": "不适用：仅推理项目（mig.yaml model.mode: inference）"},
    "warmup_reason": {"en": "caches, compilation and initialisation settle first", "zh": "先让缓存、编译与初始化稳定"},
    "na_not_recorded": {"en": "not recorded in the timing result", "zh": "计时结果中未记录"},
    # statuses for Summary
    "st_adapted": {"en": "adapted", "zh": "已适配"},
    "st_conditional": {"en": "conditional", "zh": "有条件适配"},
    "st_failed": {"en": "failed", "zh": "失败"},
    "st_in_progress": {"en": "in progress", "zh": "进行中"},
}


def translate(key: str, lang: str) -> str:
    """The string for ``key``; an unknown key is a programming error, so it fails loudly."""
    if lang not in LANGS:
        raise ValueError(f"unsupported language {lang!r}")
    return STRINGS[key][lang]


def labels(lang: str) -> dict[str, str]:
    return {k: v[lang] for k, v in STRINGS.items()}
