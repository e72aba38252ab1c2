"""Chinese forms of the tools' English sentences: (English pattern, Chinese template) pairs.

Why patterns and not message keys: the tools' English text is their output contract, read by agents
and stored in saved results; the reports must translate exactly that text, including results saved
by an earlier version. Each pattern captures the computed parts by name (numbers, tensor and module
names, paths, commands) and the template puts them back unchanged, so both languages print the same
values. A group whose name starts with ``t_`` is itself tool text and is translated again.

Rules apply longest pattern first, each to the whole text: whole sentences before the clauses and
phrases they are built from, so a clause rule never breaks a sentence rule. A sentence no rule knows
keeps its English words; the tests render the demo and the diagnosis fixtures in Chinese and fail on
any English left, so a new tool sentence shows up there.
"""

from __future__ import annotations

#: Text inside one pair of parentheses that may itself hold two levels of parentheses.
_B = r"(?:[^()]|\((?:[^()]|\([^()]*\))*\))*"

RULES: list[tuple[str, str]] = [
    # an argument a call did not pass, named by the API's default (inside the sentences on arguments below)
    (r"the default (?P<a>'[^']*'|[^\s,;()]+) \(not passed\) on the golden, (?P<b>'[^']*'|[^\s,;()]+) on the target",
     "golden 侧为默认值 {a}（未传入），目标侧为 {b}"),
    (r"(?P<a>'[^']*'|[^\s,;()]+) on the golden, the default (?P<b>'[^']*'|[^\s,;()]+) \(not passed\) on the target",
     "golden 侧为 {a}，目标侧为默认值 {b}（未传入）"),
    (r"the default (?P<d>'[^']*'|[^\s,;()]+) \(not passed\)", "默认值 {d}（未传入）"),
    # ------------------------------------------------------------------ select_baseline
    (r"complete project log on (?P<device>\w+) with '(?P<metric>[^']+)' \((?P<points>\d+) points, steps "
     r"(?P<a>-?\d+)-(?P<b>-?\d+); (?P<t_done>[^()]*?)\): quoted as the baseline, no rerun",
     "完整的项目日志（{device}），含 '{metric}'（{points} 个点，第 {a}–{b} 步；{t_done}）：直接引用为基线，不重跑"),
    (r"complete project log \(the log does not state its device\) with '(?P<metric>[^']+)' \((?P<points>\d+) points, "
     r"steps (?P<a>-?\d+)-(?P<b>-?\d+); (?P<t_done>[^()]*?)\): quoted as the baseline, no rerun",
     "完整的项目日志（日志未写明设备），含 '{metric}'（{points} 个点，第 {a}–{b} 步；{t_done}）：直接引用为基线，不重跑"),
    (r"reached the announced (?P<n>\d+) iterations", "已达到声明的 {n} 次迭代"),
    (r"reached the announced (?P<n>\d+) steps", "已达到声明的 {n} 步"),
    (r"reached the announced (?P<n>\d+) epochs", "已达到声明的 {n} 个 epoch"),
    (r"stopped at (?P<x>\d+) of the announced (?P<n>\d+) (?:iterations|steps)", "停在声明的 {n} 步中的第 {x} 步"),
    (r"stopped at (?P<x>\d+) of the announced (?P<n>\d+) epochs", "停在声明的 {n} 个 epoch 中的第 {x} 个"),
    (r"has evaluation/summary records", "含评估/汇总记录"),
    (r"no announced end and no evaluation/summary record: completeness cannot be shown",
     "未声明终点，也无评估/汇总记录：无法证明日志完整"),
    (r"CPU log used because the project asks for a CPU baseline", "使用 CPU 日志：项目要求 CPU 基线"),
    (r"CPU log used because no GPU is available and the project log itself is a CPU run",
     "使用 CPU 日志：无可用 GPU，且项目日志本身就是 CPU 运行"),
    (r"(?P<t_why>.+?), and no GPU is available: baseline N/A — the comparison is paused rather than made against a "
     r"misleading reference", "{t_why}，且无可用 GPU：基线 N/A — 暂停对比，而不是与误导性的参照比较"),
    (r"(?P<t_why>.+?); default baseline is a GPU measurement, but no entry script was found to build the "
     r"Mig_Readme §2.6 commands \(pass (?P<opt>[^)]+)\)",
     "{t_why}；默认基线为 GPU 实测，但未找到可据以生成 Mig_Readme §2.6 命令的入口脚本（请传入 {opt}）"),
    (r"(?P<t_why>.+?): default baseline is a GPU measurement — the user runs the Mig_Readme §2.6 commands built "
     r"from (?P<entry>\S+)", "{t_why}：默认基线为 GPU 实测 — 由用户运行根据 {entry} 生成的 Mig_Readme §2.6 命令"),
    (r"; a CPU log exists \((?P<path>[^)]+)\) and can be added as the optional CPU comparison",
     "；存在 CPU 日志（{path}），可作为可选的 CPU 对比"),
    (r"no training log found in the project", "项目中未找到训练日志"),
    (r"no project log qualifies \((?P<t_why>.*)\)$", "没有符合条件的项目日志（{t_why}）"),
    (r"no '(?P<metric>[^']+)' values", "没有 '{metric}' 数值"),
    (r"NPU run: that is the migrated side, not a baseline", "NPU 运行：这是迁移侧，不能作为基线"),
    (r"never mentions dataset '(?P<ds>[^']+)'", "从未提及数据集 '{ds}'"),
    (r"batch size differs from (?P<bs>\d+)", "batch 大小与 {bs} 不同"),
    (r"GPU inference baseline \(default\)", "GPU 推理基线（默认）"),
    (r"GPU training baseline", "GPU 训练基线"),
    (r"CPU \(optional\)", "CPU（可选）"),
    (r"(?P<doc>(?:Mig_Readme )?)§3\.1 golden samples / inference acceptance", "{doc}§3.1 golden 样本 / 推理验收"),
    (r"(?P<doc>(?:Mig_Readme )?)§3\.1 short run / training", "{doc}§3.1 训练短测 / 训练"),
    (r"(?P<doc>(?:Mig_Readme )?)§3\.1 golden samples", "{doc}§3.1 golden 样本"),
    (r"Same fixed inputs and preprocessing as the NPU run\.", "与 NPU 运行使用相同的固定输入和预处理。"),
    (r"Same configuration as the NPU run \(compare-run-configs checks it\)\.",
     "与 NPU 运行配置相同（compare-run-configs 负责核对）。"),
    (r"Only when the project asks for CPU; not the default baseline\.", "仅当项目要求 CPU 时使用；不是默认基线。"),

    # ------------------------------------------------------------------ check_environment
    (r"^(?P<n>\d+) blocking problem\(s\): (?P<names>.+); see each check's fix$", "{n} 个阻断问题：{names}；修复方法见各检查项"),
    (r"^could not establish (?P<names>.+)$", "无法确定：{names}"),
    (r"^tests can run directly \((?P<what>.*)\)$", "可直接运行测试（{what}）"),
    (r"npu-smi output could not be read: (?P<why>.+)", "无法读取 npu-smi 输出：{why}"),
    (r"Pass the unedited output of `npu-smi info` \(the full table, not a screenshot transcription\)\.",
     "请提供未经编辑的 `npu-smi info` 输出（完整表格，而非截图转录）。"),
    (r"Pass the unedited output of `nvidia-smi`\.", "请提供未经编辑的 `nvidia-smi` 输出。"),
    (r"(?P<n>\d+) chip\(s\): ", "{n} 个芯片："),
    (r"npu-smi lists the devices \(some rows unreadable: (?P<why>.+)\)", "npu-smi 列出了设备（部分行无法读取：{why}）"),
    (r"npu-smi lists the devices", "npu-smi 列出了设备"),
    (r"\(unset: all devices\)", "（未设置：全部设备）"),
    (r"a run would see device\(s\) (?P<ids>\[[^\]]*\])", "运行时可见设备 {ids}"),
    (r"ASCEND_RT_VISIBLE_DEVICES lists (?P<bad>\[[^\]]*\]), but only (?P<n>\d+) devices exist",
     "ASCEND_RT_VISIBLE_DEVICES 列出了 {bad}，但只有 {n} 个设备"),
    (r"is not a comma-separated list of device ids", "不是以逗号分隔的设备编号列表"),
    (r"^all OK$", "全部正常"),
    (r"a visible device does not report Health OK", "有可见设备的 Health 不是 OK"),
    (r"every visible device reports Health OK", "所有可见设备的 Health 均为 OK"),
    (r"^idle$", "空闲"),
    (r"no process or load on the visible devices", "可见设备上没有进程或负载"),
    (r"AI Core (?P<pct>[\d.]+) % busy", "AI Core 占用 {pct} %"),
    (r"device memory per chip \(HBM where the chip has it\)", "每个芯片的设备内存（有 HBM 的芯片为 HBM）"),
    (r"torch is installed", "torch 已安装"),
    (r"torch is not installed in this environment", "当前环境未安装 torch"),
    (r"torch_npu is installed", "torch_npu 已安装"),
    (r"torch_npu \(the Ascend adapter for PyTorch\) is not installed", "torch_npu（PyTorch 的昇腾适配包）未安装"),
    (r"this torch is a CPU-only build; it cannot use the GPU", "该 torch 为仅 CPU 版本，无法使用 GPU"),
    (r"MindSpore is installed", "MindSpore 已安装"),
    (r"MindSpore not installed \(only needed for MindSpore projects\)", "未安装 MindSpore（仅 MindSpore 项目需要）"),
    (r"(?P<path>\S+) not found: the NPU driver is not installed", "未找到 {path}：NPU 驱动未安装"),
    (r"(?P<path>\S+version\.info) not found", "未找到 {path}"),
    (r"no ascend_toolkit_install\.info or version\.cfg under (?P<where>.+)$",
     "在 {where} 下未找到 ascend_toolkit_install.info 或 version.cfg"),
    (r"Ascend firmware installed", "昇腾固件已安装"),
    (r"firmware version not found", "未找到固件版本"),
    (r"CANN toolkit installed", "CANN toolkit 已安装"),
    (r"CANN toolkit not found", "未找到 CANN toolkit"),
    (r"no CANN toolkit to source", "没有可 source 的 CANN toolkit"),
    (r"CANN environment is set in this shell", "当前 shell 已设置 CANN 环境"),
    (r"CANN set_env\.sh was not sourced: missing (?P<what>.+)", "未 source CANN set_env.sh：缺少 {what}"),
    (r"\(none set\)", "（未设置）"),
    (r"HCCL settings for multi-device runs \(defaults apply when none are set\)", "多卡运行的 HCCL 设置（未设置时使用默认值）"),
    (r"nvidia-smi output could not be read: (?P<why>.+)", "无法读取 nvidia-smi 输出：{why}"),
    (r"nvidia-smi lists the GPUs", "nvidia-smi 列出了 GPU"),
    (r"no compute process on the GPUs", "GPU 上没有计算进程"),
    (r"compute processes are running on some GPUs", "部分 GPU 上有计算进程在运行"),
    (r"Wait for the GPU processes to finish", "等待 GPU 上的进程结束"),
    (r"the device ran a matmul in a child process", "设备在子进程中完成了一次矩阵乘"),
    (r"device probe failed: (?P<why>.+)", "设备探测失败：{why}"),
    (r"device not available", "设备不可用"),
    (r"not run: recorded inputs or --root describe another machine", "未运行：记录的输入或 --root 描述的是另一台机器"),
    (r"not run: disabled by (?P<opt>.+)", "未运行：已由 {opt} 关闭"),
    (r"\(after the driver\)", "（在驱动之后安装）"),
    (r"^installed packages of this Python$", "当前 Python 已安装的包"),
    (r"^environment variables$", "环境变量"),
    (r"^environment$", "环境"),
    (r"^subprocess probe$", "子进程探测"),
    (r"Record `npu-smi info > npu-smi\.txt` on the target machine and pass (?P<opt>.+)\.",
     "在目标机上记录 `npu-smi info > npu-smi.txt` 并传入 {opt}。"),
    (r"not found on PATH", "不在 PATH 中"),
    (r"Install the Ascend driver \((?P<cmd>[^)]+)\), reboot, then run `npu-smi info`\.",
     "安装昇腾驱动（{cmd}），重启，然后运行 `npu-smi info`。"),
    (r"source the CANN set_env\.sh, check `npu-smi info`, then (?P<cmd>`.+`)$",
     "source CANN 的 set_env.sh，检查 `npu-smi info`，然后运行 {cmd}"),
    (r"No module named (?P<m>'[^']+')", "没有名为 {m} 的模块"),
    (r"Inspect with (?P<cmd>`[^`]+`); clear the alarm or pick healthy devices(?P<rest>.*)$", "用 {cmd} 查看；清除告警或选用健康的设备{rest}"),
    (r"(?P<n>\d+) GPU\(s\): ", "{n} 个 GPU："),
    (r"(?P<n>\d+) of (?P<m>\d+) visible devices are busy; timings on them would be disturbed",
     "{m} 个可见设备中有 {n} 个繁忙；在其上计时会受干扰"),
    (r"every visible device is busy; tests would compete for memory and compute", "所有可见设备都繁忙；测试会争用内存与算力"),
    (r"Wait for the listed processes to finish \(or stop them\), or select idle devices with ASCEND_RT_VISIBLE_DEVICES",
     "等待所列进程结束（或停止它们），或用 ASCEND_RT_VISIBLE_DEVICES 选择空闲设备"),
    (r" with ASCEND_RT_VISIBLE_DEVICES$", "（用 ASCEND_RT_VISIBLE_DEVICES 指定）"),
    (r"device (?P<i>\d+) \(NPU (?P<n>\d+) chip (?P<c>\d+)\): ", "设备 {i}（NPU {n} 芯片 {c}）："),
    (r"device (?P<i>\d+): ", "设备 {i}："),
    (r"process (?P<pid>\d+) (?:(?P<name>\S+) )?holds (?P<mb>\d+) MB", "进程 {pid} {name} 占用 {mb} MB"),
    (r"(?P<u>\d+) / (?P<t>\d+) MB device memory in use", "已用设备内存 {u} / {t} MB"),
    (r"torch_npu is built for this torch release", "torch_npu 与该 torch 版本匹配"),
    (r"torch_npu X\.Y\.Z only works with torch X\.Y\.Z; these differ, so `import torch_npu` fails or misbehaves",
     "torch_npu X.Y.Z 只能配合 torch X.Y.Z 使用；两者版本不同，`import torch_npu` 会失败或行为异常"),
    (r"a version string could not be read", "无法读取版本字符串"),
    (r"\(or install the torch release your torch_npu was built for\)", "（或安装与该 torch_npu 匹配的 torch 版本）"),
    (r"driver (?P<d>\S+) but npu-smi reports (?P<s>\S+): a reboot may be pending after an upgrade",
     "驱动为 {d}，但 npu-smi 报告 {s}：升级后可能尚未重启"),
    (r"Ascend driver installed", "昇腾驱动已安装"),
    (r"(?P<what>.+): the NPU driver is not installed$", "{what}：NPU 驱动未安装"),

    # ------------------------------------------------------------------ compare_tensors
    (r"(?P<pct>[\d.]+%) of elements within rtol=(?P<r>\S+), atol=(?P<a>\S+) \(needs (?P<need>[\d.]+%)\); max abs err "
     r"(?P<mae>\S+)", "{pct} 的元素在 rtol={r}、atol={a} 内（要求 {need}）；最大绝对误差 {mae}"),
    (r"all checked: (?P<pct>[\d.]+%) within rtol=(?P<r>\S+), atol=(?P<a>[^;\s]+)", "全部检查：{pct} 在 rtol={r}、atol={a} 内"),
    (r"; dtype target (?P<t>\S+) vs golden (?P<g>\S+)", "；dtype 目标侧 {t}，golden 侧 {g}"),
    (r"target has (?P<tn>\d+) NaN / (?P<ti>\d+) Inf, golden (?P<gn>\d+) / (?P<gi>\d+)",
     "目标侧有 {tn} 个 NaN / {ti} 个 Inf，golden 侧 {gn} / {gi}"),

    # ------------------------------------------------------------------ compare_dumps: summary and rows
    (r"(?P<n>\d+) tensor pairs compared \((?P<t_by>(?:[^()]|\([^()]*\))*)\): (?P<p>\d+) pass, (?P<w>\d+) warning, (?P<e>\d+) error, "
     r"(?P<s>\d+) skipped; unmatched (?P<ug>\d+) golden / (?P<ut>\d+) target",
     "共对比 {n} 对张量（{t_by}）：{p} 通过，{w} 警告，{e} 错误，{s} 跳过；未配对 golden {ug} 个 / 目标 {ut} 个"),
    (r"(?P<n>\d+) by tensor", "{n} 对按张量"),
    (r"(?P<n>\d+) by statistics", "{n} 对按统计量"),
    (r"(?P<n>\d+) by md5 \(\+statistics\)", "{n} 对按 md5（+统计量）"),
    (r"; (?P<n>\d+) non-tensor arguments compared, (?P<f>\d+) flagged", "；对比了 {n} 个非张量参数，{f} 个被标记"),
    # a row whose message is msprobe's own opens with its status ("error: The dtype of NPU and Bench are ...")
    (r"; worst: (?P<name>\S+) \((?P<t_msg>(?:error|warning): The(?:re)? " + _B + r")\)(?=$|; |；)",
     "；最差：{name}（{t_msg}）"),
    (r"; worst: (?P<name>\S+) \((?P<t_status>error|warning): (?P<t_msg>" + _B + r")\)(?=$|; |；)",
     "；最差：{name}（{t_status}：{t_msg}）"),
    (r" \(first: (?P<name>\S+): target (?P<t>\S+) vs golden (?P<g>\S+)\)(?=$|; |；)", "（首个：{name}：目标 {t}，golden {g}）"),
    (r"; first divergence: (?P<fd>\S+)(?=$|; |；)", "；首个偏离点：{fd}"),
    # why a run with rows msprobe flags passes
    (r"; (?P<n>\d+) rows miss msprobe's bar \(cosine 0\.99, 99% of elements within tolerance\) at the target's lower "
     r"precision \(golden (?P<g>\S+), target (?P<t>\S+), e\.g\. (?P<name>\S+)\): every tensor is within that precision, "
     r"so the run passes",
     "；{n} 行在目标侧较低的精度下未达到 msprobe 的标准（余弦 0.99、99% 的元素在容差内）（golden {g}，目标 {t}，例如 {name}）："
     "每个张量都在该精度范围内，因此本次运行通过"),
    (r"; (?P<n>\d+) rows are errors under msprobe's rules only because the float type differs \(golden (?P<g>\S+), "
     r"target (?P<t>\S+), e\.g\. (?P<name>\S+)\): every tensor is within the target's precision, so the run passes "
     r"\(the CSV keeps msprobe's Result\)",
     "；{n} 行在 msprobe 的规则下判为错误，仅因浮点类型不同（golden {g}，目标 {t}，例如 {name}）：每个张量都在目标侧的精度范围内，"
     "因此本次运行通过（CSV 保留 msprobe 的 Result）"),
    (r"; (?P<n>\d+) parameter gradients \(e\.g\. (?P<name>\S+)\) fail msprobe's NormRelativeErr rule but cancel to "
     r"rounding level \(their terms sum to almost zero, so rounding alone moves them by far more than their size\): "
     r"within what the incoming gradients' rounding explains, so the run passes \(the CSV keeps msprobe's Result\)",
     "；{n} 个参数梯度（例如 {name}）未通过 msprobe 的 NormRelativeErr 规则，但它们相互抵消到舍入量级（各项之和几乎为零，"
     "仅舍入就能使其变化远超其大小）：在传入梯度的舍入所能解释的范围内，因此本次运行通过（CSV 保留 msprobe 的 Result）"),
    (r"; (?P<n>\d+) non-tensor arguments? \(e\.g\. (?P<name>\S+): target (?P<t>\S+), golden (?P<g>\S+)\) (?:are|is) "
     r"each side's own float type's limit \(torch\.finfo\(dtype\)\.min or max, a mask fill\): the same setting, flagged "
     r"by msprobe's scalar rule only \(the CSV keeps msprobe's Result\)",
     "；{n} 个非张量参数（例如 {name}：目标 {t}，golden {g}）分别是两侧各自浮点类型的极值（torch.finfo(dtype).min 或 max，"
     "掩码填充值）：是同一设置，仅被 msprobe 的标量规则标记（CSV 保留 msprobe 的 Result）"),
    (r"^error$", "错误"), (r"^warning$", "警告"),
    (r"first divergence; only (?P<pct>[\d.]+%) of elements within tolerance \(< (?P<need>\d+%)\)",
     "首个偏离点；仅 {pct} 的元素在容差内（< {need}）"),
    (r"only (?P<pct>[\d.]+%) of elements within tolerance \(< (?P<need>\d+%)\)", "仅 {pct} 的元素在容差内（< {need}）"),
    (r"beyond precision \((?P<x>\S+)x the allowed error\)", "超出精度（允许误差的 {x} 倍）"),
    (r"another API's layout of the same argument: its call gives the golden's output",
     "另一个 API 对同一参数的布局：该调用给出与 golden 相同的输出"),
    (r"^first divergence$", "首个偏离点"),
    (r"^first divergence; ", "首个偏离点；"),
    (r"^this rank's first divergence, received through a collective$", "本 rank 的首个偏离点，经集合通信传入"),
    (r"^this rank's first divergence, received through a collective; ", "本 rank 的首个偏离点，经集合通信传入；"),
    (r"^this rank's first divergence$", "本 rank 的首个偏离点"),
    (r"^this rank's first divergence; ", "本 rank 的首个偏离点；"),
    (r"cosine (?P<c>\S+) < (?P<lim>\S+)", "余弦 {c} < {lim}"),

    # ------------------------------------------------------------------ diagnosis: first divergence reasons
    (r"relative (?:L2 )?error (?P<err>\S+) = (?P<x>\S+)x the allowed error \((?P<bench>\S+)x the bench's error\) while "
     r"every input of (?P<node>\S+) is within precision",
     "相对 L2 误差 {err} = 允许误差的 {x} 倍（bench 误差的 {bench} 倍），而 {node} 的每个输入都在精度范围内"),
    (r"relative (?:L2 )?error (?P<err>\S+) = (?P<x>\S+)x the allowed error \(what its inputs' error and one rounding "
     r"explain\) while every input of (?P<node>\S+) is within precision",
     "相对 L2 误差 {err} = 允许误差的 {x} 倍（以其输入误差加一次舍入所能解释的为准），而 {node} 的每个输入都在精度范围内"),
    (r"statistics differ by (?P<err>\S+) = (?P<x>\S+)x the allowed error \((?P<bench>\S+)x the bench's error\) while "
     r"every input of (?P<node>\S+) is within precision",
     "统计量相差 {err} = 允许误差的 {x} 倍（bench 误差的 {bench} 倍），而 {node} 的每个输入都在精度范围内"),
    (r"statistics differ by (?P<err>\S+) = (?P<x>\S+)x the allowed error \(what its inputs' error and one rounding "
     r"explain\) while every input of (?P<node>\S+) is within precision",
     "统计量相差 {err} = 允许误差的 {x} 倍（以其输入误差加一次舍入所能解释的为准），而 {node} 的每个输入都在精度范围内"),
    (r" \((?P<n>\d+) of them fail msprobe's bar of cosine 0\.99 / MaxAbsErr 1e-3; why each was discounted follows\)",
     "（其中 {n} 个未达到 msprobe 的标准：余弦 0.99 / MaxAbsErr 1e-3；各自被排除的原因见下文）"),
    (r" \((?P<n>\d+) of them fail msprobe's bar: see the diagnosis' discounted_rows\)",
     "（其中 {n} 个未达到 msprobe 的标准，见诊断中被排除的行）"),
    (r" within precision", "（在精度范围内）"),
    (r"(?P<node>\S+) is the first call whose inputs are finite and whose output holds Inf/NaN on the target "
     r"\((?P<i>\d+) Inf, (?P<n>\d+) NaN where the golden has none\): (?P<t_what>an overflow|an invalid operation \(NaN from finite values\), not a value past the dtype's range)",
     "{node} 是第一个输入有限而目标侧输出含 Inf/NaN 的调用（{i} 个 Inf，{n} 个 NaN，golden 侧没有）：{t_what}"),
    (r"(?P<node>\S+) is the first call whose inputs are finite and whose output holds Inf/NaN on the target "
     r"\(recorded (?P<stats>[^()]+) where the golden's are finite\): (?P<t_what>an overflow|an invalid operation \(NaN from finite values\), not a value past the dtype's range)",
     "{node} 是第一个输入有限而目标侧输出含 Inf/NaN 的调用（目标侧记录的 {stats}，golden 侧均为有限值）：{t_what}"),
    (r"(?P<node>\S+) is the first call whose inputs are finite and whose output holds Inf/NaN on the target "
     r"\(Inf/NaN in its recorded statistics where the golden's are finite\): (?P<t_what>an overflow|an invalid operation \(NaN from finite values\), not a value past the dtype's range)",
     "{node} 是第一个输入有限而目标侧输出含 Inf/NaN 的调用（目标侧记录的统计量含 Inf/NaN，golden 侧均为有限值）：{t_what}"),
    (r"(?P<node>\S+) is the first call whose inputs are finite and whose output holds Inf/NaN on the golden \(recorded "
     r"(?P<stats>[^()]+)\) while the target's is finite: the golden run overflows here, not the target",
     "{node} 是第一个输入有限而 golden 侧输出含 Inf/NaN 的调用（golden 侧记录的 {stats}），而目标侧有限：溢出的是 golden 运行，"
     "而非目标侧"),
    (r"(?P<node>\S+) is the first call whose inputs are finite and whose output holds Inf/NaN on the golden \((?P<i>\d+) "
     r"Inf, (?P<n>\d+) NaN\) while the target's is finite: the golden run overflows here, not the target",
     "{node} 是第一个输入有限而 golden 侧输出含 Inf/NaN 的调用（{i} 个 Inf，{n} 个 NaN），而目标侧有限：溢出的是 golden 运行，"
     "而非目标侧"),
    (r"Golden overflow: (?P<node>\S+) turns finite inputs into Inf/NaN on the golden side while the target stays finite, "
     r"in the forward pass; a tensor that carries the golden's Inf/NaN has nothing to be judged against, so the "
     r"comparison cannot vouch for anything from this call on\.",
     "golden 侧溢出：前向中 {node} 在 golden 侧把有限输入变为 Inf/NaN，而目标侧保持有限；携带 golden 侧 Inf/NaN 的张量无从对比，"
     "因此从该调用起对比结果无法为任何内容作保。"),
    (r"Golden overflow: (?P<node>\S+) turns finite inputs into Inf/NaN on the golden side while the target stays finite, "
     r"in the backward pass; a tensor that carries the golden's Inf/NaN has nothing to be judged against, so the "
     r"comparison cannot vouch for anything from this call on\.",
     "golden 侧溢出：反向中 {node} 在 golden 侧把有限输入变为 Inf/NaN，而目标侧保持有限；携带 golden 侧 Inf/NaN 的张量无从对比，"
     "因此从该调用起对比结果无法为任何内容作保。"),
    (r"The baseline \(golden\) run overflows at (?P<op>\S+) while the target stays finite: rerun the golden with the "
     r"precision or overflow protection the target uses \(FP32 for this call, a loss scale\) and compare again\.",
     "基线（golden）运行在 {op} 处溢出而目标侧保持有限：以目标侧所用的精度或防溢出措施（该调用用 FP32、损失缩放）重新运行 golden，"
     "再对比一次。"),
    (r"Run msprobe's overflow check \(task overflow_check\) on the golden run to confirm where it overflows\.",
     "在 golden 运行上运行 msprobe 的溢出检测（task overflow_check），确认其溢出位置。"),
    (r"the network's input (?P<name>\S+) already differs \((?P<t_err>" + _B + r")\): the two runs were not fed the same data",
     "网络输入 {name} 已经不同（{t_err}）：两次运行的输入数据不同"),
    (r"the first compared tensor already differs: the two runs were not fed the same data",
     "第一个对比的张量就已不同：两次运行的输入数据不同"),
    (r"argument (?P<arg>\S+) of (?P<node>\S+) is (?P<tv>.+?) on the target but (?P<gv>.+?) on the golden; its output "
     r"(?P<out>\S+) keeps the golden's Max/Min/Mean/Norm \(values moved to other places keep them\), and "
     r"(?P<later>\S+), the first later output that mixes positions, differs \((?P<t_err>" + _B + r")\)",
     "{node} 的参数 {arg} 在目标侧为 {tv}，在 golden 侧为 {gv}；其输出 {out} 的 Max/Min/Mean/Norm 与 golden 相同"
     "（数值只是换了位置，统计量不变），而之后第一个混合各位置数值的输出 {later} 不同（{t_err}）"),
    (r"argument (?P<arg>\S+) of (?P<node>\S+) is (?P<tv>.+?) on the target but (?P<gv>.+?) on the golden; its output "
     r"(?P<out>\S+) stays within precision \((?P<x>\S+)x the allowed error\), as does every tensor of the forward "
     r"pass, but the gradient its backward sends on \((?P<back>\S+)\) is (?P<bx>\S+)x the allowed error while the gradients it received "
     r"agree: the two runs do not compute the same thing",
     "{node} 的参数 {arg} 在目标侧为 {tv}，在 golden 侧为 {gv}；其输出 {out} 在精度范围内（允许误差的 {x} 倍），"
     "前向的每个张量也都在精度范围内，但它的反向传出的梯度 {back} 达到允许误差的 {bx} 倍，而它收到的梯度一致：两侧计算的不是同一件事"),
    (r"argument (?P<arg>\S+) of (?P<node>\S+) is (?P<tv>.+?) on the target but (?P<gv>.+?) on the golden; its output "
     r"(?P<out>\S+) stays within precision \((?P<x>\S+)x the allowed error\), as does every tensor of the pass, so the "
     r"numbers here hide the change, but the two runs do not compute the same thing",
     "{node} 的参数 {arg} 在目标侧为 {tv}，在 golden 侧为 {gv}；其输出 {out} 在精度范围内（允许误差的 {x} 倍），"
     "该方向的每个张量也都在精度范围内，数值掩盖了这一改变，但两侧计算的不是同一件事"),
    (r"argument (?P<arg>\S+) of (?P<node>\S+) is (?P<tv>.+?) on the target but (?P<gv>.+?) on the golden; the dump "
     r"records none of its outputs \(inputs only\), and every tensor stays within precision in the forward pass, but "
     r"the gradient its backward sends on \((?P<back>\S+)\) is (?P<bx>\S+)x the allowed error while the gradients it "
     r"received agree: the two runs do not compute the same thing",
     "{node} 的参数 {arg} 在目标侧为 {tv}，在 golden 侧为 {gv}；dump 没有记录它的任何输出（只记录输入），前向的每个张量都在精度"
     "范围内，但它的反向传出的梯度 {back} 达到允许误差的 {bx} 倍，而它收到的梯度一致：两侧计算的不是同一件事"),
    (r"argument (?P<arg>\S+) of (?P<node>\S+) is (?P<tv>.+?) on the target but (?P<gv>.+?) on the golden; the dump "
     r"records none of its outputs \(inputs only\), and every tensor stays within precision in the pass, so the "
     r"numbers here hide the change, but the two runs do not compute the same thing",
     "{node} 的参数 {arg} 在目标侧为 {tv}，在 golden 侧为 {gv}；dump 没有记录它的任何输出（只记录输入），该方向的每个张量都在"
     "精度范围内，数值掩盖了这一改变，但两侧计算的不是同一件事"),
    (r"argument (?P<arg>\S+) of (?P<node>\S+) is (?P<tv>.+?) on the target but (?P<gv>.+?) on the golden; its tensor "
     r"inputs agree and its output (?P<out>\S+) differs \((?P<t_err>" + _B + r")\)",
     "{node} 的参数 {arg} 在目标侧为 {tv}，在 golden 侧为 {gv}；其张量输入一致，而输出 {out} 不同（{t_err}）"),
    (r"(?P<name>\S+) \((?P<t_what>a parameter or buffer|an index or mask tensor|a tensor no dumped call produced|an "
     r"input|on the golden the output of \S+; no call the target dumps before it produced it|on the golden the output "
     r"of \S+, a call the target does not make|on the target the output of \S+, a call the golden does not make)\) "
     r"already differs \((?P<t_err>[^;]*); (?P<t_how>" + _B + r")\) while every tensor before it agrees"
     r"(?P<t_seen>(?: within precision)?(?: \(" + _B + r"\))?): the difference enters (?P<node>\S+) through (?P<arg>\S+)",
     "{name}（{t_what}）已经不同（{t_err}；{t_how}），而其之前的所有张量都一致{t_seen}：差异经由 {arg} 进入 {node}"),
    (r"(?P<name>\S+) \((?P<t_what>a parameter or buffer|an index or mask tensor|a tensor no dumped call produced|an "
     r"input)\) holds Inf/NaN on the target where the golden is finite, while every tensor before it is finite: the "
     r"Inf/NaN enter (?P<node>\S+) through (?P<arg>\S+)(?P<t_undumped> — an operation msprobe did not dump made them)?",
     "{name}（{t_what}）在目标侧含 Inf/NaN 而 golden 侧有限，且其之前的所有张量都有限：Inf/NaN 经由 {arg} 进入 {node}"
     "{t_undumped}"),
    (r"^ — an operation msprobe did not dump made them$", "——由 msprobe 未 dump 的操作产生"),
    (r"Inf/NaN on the target where the golden is finite \((?P<l>[^()]*)\)", "目标侧含 Inf/NaN 而 golden 侧有限（{l}）"),
    (r"^a parameter or buffer$", "参数或缓冲区"), (r"^an index or mask tensor$", "索引或掩码张量"),
    (r"^a tensor no dumped call produced$", "不由任何已 dump 调用产生的张量"), (r"^an input$", "输入"),
    (r"(?P<x>\S+)x what a cast explains", "为一次类型转换所能解释的 {x} 倍"),
    (r"integer, bool and reordered tensors must match exactly", "整数、布尔及重排后的张量必须完全一致"),
    (r"Inf/NaN at other positions(?=[)）])", "Inf/NaN 位于不同位置"),
    (r"the two sides recorded other shapes", "两侧记录的形状不同"),
    (r"^md5 differs; integer, bool and reordered tensors must match exactly$", "md5 不同；整数、布尔及重排后的张量必须完全一致"),
    (r"another md5 digest in the same dtype: a loaded tensor must match byte for byte",
     "同一数据类型下 md5 不同：加载的张量必须逐字节一致"),
    (r"(?P<name>\S+) differs \((?P<t_err>" + _B + r")\) while every recorded tensor before it agrees(?P<t_seen>(?: within "
     r"precision)?(?: \(" + _B + r"\))?): it was computed inside "
     r"(?P<c>\S+), between recorded modules \(a functional call such as an activation or scaling, an in-place change, "
     r"or an operator the dump does not record\)",
     "{name} 不同（{t_err}），而其之前记录的所有张量都一致{t_seen}：它在 {c} 内、记录的模块之间计算（如激活或缩放等函数调用、原地修改，"
     "或 dump 未记录的算子）"),
    (r"(?P<name>\S+) differs \((?P<t_err>" + _B + r")\) while every recorded tensor before it agrees(?P<t_seen>(?: within "
     r"precision)?(?: \(" + _B + r"\))?): it was computed "
     r"\(a hook, an in-place change, or an operator msprobe did not dump\)",
     "{name} 不同（{t_err}），而其之前记录的所有张量都一致{t_seen}：它由 hook、原地修改或 msprobe 未 dump 的算子计算"),
    (r"(?P<name>\S+) differs \((?P<t_err>" + _B + r")\) although it is the same data as (?P<src>\S+), which agrees: it was "
     r"changed between the two calls inside (?P<c>\S+), between recorded modules \(a functional call such as an "
     r"activation or scaling, an in-place change, or an operator the dump does not record\)",
     "{name} 不同（{t_err}），但它与一致的 {src} 是同一数据：它在两次调用之间、{c} 内记录的模块之间被修改（如激活或缩放等函数"
     "调用、原地修改，或 dump 未记录的算子）"),
    (r"(?P<name>\S+) differs \((?P<t_err>" + _B + r")\) although it is the same data as (?P<src>\S+), which agrees: it was "
     r"changed between the two calls \(a hook, an in-place change, or an operator msprobe did not dump\)",
     "{name} 不同（{t_err}），但它与一致的 {src} 是同一数据：它在两次调用之间被 hook、原地修改或 msprobe 未 dump 的算子修改"),
    (r"a tensor is far beyond precision but the next calls that take this tensor received the golden data: a "
     r"comparison/layout mismatch rather than a computation that went wrong",
     "一个张量远超精度，但接收它的后续调用拿到的是 golden 数据：是对比或布局不匹配，而不是计算出错"),
    (r"a tensor is far beyond precision but the network's final outputs agree: a comparison/layout mismatch rather "
     r"than a computation that went wrong", "一个张量远超精度，但网络最终输出一致：是对比或布局不匹配，而不是计算出错"),
    (r"^relative (?:L2 )?error not comparable$", "相对误差无法比较"),
    (r"^relative (?:L2 )?error (?P<e>\S+)$", "相对 L2 误差 {e}"),
    (r"^statistics differ by (?P<e>\S+)$", "统计量相差 {e}"),

    # ------------------------------------------------------------------ diagnosis: explanations
    (r"^The forward pass agrees; in the backward pass: (?P<t_rest>.+)$", "前向一致；反向中：{t_rest}"),
    (r"One localised jump: (?P<node>\S+) gets bit-identical inputs \(equal md5\) and returns, most likely, the same "
     r"values in other places \(its output's md5 differs while Max/Min/Mean/Norm are equal\); ",
     "单点跳变：{node} 的输入逐位相同（md5 相等），输出很可能是同样的数值换了位置（输出 md5 不同而 Max/Min/Mean/Norm 相等）；"),
    (r"One localised jump: (?P<node>\S+) applies its function element by element, so its output's Min cannot go below "
     r"the function's minimum \((?P<e>\S+)\) up to a rounding, but the target recorded (?P<r>\S+), (?P<x>\S+)x what "
     r"rounding and another approximation of the function explain; ",
     "单点跳变：{node} 逐元素应用其函数，因此其输出的 Min 在一次舍入内不会低于该函数的最小值（{e}），但目标侧记录为 {r}，"
     "是舍入和该函数其他近似实现所能解释的 {x} 倍；"),
    (r"One localised jump: (?P<node>\S+) applies its function element by element, so its output's (?P<w>Max|Min) is the "
     r"function of its input's (?P=w) \((?P<e>\S+)\) up to a rounding, but the target recorded (?P<r>\S+), (?P<x>\S+)x "
     r"what rounding and another approximation of the function explain; ",
     "单点跳变：{node} 逐元素应用其函数，因此其输出的 {w} 在一次舍入内等于该函数作用于输入 {w} 的值（{e}），但目标侧记录为 {r}，"
     "是舍入和该函数其他近似实现所能解释的 {x} 倍；"),
    (r"One localised jump: (?P<node>\S+) adds or subtracts its inputs, so its output's Mean is their Means combined "
     r"the same way \((?P<e>\S+)\) up to a rounding, but the target recorded (?P<r>\S+), (?P<x>\S+)x what the rounding of the recorded Means and of "
     r"the elements explains; ",
     "单点跳变：{node} 对输入做加减，因此其输出的 Mean 在舍入范围内应等于各输入 Mean 按同样方式加减的结果（{e}），但目标侧记录为 {r}，"
     "是记录的 Mean 与各元素的舍入所能解释的 {x} 倍；"),
    (r"One localised jump: (?P<node>\S+) returns (?P<t_zero>a softmax's input gradient, which sums to zero along the "
     r"softmax axis|a normalisation's input gradient, which sums to zero over what it normalises), so its Mean is zero "
     r"up to a rounding, but the target recorded (?P<r>\S+), (?P<x>\S+)x what the rounding of its elements explains; ",
     "单点跳变：{node} 返回{t_zero}，因此其 Mean 在舍入范围内应为零，但目标侧记录为 {r}，是其各元素的舍入所能解释的 {x} 倍；"),
    (r"^the target's own statistics disagree: the output (?P<name>\S+) is (?P<t_zero>a softmax's input gradient, which "
     r"sums to zero along the softmax axis|a normalisation's input gradient, which sums to zero over what it "
     r"normalises), but its recorded Mean is (?P<r>\S+), (?P<x>\S+)x what the rounding of its elements explains$",
     "目标侧自身的统计量相互矛盾：输出 {name} 是{t_zero}，但其记录的 Mean 为 {r}，是其各元素的舍入所能解释的 {x} 倍"),
    (r"One localised jump: (?P<node>\S+) returns probabilities that sum to one along its axis, so its Mean is one "
     r"over the axis's length \((?P<e>\S+)\) up to a rounding, but the target recorded (?P<r>\S+), (?P<x>\S+)x what the "
     r"rounding of its elements explains; ",
     "单点跳变：{node} 返回沿其维度求和为一的概率，因此其 Mean 在舍入范围内应为该维度长度的倒数（{e}），但目标侧记录为 {r}，"
     "是其各元素的舍入所能解释的 {x} 倍；"),
    (r"^the target's own statistics disagree: the output (?P<name>\S+) holds probabilities that sum to one along the "
     r"softmax axis \(Mean (?P<e>\S+) expected\), but its recorded Mean is (?P<r>\S+), (?P<x>\S+)x what the rounding of "
     r"its elements explains$",
     "目标侧自身的统计量相互矛盾：输出 {name} 是沿 softmax 维度求和为一的概率（Mean 应为 {e}），但其记录的 Mean 为 {r}，"
     "是其各元素的舍入所能解释的 {x} 倍"),
    (r"^a softmax's input gradient, which sums to zero along the softmax axis$", " softmax 的输入梯度，它沿 softmax 维度求和为零"),
    (r"^a normalisation's input gradient, which sums to zero over what it normalises$",
     "归一化层的输入梯度，它在所归一化的维度上求和为零"),
    (r"^the target's own statistics disagree: the output (?P<name>\S+)'s Mean is not its inputs' Means combined the "
     r"same way \((?P<r>\S+) recorded, (?P<e>\S+) expected\), (?P<x>\S+)x what the rounding of the recorded Means and of the "
     r"elements explains$",
     "目标侧自身的统计量相互矛盾：输出 {name} 的 Mean 不等于各输入 Mean 按同样方式加减的结果（记录为 {r}，应为 {e}），是记录的 Mean 与各元素的舍入"
     "所能解释的 {x} 倍"),
    (r"^the target's own statistics disagree: the output (?P<name>\S+)'s (?:Min is below the function's minimum|"
     r"(?P<w>Max|Min) is not the function of its input's) \((?P<r>\S+) recorded, (?P<e>\S+) expected\), (?P<x>\S+)x what "
     r"rounding and another approximation of the function explain$",
     "目标侧自身的统计量相互矛盾：输出 {name} 的极值（记录为 {r}，应为 {e}）与其输入不符，是舍入和该函数其他近似实现所能解释的 {x} 倍"),
    (r"One localised jump: (?P<node>\S+) gets bit-identical inputs \(equal md5\) and returns, most likely, the same "
     r"values in other places \(its output's md5 differs, Max/Min are equal and Mean/Norm move by rounding only\); ",
     "单点跳变：{node} 的输入逐位相同（md5 相等），输出很可能是同样的数值换了位置（输出 md5 不同，Max/Min 相等，Mean/Norm 仅差舍入）；"),
    (r"One localised jump: (?P<node>\S+) does not compute what its inputs say: its input gradient is (?P<r>\S+) "
     r"\(relative L2\) away from the gradient re-computed in float64 from the target's own recorded forward inputs and "
     r"incoming gradient, (?P<x>\S+)x what the output's own (?P<dtype>\S+) rounding explains; ",
     "单点跳变：{node} 没有按其输入计算：用目标侧自己记录的前向输入和传入梯度以 float64 重算输入梯度，其结果与目标侧相差 {r}（相对 L2），"
     "是输出自身 {dtype} 舍入所能解释的 {x} 倍；"),
    (r"One localised jump: (?P<node>\S+) does not compute what its inputs say: its output is (?P<r>\S+) \(relative "
     r"L2\) away from the call re-computed in float64 from the target's own recorded inputs and arguments, (?P<x>\S+)x "
     r"what the output's own (?P<dtype>\S+) rounding explains; ",
     "单点跳变：{node} 没有按其输入计算：用目标侧自己记录的输入和参数以 float64 重算该调用，其输出与重算结果相差 {r}（相对 L2），"
     "是输出自身 {dtype} 舍入所能解释的 {x} 倍；"),
    # ------------------------------------------------------------------ dumps that record part of a step
    (r"its output (?P<name>\S+) cannot be compared with the golden's \((?P<t_why>[^()]*)\) while every output recorded "
     r"before it is within precision; the dump holds none of the inputs of (?P<node>\S+)",
     "其输出 {name} 无法与 golden 对比（{t_why}），而在它之前记录的每个输出都在精度范围内；dump 中没有 {node} 的任何输入"),
    (r" ?The golden records the (?P<t_pass>forward|backward) pass \((?P<n>\d+) tensors\) and the target does not "
     r"\(msprobe's data_mode leaves it out there\): the (?:forward|backward) pass was not compared\.",
     "golden 侧记录了{t_pass}（{n} 个张量），目标侧没有（目标侧 msprobe 的 data_mode 未包含它）：{t_pass}未参与对比。"),
    (r" ?The target records the (?P<t_pass>forward|backward) pass \((?P<n>\d+) tensors\) and the golden does not "
     r"\(msprobe's data_mode leaves it out there\): the (?:forward|backward) pass was not compared\.",
     "目标侧记录了{t_pass}（{n} 个张量），golden 侧没有（golden 侧 msprobe 的 data_mode 未包含它）：{t_pass}未参与对比。"),
    (r"the gradient the backward pass starts from, (?P<name>\S+), already differs \((?P<t_err>" + _B + r")\), so the runs "
     r"part ways before any recorded backward call: the calls after the last recorded forward call \((?P<last>\S+)\) "
     r"compute another result on the two sides: the loss, or calls the dump does not record \(msprobe's list or scope "
     r"leaves them out\)\.",
     "反向开始时的梯度 {name} 已经不同（{t_err}），因此两侧在任何记录到的反向调用之前就已分开：最后一个记录到的前向调用（{last}）"
     "之后的调用在两侧算出了不同的结果：损失函数，或 dump 未记录的调用（msprobe 的 `list` 或 `scope` 排除了它们）。"),
    (r"the gradient the backward pass starts from, (?P<name>\S+), already differs \((?P<t_err>" + _B + r")\), so the runs "
     r"part ways before any recorded backward call: the dump records no forward pass \(msprobe's data_mode\): the loss "
     r"or a forward call computes another result on the two sides\.",
     "反向开始时的梯度 {name} 已经不同（{t_err}），因此两侧在任何记录到的反向调用之前就已分开：dump 没有记录前向（msprobe 的 "
     "data_mode）：损失函数或某个前向调用在两侧算出了不同的结果。"),
    (r"^the gradient the backward pass starts from already differs: what follows the last recorded forward call "
     r"computes otherwise$", "反向开始时的梯度已经不同：最后一个记录到的前向调用之后的计算在两侧不同"),
    (r"^Dump the forward pass up to the loss \(clear msprobe's list and scope, data_mode \[\"all\"\]\) and compare "
     r"again: the first call whose inputs agree and whose output differs is then named\.$",
     "把前向一直 dump 到损失函数（清空 msprobe 的 `list` 和 `scope`，data_mode [\"all\"]），然后重新对比：届时会指出第一个输入一致"
     "而输出不同的调用。"),
    (r"^Compare the loss both runs compute from the same outputs: its reduction, label smoothing, ignored index and "
     r"any scaling\.$", "对比两侧由相同输出算出的损失：其归约方式（`reduction`）、`label_smoothing`、忽略的索引（`ignore_index`）以及任何缩放。"),
    (r"One localised jump: (?P<node>\S+) returns an output that cannot be compared with the golden's "
     r"\((?P<t_why>[^()]*)\) while every output recorded before it is within precision \(the dump holds none of its "
     r"inputs\); ",
     "单点跳变：{node} 的输出无法与 golden 对比（{t_why}），而在它之前记录的每个输出都在精度范围内（dump 中没有它的任何输入）；"),
    (r"One localised jump: (?P<node>\S+) returns an output (?P<x>\S+)x beyond precision while every output recorded "
     r"before it is within precision \(the dump holds none of its inputs\); ",
     "单点跳变：{node} 的输出超出精度 {x} 倍，而在它之前记录的每个输出都在精度范围内（dump 中没有它的任何输入）；"),
    (r"(?P<t_err>statistics differ by \S+|relative (?:L2 )?error \S+|md5 differs) = (?P<x>\S+)x the allowed error \(what "
     r"the error recorded before it and one rounding explain\) while every output recorded before it is within "
     r"precision \((?P<n>\d+) of them fail msprobe's bar of cosine 0\.99 / MaxAbsErr 1e-3; why each was discounted "
     r"follows\); the dump holds none of the inputs of (?P<node>\S+)",
     "{t_err} = 允许误差的 {x} 倍（以在它之前记录的误差加一次舍入所能解释的为准），而在它之前记录的每个输出都在精度范围内"
     "（其中 {n} 个未达到 msprobe 的标准：余弦 0.99 / MaxAbsErr 1e-3；各自被排除的原因见下文）；dump 中没有 {node} 的任何输入"),
    (r"(?P<t_err>statistics differ by \S+|relative (?:L2 )?error \S+|md5 differs) = (?P<x>\S+)x the allowed error \(what "
     r"the error recorded before it and one rounding explain\) while every output recorded before it is within "
     r"precision; the dump holds none of the inputs of (?P<node>\S+)",
     "{t_err} = 允许误差的 {x} 倍（以在它之前记录的误差加一次舍入所能解释的为准），而在它之前记录的每个输出都在精度范围内；"
     "dump 中没有 {node} 的任何输入"),
    (r"^statistics differ by (?P<e>\S+)$", "统计量相差 {e}"),
    (r"^relative (?:L2 )?error (?P<e>\S+)$", "相对 L2 误差 {e}"),
    (r"^md5 differs$", "md5 不同"),
    (r" ?The dump records no inputs in the (?P<t_pass>forward|backward) pass \(msprobe's data_mode leaves them out\): "
     r"each output was judged against the largest error recorded before it in the pass, and a difference that enters "
     r"through an argument \(a weight, a scalar setting\) reads as the call's own\. Dump with data_mode "
     r"\[\"all\"\] to tell them apart\.",
     "dump 在{t_pass}中没有记录任何输入（msprobe 的 data_mode 未包含输入）：每个输出都以该方向上在它之前记录的最大误差为准来判断，"
     "经参数（权重、标量设置）进入的差异会被当作该调用自身的差异。用 data_mode [\"all\"] 重新 dump 即可区分。"),
    (r"^forward$", "前向"), (r"^backward$", "反向"),
    (r" ?The dump records no forward pass \(msprobe's data_mode \[\"backward\"\]\): a backward call also reads the "
     r"tensors its forward call saved, so a difference in the forward pass at or before (?P<fwd>\S+) shows first "
     r"here\. Dump the forward pass too, to tell a forward difference from a wrong gradient\.",
     "dump 没有记录前向（msprobe 的 data_mode [\"backward\"]）：反向调用还会读取其前向调用保存的张量，因此前向中在 {fwd} "
     "处或之前的差异会首先在这里显现。请同时 dump 前向，以区分前向差异和梯度计算错误。"),
    (r"(?P<name>\S+), which the first calls this dump records take in, already differs \((?P<t_err>" + _B + r")\), and "
     r"it requires grad on both sides: the network computed it, in calls before the ones this dump records "
     r"\((?P<node>\S+) is the first to take it\), so it is not data fed in\. The dump holds part of the step only "
     r"\(msprobe's scope or list leaves the earlier calls out\): the difference enters before that part\.",
     "{name}（本 dump 最先记录的调用所接收的张量）已经不同（{t_err}），且两侧的 requires_grad 都为 True：它由网络在本 dump 记录的调用之前"
     "计算得到（{node} 是第一个接收它的调用），并非输入数据。本 dump 只包含该步的一部分（msprobe 的 `scope` 或 `list` 排除了更早的"
     "调用）：差异在这部分之前就已进入。"),
    (r"^the first compared tensor already differs, and it requires grad: calls before the recorded part of the step "
     r"computed it$", "第一个参与对比的张量已经不同，且它的 requires_grad 为 True：由该步中记录部分之前的调用计算得到"),
    (r"^Dump the calls before (?P<node>\S+) too \(start msprobe's scope earlier, or clear scope and list\), then "
     r"compare again: the first call whose inputs agree and whose output differs is then named\.$",
     "把 {node} 之前的调用也 dump 下来（让 msprobe 的 `scope` 更早开始，或清空 `scope` 和 `list`），然后重新对比：届时会指出第一个输入一致"
     "而输出不同的调用。"),
    (r"^If both runs were meant to start from the same state here, check what they load before this point \(weights, "
     r"the batch, the random seed\)\.$",
     "如果两次运行本应从这里的同一状态开始，请检查此前加载的内容（权重、批数据、随机种子）。"),
    (r"One localised jump: (?P<node>\S+) turns inputs that agree into an output (?P<x>\S+)x beyond precision; ",
     "单点跳变：{node} 的输入一致，输出却超出精度 {x} 倍；"),
    (r"One localised jump: (?P<node>\S+) turns inputs that agree into an output that cannot be compared with the "
     r"golden's \((?P<t_why>[^()]*)\)(?: \([^()]*\))?; ",
     "单点跳变：{node} 的输入一致，输出却无法与 golden 对比（{t_why}）；"),
    (r"its output (?P<name>\S+) cannot be compared with the golden's \((?P<t_why>[^()]*)\) while every input of "
     r"(?P<node>\S+) is within precision", "其输出 {name} 无法与 golden 对比（{t_why}），而 {node} 的所有输入都在精度范围内"),
    (r"shape (?P<t>\[[^\]]*\]) on the target, (?P<g>\[[^\]]*\]) on the golden", "目标侧形状 {t}，golden 侧 {g}"),
    (r"dtype (?P<t>\S+) on the target, (?P<g>\S+) on the golden", "目标侧 dtype {t}，golden 侧 {g}"),
    (r"^no figure could be computed from what the two dumps recorded$", "无法从两侧 dump 记录的内容算出任何误差数值"),
    (r"One localised jump: (?P<node>\S+) turns inputs that agree into an output (?P<x>\S+)x beyond precision \(a sum or "
     r"difference moves each element by at most its inputs' differences added, plus one rounding\); ",
     "单点跳变：{node} 的输入一致，输出却超出精度 {x} 倍（加法或减法对每个元素的改变至多为各输入差异之和，再加一次舍入）；"),
    (r"One localised jump: (?P<node>\S+) turns inputs that agree into an output (?P<x>\S+)x beyond precision \(a "
     r"product moves each element by at most each input's difference times the other input's largest magnitude, plus "
     r"one rounding\); ",
     "单点跳变：{node} 的输入一致，输出却超出精度 {x} 倍（乘法对每个元素的改变至多为各输入差异乘以另一输入的最大绝对值之和，再加一次舍入）；"),
    (r"One localised jump: (?P<node>\S+) turns inputs that agree into an output (?P<x>\S+)x beyond precision \(an "
     r"elementwise activation moves each element by at most its largest slope times the input's difference, plus one "
     r"rounding\); ",
     "单点跳变：{node} 的输入一致，输出却超出精度 {x} 倍（逐元素激活函数对每个元素的改变至多为其最大斜率乘以输入差异，再加一次舍入）；"),
    (r" Before it, (?P<name>\S+) holds a mask fill on both sides \(Min (?P<g>\S+) on the golden, (?P<t>\S+) on the "
     r"target\), whose Mean and Norm cannot be compared: a mask built otherwise there \(one position off\) cannot be seen "
     r"in this dump and would first show here\. A tensor dump of that call tells it apart\.",
     " 在它之前，{name} 两侧都含有掩码填充值（golden 侧 Min {g}，目标侧 {t}），其 Mean 和 Norm 无法比较：那里构建方式不同的掩码"
     "（错位一格）在此 dump 中看不出来，会首先在这里显现。对该调用做 tensor dump 即可区分。"),
    (r" Its inputs? (?P<args>.+?) (?:has|have) no Mean/Norm in this statistics dump \(msprobe writes only Max/Min for "
     r"integer and bool tensors\), so a difference there cannot be seen: it may be where the fault enters \(e\.g\. a "
     r"mask built one position off, token ids from another tokenizer\) rather than the operator itself\.",
     " 其输入 {args} 在此统计量 dump 中没有 Mean/Norm（msprobe 对整数和布尔张量只记录 Max/Min），因此看不出其中的差异："
     "故障可能从这里进入（例如掩码错位一格、来自另一个分词器的 token id），而不是算子本身。"),
    (r" Its weights? (?P<args>\S+(?:, \S+)*) ha(?:s|ve) the golden's exact statistics, which a weight stored transposed or "
     r"permuted \(a checkpoint conversion\) keeps too: statistics cannot tell such a weight from a fault in this call, "
     r"which an md5 or tensor dump of the weight tells apart\.",
     " 其权重 {args} 的统计量与 golden 完全相同，而转置或置换存储的权重（检查点转换）同样会保持这些统计量：仅凭统计量无法区分这样的"
     "权重与本调用的故障，对该权重做 md5 或张量 dump 可以区分两者。"),
    (r" Its per-channel parameters meet its input's channels here: statistics cannot tell a fault in this call from "
     r"channels permuted before it \(a weight with two output channels swapped keeps every statistic of the tensors "
     r"before it\), which an md5 or tensor dump tells apart\.",
     " 它的逐通道参数在这里与输入的各通道相遇：仅凭统计量无法区分本调用的故障与之前的通道被置换"
     "（输出通道互换的权重不会改变之前任何张量的统计量），md5 或张量 dump 可以区分两者。"),
    (r"every tensor of the forward pass stays within precision; the gradient shows the change first \((?P<back>\S+)\), "
     r"which larger inputs or longer training carry into the forward results\.",
     "前向的每个张量都在精度范围内；梯度最先显示出这一改变（{back}），更大的输入或更长的训练会把它带入前向结果。"),
    (r"every tensor of the pass stays within precision, so the numbers do not show its effect here; the argument alone "
     r"says the two runs compute different things, which larger inputs, longer training or another precision can "
     r"expose\.",
     "该方向的每个张量都在精度范围内，数值上看不出它的影响；但仅凭这个参数就可知两侧计算的不是同一件事，"
     "更大的输入、更长的训练或换一种精度都可能使其显现。"),
    (r" The error also grows fastest at later (?P<kind>\S+) calls \((?P<calls>[^)]*)\): a setting all (?P<kind2>\S+) "
     r"calls share may differ \(an eps, a momentum, an approximation or a kernel\), and this is its first call\.",
     " 误差增长最快的也是之后的 {kind} 调用（{calls}）：所有 {kind2} 调用共用的某个设置可能不同"
     "（eps、momentum、近似方式或算子内核），而这是它的第一个调用。"),
    (r"Compare the settings of the (?P<kind>\S+) layers on both sides \(eps, momentum, affine, approximation, the "
     r"framework's defaults\): one may differ for all of them\.",
     "对比两侧 {kind} 层的设置（eps、momentum、仿射参数、近似方式、框架默认值）：可能有一项对它们全部不同。"),
    (r"Overflow: (?P<node>\S+) is the first call to produce Inf/NaN from finite inputs; ",
     "溢出：{node} 是第一个由有限输入产生 Inf/NaN 的调用；"),
    (r"Invalid operation: (?P<node>\S+) is the first call to produce NaN where the golden does not, from the Inf/NaN "
     r"both sides' inputs hold; ", "无效运算：{node} 是第一个在 golden 侧没有 NaN 时产生 NaN 的调用，NaN 来自两侧输入都含有的 Inf/NaN；"),
    (r"(?P<node>\S+) is the first call whose output holds NaN on the target where the golden's does not, from inputs "
     r"whose Inf/NaN the golden's hold too \((?P<name>\S+): recorded (?P<stats>[^()]+) on both sides\): "
     r"(?P<t_what>a softmax over a slice that is -inf everywhere \(every position masked\) gives NaN: a mask that "
     r"covers a whole row|an invalid operation on the infinite values both sides hold \(inf - inf, 0 x inf\))",
     "{node} 是第一个在目标侧输出含 NaN 而 golden 侧没有的调用，其输入中的 Inf/NaN 在 golden 侧同样存在（{name}：两侧记录的 "
     "{stats}）：{t_what}"),
    (r"^a softmax over a slice that is -inf everywhere \(every position masked\) gives NaN: a mask that covers a whole "
     r"row$", "对处处为 -inf（所有位置都被掩码）的切片做 softmax 会得到 NaN：掩码遮住了整行"),
    (r"^an invalid operation on the infinite values both sides hold \(inf - inf, 0 x inf\)$",
     "对两侧都含有的无穷值做了无效运算（inf - inf、0 x inf）"),
    (r"Invalid operation: (?P<node>\S+) is the first call to produce NaN from finite inputs; ",
     "无效运算：{node} 是第一个由有限输入产生 NaN 的调用；"),
    (r"^an overflow$", "溢出"),
    (r"^an invalid operation \(NaN from finite values\), not a value past the dtype's range$",
     "无效运算（由有限值产生 NaN），而非数值超出 dtype 范围"),
    (r"The difference enters (?P<node>\S+) through its argument (?P<arg>\S+) \((?P<t_d>" + _B + r")\); ",
     "差异经由参数 {arg} 进入 {node}（{t_d}）；"),
    (r"The difference enters (?P<node>\S+) through its argument (?P<arg>\S+); ", "差异经由参数 {arg} 进入 {node}；"),
    (r"The difference enters between calls, at (?P<where>\S+) \((?P<arg>\S+) of (?P<node>\S+) differs from the output "
     r"it is\); ", "差异在调用之间进入，位于 {where}（{node} 的 {arg} 与其所对应的输出不同）；"),
    (r"The difference enters between calls, at (?P<where>\S+) \((?P<arg>\S+) of (?P<node>\S+) differs and no recorded "
     r"call produced it\); ", "差异在调用之间进入，位于 {where}（{node} 的 {arg} 不同，且不由任何已记录的调用产生）；"),
    (r"in the (?P<t_dir>forward|backward) pass; ", "发生在{t_dir}中；"),
    (r"^forward$", "前向"), (r"^backward$", "反向"),
    (r"after it the error changes by (?P<g>\S+)x to the end instead of growing, so it explains the final difference\.",
     "此后到末尾误差变为 {g} 倍而没有继续增长，因此它解释了最终的差异。"),
    (r"after it the error stays about the same to the end \(final/here (?P<g>[^)]+)\), so it explains the final "
     r"difference\.", "此后到末尾误差大致不变（末尾/此处 = {g}），因此它解释了最终的差异。"),
    (r"after it the error shrinks to (?P<g>\S+)x by the end instead of growing, so it explains the final difference\.",
     "此后到末尾误差缩小到 {g} 倍而没有继续增长，因此它解释了最终的差异。"),
    (r"after it the error grows (?P<g>\S+)x to the end of the pass \((?P<name>\S+)\)\.",
     "此后到该方向末尾（{name}）误差增长 {g} 倍。"),
    (r"after it the error grows only (?P<g>\S+)x more to the end, so it explains the final difference\.",
     "此后到末尾误差只再增长 {g} 倍，因此它解释了最终的差异。"),
    (r"its effect on the final outputs stays within the bench's rounding noise, so only the layer-by-layer comparison "
     r"against the bench shows it — a real fault hidden inside low-precision noise\.",
     "它对最终输出的影响仍在 bench 的舍入噪声内，只有与 bench 的逐层对比才能发现 — 是隐藏在低精度噪声中的真实问题。"),
    (r"the Inf/NaN reach the end of the pass \((?P<name>\S+)\)\.", "Inf/NaN 一直传到该方向的末尾（{name}）。"),
    (r"it is the last compared call of the pass\.", "它是该方向最后一个被对比的调用。"),
    (r"no later output has an error figure, so how its error reaches the end of the pass \((?P<name>\S+)\) cannot be "
     r"measured\.", "之后的输出都没有误差数值，因此无法衡量其误差如何传到该方向的末尾（{name}）。"),
    (r"this gradient goes to the optimizer, not to a later call, so the Inf/NaN at the end of the pass \((?P<name>\S+)\) "
     r"overflowed elsewhere\.", "该梯度只交给优化器、不被后续调用读取，因此该方向末尾的 Inf/NaN（{name}）是在别处溢出的。"),
    (r"^every input of (?P<node>\S+) is bit-identical to the golden's \(equal md5\) while its output (?P<name>\S+) holds, "
     r"most likely, the same values in other places \(md5 differs, Max/Min/Mean/Norm equal\)$",
     "{node} 的每个输入都与标杆逐位相同（md5 相等），而其输出 {name} 很可能是同样的数值换了位置（md5 不同，Max/Min/Mean/Norm 相等）"),
    (r"^re-computed in float64 from the target's own recorded forward inputs and incoming gradient, (?P<node>\S+) "
     r"gives an input gradient (?P<r>\S+) \(relative L2\) away from the target's (?P<name>\S+); its own rounding "
     r"explains (?P<a>\S+)$",
     "用目标侧自己记录的前向输入和传入梯度以 float64 重算，{node} 的输入梯度与目标侧的 {name} 相差 {r}（相对 L2）；其自身舍入只能解释 {a}"),
    (r"^every input of (?P<node>\S+) is bit-identical to the golden's \(equal md5\) while its output (?P<name>\S+) has "
     r"other bytes with the golden's Max and Min and a Mean/Norm within rounding: most likely the same values in other "
     r"places, summed in another order; (?P<later>\S+), the first later output that mixes positions, differs "
     r"\((?P<t_err>" + _B + r")\)$",
     "{node} 的每个输入都与标杆逐位相同（md5 相等），而其输出 {name} 字节不同，Max/Min 与标杆相同、Mean/Norm 仅差舍入："
     "很可能是同样的数值换了位置、求和顺序不同；之后第一个混合各位置数值的输出 {later} 不同（{t_err}）"),
    (r"^re-computed in float64 from the target's own recorded inputs and arguments, (?P<node>\S+) gives an output "
     r"(?P<r>\S+) \(relative L2\) away from the target's (?P<name>\S+); its own rounding explains (?P<a>\S+)$",
     "用目标侧自己记录的输入和参数以 float64 重算，{node} 的结果与目标侧的 {name} 相差 {r}（相对 L2）；其自身舍入只能解释 {a}"),
    (r"the difference reaches (?P<e>\S+) relative error at the end of the pass \((?P<name>\S+)\)\.",
     "差异在该方向末尾达到 {e} 的相对误差（{name}）。"),
    (r"the Inf/NaN do not reach the end of the pass \((?P<name>\S+) is finite\)\.",
     "Inf/NaN 没有传到该方向的末尾（{name} 是有限值）。"),
    (r"how its error travels on to the end of the pass cannot be measured \((?P<name>\S+) has no error figure\)\.",
     "无法测量其误差如何传到该方向的末尾（{name} 没有误差数值）。"),
    (r" Measured on its recorded tensors: (?P<t_s>.+?)\.(?= |$)", " 在其记录的张量上实测：{t_s}。"),
    (r" It is also the first layer that computes anything, so a precision setting applied to every layer "
     r"\(quantisation, lower-precision kernels\) would look the same here: re-run this layer alone in higher precision "
     r"to tell the two apart\.",
     " 它也是第一个进行计算的层，对所有层生效的精度设置（量化、低精度内核）在这里看起来也会一样：单独以更高精度重跑这一层即可区分两者。"),
    (r" The target's backward pass is scaled by (?P<s>\S+) \(2\^(?P<k>\d+)\): its first gradient is exactly that multiple "
     r"of the golden's in all four statistics, the loss scaling of mixed-precision training \(torch\.amp\.GradScaler or "
     r"a static loss scale\)\. Its backward tensors were divided by it before judging; if the target uses no loss "
     r"scaling, that factor is the difference itself\.",
     " 目标侧的反向整体放大了 {s} 倍（2^{k}）：其第一个梯度的四项统计量都恰好是 golden 的这个倍数，即混合精度训练的损失缩放"
     "（torch.amp.GradScaler 或静态缩放系数）。其反向张量已先除以该倍数再判定；若目标侧并未使用损失缩放，"
     "这个倍数本身就是差异所在。"),
    (r"(?P<key>\S+) computes (?P<f>sin|cos|exp|exp2|expm1) of arguments up to (?P<m>\S+): its input is right to its own "
     r"(?P<dt>\w+) rounding \((?P<rel>\S+) relative\), which at that size is (?:an angle error|a relative error) of about "
     r"(?P<ae>\S+), and (?P=f) passes it on in full \((?P<t_seen>[^()]*)\)\. The kernel is not at fault: the function "
     r"is ill-conditioned at these arguments in (?P=dt)\. Compute it, and the product that feeds it, in float32 \(a "
     r"sinusoidal timestep or position embedding in a low-precision model is the usual case\)\.",
     "{key} 计算参数最大为 {m} 的 {f}：其输入在自身 {dt} 舍入范围内是正确的（相对误差 {rel}），但在这个量级上这相当于约 {ae} 的"
     "绝对误差，{f} 会把它原样传下去（{t_seen}）。内核本身没有问题：该函数在 {dt} 下、这样的参数范围内是病态的。请用 float32 "
     "计算它以及为它提供输入的乘积（低精度模型中的正弦时间步或位置编码是典型情形）。"),
    (r"^its output is (?P<e>\S+) off$", "其输出偏差 {e}"),
    (r"^its recorded statistics differ by (?P<e>\S+): they show little of it, since the value's range does not move$",
     "其记录的统计量相差 {e}：由于取值范围不变，统计量几乎看不出这一点"),
    (r"the input of (?P<key>\S+) is within (?P<dt>\w+) rounding \((?P<rel>\S+) relative\), but at arguments up to "
     r"(?P<m>\S+) that rounding is (?:an angle error|a relative error) of about (?P<ae>\S+), which (?P<f>\w+) passes "
     r"on in full",
     "{key} 的输入在 {dt} 舍入范围内（相对误差 {rel}），但在参数最大为 {m} 时，这一舍入相当于约 {ae} 的绝对误差，{f} 会把它原样传下去"),
    (r"Compute (?P<key>\S+) and the tensor it takes in float32 on the target \(cast the timestep or position tensor to "
     r"float32 before the product, and the result back\), as the golden does\.",
     "在目标侧用 float32 计算 {key} 及其输入张量（在乘积之前把时间步或位置张量转换为 float32，再把结果转换回来），与 golden 一致。"),
    (r"Check the other sin/cos/exp calls on large arguments the same way: each one needs float32\.",
     "用同样的方法检查其他大参数上的 sin/cos/exp 调用：每一个都需要 float32。"),
    (r"^(?P<f>sin|cos|exp|exp2|expm1) of arguments up to (?P<m>\S+): ill-conditioned in (?P<dt>\w+)$",
     "参数最大为 {m} 的 {f}：在 {dt} 下是病态的"),
    (r" The target mixes float32 with (?P<low>\w+) tensors and the golden holds no (?P=low) tensor \(autocast\): its "
     r"float32 tensors carry the (?P=low) calls' error, so they were judged at (?P=low) precision too\.",
     " 目标侧混用 float32 与 {low} 张量，而 golden 没有 {low} 张量（自动混合精度）：其 float32 张量带有 {low} 计算的误差，"
     "因此也按 {low} 精度判定。"),
    (r" (?P<n>\d+) outputs? recorded with other element counts on the two sides \((?P<name>[^)]+)\) (?:was|were) not judged: "
     r"the calls that take (?:it|them) received the golden data, so msprobe recorded another tensor there, not a wrong "
     r"result\.",
     " {n} 个输出在两侧记录的元素个数不同（{name}），未参与判定：取用它们的调用收到的是 golden 的数据，说明 msprobe 在此记录的是另一个张量，"
     "而不是结果出错。"),
    (r" (?P<n>\d+) earlier rows? of this pass fails? msprobe's bar \(cosine < 0\.99 or MaxAbsErr > 1e-3\) and "
     r"(?:were|was) discounted: (?P<t_list>.+?)(?:; see discounted_rows)?\.$",
     " 该方向中较早的 {n} 行未达到 msprobe 的标准（余弦 < 0.99 或 MaxAbsErr > 1e-3），已被排除：{t_list}。"),
    (r"; and (?P<more>\d+) more$", "；另有 {more} 行"),
    (r"(?P<row>[A-Za-z][\w.]*\.\d+) \((?P<t_why>relative (?:L2 )?error [^()]*\([^()]*\): [^()]*)\)", "{row}（{t_why}）"),
    (r"relative (?:L2 )?error (?P<e>\S+) is within what precision explains at this point of the dataflow \((?P<x>\S+)x "
     r"the allowed error\): MaxAbsErr above 1e-3 comes from the size of the values, not from a fault",
     "相对 L2 误差 {e} 在数据流此处精度所能解释的范围内（允许误差的 {x} 倍）：MaxAbsErr 超过 1e-3 源于数值本身较大，而非故障"),
    (r"relative (?:L2 )?error (?P<e>\S+) is within what precision explains at this point of the dataflow \((?P<x>\S+)x "
     r"the allowed error\): the cosine of a tensor this small or this close to zero moves with rounding",
     "相对 L2 误差 {e} 在数据流此处精度所能解释的范围内（允许误差的 {x} 倍）：如此小或接近 0 的张量，其余弦会随舍入变化"),
    (r"(?P<share>\d+%) of it is the mask fill (?P<fill>\S+) on both sides; without those positions its relative (?:L2 )?"
     r"error is (?P<e>\S+), within what precision explains there",
     "其中 {share} 是两侧相同的掩码填充值 {fill}；去掉这些位置后其相对 L2 误差为 {e}，在该处精度所能解释的范围内"),
    (r"not judged \(no error figure\)", "未判定（无误差数值）"),
    (r"an enclosing module's output: the calls recorded inside it are judged instead", "外层模块的输出：改为判定其内部记录的调用"),
    (r"beyond precision, but the difference does not reach the calls that take it", "超出精度，但差异没有传到使用它的调用"),
    (r"No row could be judged \(no tensor pair with data, statistics or md5 on both sides\), so no layer can be blamed\.",
     "没有任何一行可以判定（两侧都没有带数据、统计量或 md5 的张量对），因此无法归咎于任何层。"),
    (r"All (?P<n>\d+) compared tensors of the (?P<t_dir>forward|backward) pass are within what precision explains "
     r"\(largest: (?P<name>\S+) at (?P<x>\S+)x the allowed error\)\. The layers agree; a wrong final result comes from "
     r"after the dumped part of the network\.",
     "{t_dir}中对比的 {n} 个张量都在精度所能解释的范围内（最大：{name}，为允许误差的 {x} 倍）。各层一致；最终结果若有误，来自网络中 dump 范围之后的部分。"),
    (r"The (?P<n>\d+) compared tensors of the backward pass are within precision too\.",
     "反向中对比的 {n} 个张量也都在精度范围内。"),
    (r"(?P<name>\S+) exceeds the judged precision slightly \((?P<x>\S+)x\) but stays inside the dtype budget and the "
     r"final outputs agree: an isolated rounding excursion, not a fault\.",
     "{name} 略超判定精度（{x} 倍），但仍在 dtype 预算内且最终输出一致：是孤立的舍入偏移，不是故障。"),
    (r"^Every matrix multiplication adds error of its own: re-computed in float64 from the target's own recorded "
     r"inputs, each of the (?P<n>\d+) linear/matmul calls checked is off by (?P<lo>\S+) to (?P<hi>\S+) \(relative L2, "
     r"median (?P<med>\S+)\), where a float32 GEMM is off by about 1e-7\. The error starts at (?P<start>\S+) "
     r"\((?P<e>\S+) relative\) and is (?P<f>\S+) at the end\. No single operator is at fault: (?P<t_why>.+)$",
     "每个矩阵乘都自带误差：用目标侧自己记录的输入以 float64 重算，所检查的 {n} 个 linear/matmul 调用各自相差 {lo} 到 {hi}"
     "（相对 L2，中位数 {med}），而 float32 矩阵乘只差约 1e-7。误差从 {start} 开始（相对误差 {e}），末尾为 {f}。没有单个算子出错：{t_why}"),
    (r"^Matrix multiplications add error of their own: (?P<n>\d+) of the pass's (?P<m>\d+) float32 linear/matmul calls "
     r"each give an output beyond what float32 rounding and their inputs' error explain, the first of them not far "
     r"from the others \((?P<lo>\S+) to (?P<hi>\S+), median (?P<med>\S+); statistics differences\), where one faulty call would be "
     r"beyond once and the GEMMs after it would only carry its error\. The error starts at (?P<start>\S+) and is "
     r"(?P<f>\S+) at the end\. No single operator is at fault: the GEMMs compute in a reduced precision, as TF32 "
     r"\(NVIDIA\) and HF32 \(Ascend\) matmuls do; a tensor dump of a few GEMMs would confirm it by re-computation\.$",
     "矩阵乘各自引入误差：该方向 {m} 个 float32 linear/matmul 调用中有 {n} 个，其输出都超出 float32 舍入与其输入误差所能解释的范围，"
     "且第一个超出的调用与其他调用的误差相差不远（{lo} 到 {hi}，中位数 {med}；统计量差异）；若只有一个调用出错，它只会超出一次，之后的矩阵乘只会传递其误差。"
     "误差从 {start} 开始，末尾为 {f}。没有单个算子出错：这些矩阵乘以降低的精度计算，如 TF32（NVIDIA）和 HF32（昇腾）矩阵乘；"
     "对少数矩阵乘做 tensor 模式 dump 即可通过重算确认。"),
    # ------------------------------------------------------------------ a choice that rounding decides
    # ------------------------------------------------------------------ a choice rounding does not explain
    # the whole reason is in the pattern: longer than the reason's own rules, it sees the reason still in English
    (r"The call chose otherwise, not rounding: (?P<t_reason>\S+ (?:chooses other elements|gives another mask) than the "
     r"golden's at \d+ of \d+ positions \([^)]+\) from inputs within precision, and at \d+ of them .+?(?:: rounding "
     r"cannot swap them|: rounding cannot flip that comparison| a NaN where the golden's values are compared))\. ",
     "是调用本身作出了不同的选择，而非舍入所致：{t_reason}。"),
    (r"(?P<op>\S+) chooses other elements than the golden's at (?P<d>\d+) of (?P<n>\d+) positions \((?P<arg>[^)]+)\) "
     r"from inputs within precision, and at (?P<u>\d+) of them the golden's two candidates are (?P<gap>\S+) apart while "
     r"the runs' inputs differ by at most (?P<diff>\S+) there: rounding cannot swap them",
     "{op} 在 {n} 个位置中的 {d} 个（{arg}）选出的元素与 golden 不同，而其输入在精度范围内；其中 {u} 个位置上 golden 的两个"
     "候选值相差 {gap}，而两侧输入在该处最多只相差 {diff}：舍入不可能交换它们"),
    (r"(?P<op>\S+) gives another mask than the golden's at (?P<d>\d+) of (?P<n>\d+) positions \((?P<arg>[^)]+)\) from "
     r"inputs within precision, and at (?P<u>\d+) of them the golden's value lies (?P<gap>\S+) from its threshold while "
     r"the two runs' operands differ by (?P<diff>\S+) there: rounding cannot flip that comparison",
     "{op} 在 {n} 个位置中的 {d} 个（{arg}）给出的掩码与 golden 不同，而其输入在精度范围内；其中 {u} 个位置上 golden 的值距阈值 "
     "{gap}，而两侧操作数在该处只相差 {diff}：舍入不可能翻转该比较"),
    (r"(?P<op>\S+) chooses other elements than the golden's at (?P<d>\d+) of (?P<n>\d+) positions \((?P<arg>[^)]+)\) "
     r"from inputs within precision, and at (?P<u>\d+) of them a NaN where the golden's values are compared",
     "{op} 在 {n} 个位置中的 {d} 个（{arg}）选出的元素与 golden 不同，而其输入在精度范围内；其中 {u} 个位置上比较的 golden 值含 NaN"),
    (r"(?P<op>\S+) gives another mask than the golden's at (?P<d>\d+) of (?P<n>\d+) positions \((?P<arg>[^)]+)\) from "
     r"inputs within precision, and at (?P<u>\d+) of them a NaN where the golden's values are compared",
     "{op} 在 {n} 个位置中的 {d} 个（{arg}）给出的掩码与 golden 不同，而其输入在精度范围内；其中 {u} 个位置上比较的 golden 值含 NaN"),
    (r"(?P<op>\S+) chooses other elements than the golden's at (?P<d>\d+) of (?P<n>\d+) positions \((?P<arg>[^)]+)\) "
     r"from inputs within precision \((?P<err>\S+) relative\): at every one of them the golden's two candidates lie "
     r"(?P<gap>\S+) apart at most, while the runs' inputs differ by up to (?P<diff>\S+) there, enough to swap values "
     r"up to (?P<bound>\S+) apart, so rounding decides the choice",
     "{op} 在 {n} 个位置中的 {d} 个（{arg}）选出的元素与 golden 不同，而其输入在精度范围内（相对误差 {err}）：在每个这样的位置上，"
     "golden 的两个候选值最多相差 {gap}，而两侧输入在该处最多相差 {diff}，足以交换相差不超过 {bound} 的两个值，因此选择由舍入决定"),
    (r"(?P<shows>\S+) holds (?P<nt>\d+) rows on the target and (?P<ng>\d+) on the golden: a selection no dumped "
     r"call made picks other elements, and the choice behind it \((?P<op>\S+), (?P<arg>[^)]+)\) is made from inputs "
     r"within precision \((?P<err>\S+) relative\)",
     "{shows} 在目标侧有 {nt} 行，在 golden 侧有 {ng} 行：一次未被 dump 的选取挑出了不同的元素，而它所依据的选择"
     "（{op}，{arg}）由精度范围内的输入（相对误差 {err}）算出"),
    (r"(?P<op>\S+) returns another (?P<arg>\S+) from inputs within precision \((?P<err>\S+) relative\): a choice "
     r"between nearly equal values, which rounding can decide the other way",
     "{op} 由精度范围内的输入（相对误差 {err}）返回了不同的 {arg}：这是在几乎相等的值之间的选择，舍入可能使其结果相反"),
    (r"The runs part ways at a choice, not at a faulty call: (?P<t_reason>.+?)\. Near-ties that the target's rounding "
     r"decides the other way \(top-k routing in a mixture of experts, argmax, a threshold\) explain it, and every call "
     r"after it works on other elements, so their differences follow from this choice\.",
     "两次运行在一次选择处分道扬镳，而不是某个调用出错：{t_reason}。目标侧的舍入把近似平局判向另一边（混合专家模型中的 top-k "
     "路由、argmax、阈值）即可解释；其后的每个调用处理的都是不同的元素，因此它们的差异都源于这次选择。"),
    (r"The runs part ways at a choice, not at a faulty call: (?P<t_reason>.+?)\. Near-ties that the target's rounding "
     r"decides the other way \(top-k routing in a mixture of experts, argmax, a threshold\) explain it\.",
     "两次运行在一次选择处分道扬镳，而不是某个调用出错：{t_reason}。目标侧的舍入把近似平局判向另一边（混合专家模型中的 top-k "
     "路由、argmax、阈值）即可解释。"),
    (r"(?P<key>\S+) is (?P<x>\S+)x beyond precision, only just, and its data comes through (?P<leaf>\S+): integers "
     r"recorded with the same Max and Min as (?P<op>\S+) (?P<arg>\S+), a choice made from inputs within precision "
     r"\((?P<err>\S+) relative\); msprobe's statistics hold only Max and Min of integer tensors, so whether the two "
     r"runs chose the same cannot be seen",
     "{key} 仅略微超出精度（允许误差的 {x} 倍），其数据来自 {leaf}：这些整数记录的 Max 和 Min 与 {op} 的 {arg} 相同，而后者是由"
     "精度范围内的输入（相对误差 {err}）做出的选择；msprobe 的统计量对整数张量只记录 Max 和 Min，因此看不出两次运行是否做出了相同的选择"),
    (r"The runs may part ways at a choice rather than at a faulty call: (?P<t_reason>.+?)\. Near-ties that the "
     r"target's rounding decides the other way \(top-k routing in a mixture of experts, argmax, a threshold\) move "
     r"the tensors after it by about this much, so (?P<key>\S+) need not be at fault\.",
     "两次运行可能是在一次选择处分道扬镳，而不是某个调用出错：{t_reason}。目标侧的舍入把近似平局判向另一边（混合专家模型中的 "
     "top-k 路由、argmax、阈值），会使其后的张量偏离大约这么多，因此 {key} 未必有错。"),
    (r"(?P<op>\S+) gives another mask than the golden's at (?P<d>\d+) of (?P<n>\d+) positions \((?P<arg>[^)]+)\) from "
     r"inputs within precision \((?P<err>\S+) relative\): at every one of them the golden's value lies (?P<gap>\S+) at "
     r"most from its threshold, closer than the two runs' operands differ there \(up to (?P<diff>\S+)\), so rounding "
     r"decides the comparison",
     "{op} 在 {n} 个位置中的 {d} 个（{arg}）给出的掩码与 golden 不同，而其输入在精度范围内（相对误差 {err}）：在每个这样的位置上，"
     "golden 的值与阈值最多相差 {gap}，小于两次运行的操作数在该处的差异（最多 {diff}），因此比较结果由舍入决定"),
    (r"(?P<name>\S+) holds (?P<nt>\d+) rows on the target and (?P<ng>\d+) on the golden, and every tensor before it "
     r"differs only at a precision level: if code msprobe did not dump picks these rows by a choice \(top-k routing in "
     r"a mixture of experts, argmax, a threshold\), rounding may decide it the other way\. A dump at level mix or L1 "
     r"records the choice itself\.",
     "{name} 在目标侧有 {nt} 行，在 golden 侧有 {ng} 行，而其之前的每个张量都只在精度层面上不同：如果是 msprobe 未 dump 的代码通过一次"
     "选择（混合专家模型中的 top-k 路由、argmax、阈值）挑出这些行，舍入可能把这次选择判向另一边。以 mix 或 L1 级别 dump 可记录这次选择本身。"),
    (r"Dump at level mix \(or L1\) so that the call choosing these rows is recorded, then compare again: a choice that "
     r"rounding decides is then named and checked\.",
     "以 mix（或 L1）级别 dump，使挑选这些行的调用被记录下来，然后重新对比：届时由舍入决定的选择会被指出并核对。"),
    # ------------------------------------------------------------------ a dump of inputs only
    (r"(?P<prev>\S+) takes inputs that agree with the golden's, and the next call, (?P<node>\S+), receives (?P<name>\S+), "
     r"which already differs \((?P<t_diff>" + _B + r")\): this dump records inputs only \(msprobe data_mode 'input'\), "
     r"so the output of (?P=prev) is seen only as that input",
     "{prev} 的输入与 golden 一致，而下一个调用 {node} 收到的 {name} 已经不同（{t_diff}）：此 dump 只记录输入（msprobe "
     "data_mode 'input'），因此 {prev} 的输出只能作为该输入被看到"),
    (r"One localised jump, most likely at (?P<prev>\S+): (?P<t_reason>.+)\. The difference enters at (?P=prev) or in "
     r"code msprobe does not dump between the two calls\.",
     "一次局部跳变，最可能发生在 {prev}：{t_reason}。差异在 {prev} 处进入，或在两次调用之间 msprobe 未 dump 的代码中进入。"),
    (r"Re-dump with msprobe data_mode 'all' \(its default\), or input and output, so that the output of (?P<prev>\S+) "
     r"is recorded, then compare again: the call is then judged on its own output\.",
     "以 msprobe data_mode 'all'（默认值），或同时记录输入和输出，重新 dump，使 {prev} 的输出被记录下来，然后重新对比：届时该调用会按其自身输出来评判。"),
    (r"Statistics cannot show a forward difference that moves values to other places \(a swapped embedding row, a "
     r"permuted weight\): its Max, Min, Mean and Norm stay, and it shows first in the backward pass\. A forward dump "
     r"in md5 or tensor mode rules it out\.",
     "统计量看不出把数值挪到其他位置的前向差异（交换了的 embedding 行、被置换的权重）：其 Max、Min、Mean 和 Norm 不变，差异首先在反向中显现。"
     "以 md5 或 tensor 模式 dump 前向即可排除这种可能。"),
    (r"Nor can they show integer inputs that changed \(labels, indices, masks\): of (?P<name>\S+) msprobe records "
     r"only Max and Min, which agree\.",
     "统计量同样看不出改变了的整数输入（标签、索引、掩码）：msprobe 对 {name} 只记录 Max 和 Min，而两者一致。"),
    (r"msprobe's statistics hold only Max and Min of integer and bool tensors, so the choices themselves cannot be "
     r"compared here\.",
     "msprobe 的统计量对整数和布尔张量只记录 Max 和 Min，因此这里无法直接比较这些选择本身。"),
    (r"Their md5 digests tell only that the choices differ: whether rounding explains each one was not measured "
     r"\(no tensor data\)\.",
     "其 md5 摘要只能说明选择不同：每处不同是否都可由舍入解释未经测量（没有张量数据）。"),
    (r"Whether rounding explains each differing choice was not measured \((?P<op>\S+) is not a top-k, sort or argmax "
     r"whose choices can be checked against its inputs\)\.",
     "每处不同的选择是否都可由舍入解释未经测量（{op} 不是可以依据其输入核对选择的 top-k、sort 或 argmax）。"),
    (r"Dump (?P<op>\S+) in tensor mode on both runs \(msprobe task 'tensor' with this API in its 'list'\) and "
     r"compare again: each differing choice is then checked against its inputs' difference\.",
     "在两次运行上以 tensor 模式 dump {op}（msprobe task 'tensor'，并将此 API 写入 'list'），然后重新对比：届时每处不同的选择"
     "都会依据其输入的差异逐一核对。"),
    (r"Compute the inputs of (?P<op>\S+) in float32 on the target \(a mixture-of-experts router in float32 is common "
     r"practice\), so that rounding no longer decides near-ties, then compare again\.",
     "在目标侧以 float32 计算 {op} 的输入（混合专家路由器使用 float32 是常见做法），使舍入不再决定近似平局，然后重新对比。"),
    (r"Judge the calls after this choice by end metrics \(loss, accuracy\) rather than call by call: another choice at "
     r"a near-tie is an error of neither run\.",
     "这次选择之后的调用应以最终指标（loss、精度）而非逐个调用来评判：在近似平局处做出另一种选择，不是任何一侧的错误。"),
    (r"^re-computed on operands rounded to a 10-bit mantissa, as TF32 \(NVIDIA\) and HF32 \(Ascend\) matmuls read "
     r"them, (?P<k>\d+) of them match the target to (?P<r>\S+), so the target's GEMMs run in TF32/HF32\.$",
     "将操作数舍入到 10 位尾数（TF32（NVIDIA）和 HF32（昇腾）矩阵乘读取操作数的方式）后重算，其中 {k} 个与目标侧相差仅 {r}，"
     "因此目标侧的矩阵乘以 TF32/HF32 运行。"),
    (r"^the GEMMs compute in a reduced precision \(TF32/HF32 matmuls, or operands cast to a lower precision\), which "
     r"re-computing them on 10-bit-mantissa operands does not reproduce exactly\.$",
     "这些矩阵乘以降低的精度计算（TF32/HF32 矩阵乘，或操作数被转换为更低精度），但按 10 位尾数操作数重算并不能完全复现。"),
    (r"^Turn reduced-precision matmuls off on the target and compare again: on Ascend torch_npu\.npu\.matmul\.allow_hf32 "
     r"= False and torch_npu\.npu\.conv\.allow_hf32 = False \(convolutions use HF32 by default\); on NVIDIA "
     r"torch\.backends\.cuda\.matmul\.allow_tf32 = False and torch\.backends\.cudnn\.allow_tf32 = False\.$",
     "在目标侧关闭降精度矩阵乘后重新对比：昇腾上设置 torch_npu.npu.matmul.allow_hf32 = False 和 "
     "torch_npu.npu.conv.allow_hf32 = False（卷积默认使用 HF32）；NVIDIA 上设置 torch.backends.cuda.matmul.allow_tf32 = False "
     "和 torch.backends.cudnn.allow_tf32 = False。"),
    (r"^If the golden run used TF32/HF32 on purpose, set the same on both sides, so that the comparison shows only real "
     r"differences\.$",
     "若 golden 运行有意使用 TF32/HF32，请两侧设置一致，使对比只显示真实差异。"),
    (r"The error starts at (?P<start>\S+) \((?P<e>\S+) relative\) and keeps growing to (?P<f>\S+) at the end "
     r"\((?P<g>\S+)x\): many layers each add a little, no single operator is at fault\. Fastest growth: (?P<names>.+)\.$",
     "误差从 {start} 开始（相对误差 {e}），一直增长到末尾的 {f}（{g} 倍）：许多层各自增加一点，没有单个算子出错。增长最快：{names}。"),
    (r"(?P<name>\S+) is far off while (?P<t_why>the next calls that take this tensor received the golden data|the "
     r"network's final outputs agree), and the data says why: (?P<facts>.+)\. The pair matches after that "
     r"transformation, so the layer is fine and only its layout/pairing differs\.",
     "{name} 相差很大，但{t_why}，数据给出了原因：{facts}。经此变换后两者一致，因此该层没有问题，只是布局或配对不同。"),
    (r"(?P<name>\S+) is far off while (?P<t_why>the next calls that take this tensor received the golden data|the "
     r"network's final outputs agree): the tensors compared are probably not the same thing \(renamed, fused, in-place "
     r"or re-laid-out operators, or a dump written at another moment\)\. No transpose/reshape of the golden tensor "
     r"explains it\.",
     "{name} 相差很大，但{t_why}：对比的张量很可能不是同一个东西（改名、融合、原地或重新布局的算子，或在另一时刻写出的 dump）。"
     "golden 张量的任何转置或 reshape 都无法解释它。"),
    (r"^the next calls that take this tensor received the golden data$", "接收该张量的后续调用拿到的是 golden 数据"),
    (r"^the network's final outputs agree$", "网络的最终输出一致"),
    (r"The network input already differs \((?P<name>\S+)\); measured on the data: (?P<facts>.+)\.$",
     "网络输入已经不同（{name}）；数据实测：{facts}。"),
    (r"The network input already differs \((?P<name>\S+), (?P<t_err>" + _B + r")\)(?P<t_rest>.*)$", "网络输入已经不同（{name}，{t_err}）{t_rest}"),
    (r"The first tensor both runs record, (?P<name>\S+), already differs \((?P<t_err>" + _B + r")\), but "
     r"(?P<t_unpaired>.+?)\. So it is what calls that were not compared made, not necessarily the data both runs were "
     r"fed: the runs execute different code\. In eval mode or under torch\.no_grad\(\), nn\.TransformerEncoderLayer "
     r"and nn\.MultiheadAttention run a fused fast path that msprobe does not record; a layer fused or renamed on one "
     r"side leaves calls unpaired too\.",
     "两侧都记录的第一个张量 {name} 已经不同（{t_err}），但{t_unpaired}。因此它是未参与对比的调用算出的结果，未必是两侧输入的数据不同："
     "两侧执行的是不同的代码。在评估模式（model.eval()）或 torch.no_grad() 下，nn.TransformerEncoderLayer 和 nn.MultiheadAttention "
     "走 msprobe 不记录的融合快速路径；一侧融合或改名的层也会留下未配对的调用。"),
    (r" ?The target records (?P<n>\d+) forward calls? during its backward pass \((?P<a>\S+) \.\. (?P<b>\S+)\) that the "
     r"(?:golden|target) does not: activation checkpointing \(recomputation\) runs them again to rebuild what the "
     r"backward needs\. They have no partner and were not compared\.",
     "目标侧在反向中记录了 {n} 个另一侧没有的前向调用（{a} .. {b}）：激活重计算会重新运行它们以重建反向所需的激活值。"
     "它们没有配对对象，未参与比对。"),
    (r" ?The golden records (?P<n>\d+) forward calls? during its backward pass \((?P<a>\S+) \.\. (?P<b>\S+)\) that the "
     r"(?:golden|target) does not: activation checkpointing \(recomputation\) runs them again to rebuild what the "
     r"backward needs\. They have no partner and were not compared\.",
     "golden 侧在反向中记录了 {n} 个另一侧没有的前向调用（{a} .. {b}）：激活重计算会重新运行它们以重建反向所需的激活值。"
     "它们没有配对对象，未参与比对。"),
    (r"the golden's forward pass goes on after (?P<last>\S+), the last forward call both runs record, "
     r"with (?P<n>\d+) calls? the (?:golden|target) does not make \((?P<span>\S+(?: \.\. \S+)?)\), so the backward pass "
     r"starts from another gradient", "golden 侧的前向在两侧都记录的最后一个前向调用 {last} 之后还有 {n} 个另一侧没有的调用"
     "（{span}），因此反向从不同的梯度开始"),
    (r"the target's forward pass goes on after (?P<last>\S+), the last forward call both runs record, "
     r"with (?P<n>\d+) calls? the (?:golden|target) does not make \((?P<span>\S+(?: \.\. \S+)?)\), so the backward pass "
     r"starts from another gradient", "目标侧的前向在两侧都记录的最后一个前向调用 {last} 之后还有 {n} 个另一侧没有的调用"
     "（{span}），因此反向从不同的梯度开始"),
    (r"Every forward tensor both runs record agrees, but the golden ends its forward pass with "
     r"(?P<n>\d+) more calls? after (?P<last>\S+) \((?P<span>\S+(?: \.\. \S+)?)\): the two runs compute another result "
     r"there \(a loss with another term, a head one side leaves out\)\. The backward pass starts from that result's "
     r"gradient, so the first tensor both runs record there, (?P<name>\S+), already differs \((?P<t_err>[^()]*)\)\.",
     "两侧都记录的前向张量全部一致，但 golden 侧在 {last} 之后还以 {n} 个调用结束前向（{span}）：两侧在此计算的结果不同"
     "（损失多了一项，或一侧少了一个输出头）。反向从该结果的梯度开始，因此反向中两侧都记录的第一个张量 {name} 已经不同（{t_err}）。"),
    (r"Every forward tensor both runs record agrees, but the target ends its forward pass with "
     r"(?P<n>\d+) more calls? after (?P<last>\S+) \((?P<span>\S+(?: \.\. \S+)?)\): the two runs compute another result "
     r"there \(a loss with another term, a head one side leaves out\)\. The backward pass starts from that result's "
     r"gradient, so the first tensor both runs record there, (?P<name>\S+), already differs \((?P<t_err>[^()]*)\)\.",
     "两侧都记录的前向张量全部一致，但目标侧在 {last} 之后还以 {n} 个调用结束前向（{span}）：两侧在此计算的结果不同"
     "（损失多了一项，或一侧少了一个输出头）。反向从该结果的梯度开始，因此反向中两侧都记录的第一个张量 {name} 已经不同（{t_err}）。"),
    (r"Make both runs end the forward pass the same way: the golden's computes (?P<span>\S+(?: \.\. "
     r"\S+)?) after (?P<last>\S+)\.", "让两侧以相同的方式结束前向：golden 侧在 {last} 之后还计算了 {span}。"),
    (r"Then dump and compare again: the backward pass is compared once both start from the same result\.",
     "然后重新 dump 并比对：两侧从同一结果开始后，反向才可比较。"),
    (r"Make both runs end the forward pass the same way: the target's computes (?P<span>\S+(?: \.\. "
     r"\S+)?) after (?P<last>\S+)\.", "让两侧以相同的方式结束前向：目标侧在 {last} 之后还计算了 {span}。"),
    (r"Then dump and compare again: the backward pass is compared once both start from the same result\.",
     "然后重新 dump 并比对：两侧从同一结果开始后，反向才可比较。"),
    (r"^the first tensor both runs record already differs, but (?P<t_unpaired>.+): what those calls computed was not "
     r"compared$", "两侧都记录的第一个张量已经不同，但{t_unpaired}：这些调用的计算结果未参与对比"),
    (r"the target records (?P<n>\d+) calls? before it that the golden does not \(first: (?P<call>[^()]+)\)",
     "目标侧在它之前记录了 {n} 个 golden 没有的调用（第一个：{call}）"),
    (r"the golden records (?P<n>\d+) calls? before it that the target does not \(first: (?P<call>[^()]+)\)",
     "golden 在它之前记录了 {n} 个目标侧没有的调用（第一个：{call}）"),
    (r"Run both sides in the same mode \(model\.train\(\) or model\.eval\(\)\) and the same torch\.no_grad\(\) use, "
     r"so that they execute the same calls, then dump and compare again\.",
     "让两侧以相同模式运行（model.train() 或 model.eval()）并同样使用 torch.no_grad()，使其执行相同的调用，然后重新 dump 并对比。"),
    (r"If one side fuses or renames these layers, dump both at level mix, or pass a mapping \(target_name: "
     r"golden_name\) for the renamed calls\.",
     "若一侧融合或改名了这些层，两侧都以 mix 级别 dump，或为改名的调用传入映射（target_name: golden_name）。"),
    (r"Only once the calls before it pair, check the input data itself \(preprocessing, tokenizer\)\.",
     "只有在它之前的调用都配对之后，才去检查输入数据本身（预处理、tokenizer）。"),
    (r": the inputs are different data \(other token ids: another sample or tokenizer\)\.",
     "：输入是不同的数据（token id 不同：另一个样本或 tokenizer）。"),
    (r" and no channel reversal, axis permutation or affine \(mean/std\) map of the golden input explains it: the inputs "
     r"are different data \(another sample, augmentation, tokenizer\)\.",
     "，且 golden 输入的通道反转、轴置换或仿射（均值/标准差）映射都无法解释它：输入是不同的数据（另一个样本、数据增强或 tokenizer）。"),
    (r" (?P<m>\S+) is the target's fused call standing for the golden's (?P<n>\d+) calls (?P<span>\S+(?: \.\. \S+)?): it "
     r"takes their inputs and gives another output, so the fault is the fused call's\.",
     " {m} 是目标侧的融合调用，对应 golden 的 {n} 个调用 {span}：它接收相同的输入却给出不同的输出，因此故障在该融合调用。"),
    (r" The target's (?P<t>\S+(?: \.\. \S+)?) stands for the golden's (?P<g>\S+(?: \.\. \S+)?) \(another API for "
     r"the same computation\); the difference comes in with the argument (?P<a>\S+) of (?P<m>\S+), not from a "
     r"computation\.",
     " 目标侧的 {t} 对应 golden 的 {g}（同一计算的另一种 API）；差异随 {m} 的参数 {a} 进入，而不是来自某个计算。"),
    (r"The gradient (?P<g>\S+) comes back from the backward of the target's written-out run (?P<span>\S+(?: \.\. \S+)?) "
     r"\((?P<n>\d+) calls\), which stands for the golden's fused (?P<f>\S+): msprobe records that run's backward only in "
     r"part, so what it sends back is compared here first, and the run \(its constants above all\) is where to look\.",
     "梯度 {g} 来自目标侧展开写法的调用序列 {span}（{n} 个调用）的反向，该序列对应 golden 侧融合的 {f}：msprobe 只记录了"
     "该序列反向的一部分，因此它回传的梯度在这里最先被比较，应检查该序列（尤其是其中的常量）。"),
    (r" (?P<m>\S+) closes the target's written-out run (?P<span>\S+(?: \.\. \S+)?) \((?P<n>\d+) calls?\), which stands "
     r"for the golden's fused (?P<g>\S+): the run as a whole takes its inputs and gives another output, so the fault "
     r"is anywhere in that run\.",
     " {m} 是目标侧展开实现 {span}（{n} 个调用）的最后一个调用，这段实现对应 golden 的融合调用 {g}：整段接收相同的输入却给出不同的"
     "输出，因此故障在这段实现中的某处。"),
    (r" Constants of the golden's side: (?P<t_g>.+?); of the target's: (?P<t_t>.+?)\.$",
     " golden 侧的常量：{t_g}；目标侧的常量：{t_t}。"),
    (r"^none recorded$", "未记录"),
    (r"Compare the constants of the fused call with those of the calls it stands for \(an eps, a scale, an "
     r"approximation: listed in the explanation\); the one that differs is the fault\.",
     "对比融合调用的常量与其所对应调用的常量（eps、缩放系数、近似方式：见说明）；不同的那个就是故障。"),
    (r" Ranks: the divergence starts on (?P<rank>[^;.；\s]+)", " 各 rank：偏离从 {rank} 开始"),
    (r" Steps and ranks: the divergence starts on (?P<rank>[^;.；\s]+)", " 各 step/rank：偏离从 {rank} 开始"),
    (r" The weights that enter step (?P<n>\d+) differ while every earlier step agrees, its gradients included: the "
     r"optimizer's update between the steps differs\.",
     " 进入第 {n} 步的权重不同，而之前的每一步（包括梯度）都一致：两步之间优化器的更新不同。"),
    (r"Compare the optimizer of the two runs: its type, learning rate and schedule, momentum or Adam betas and eps, "
     r"weight decay, gradient clipping and loss scaling, and which parameters it updates; the step before agrees "
     r"everywhere, so only the update between the steps changed the weights\.",
     "对比两次运行的优化器：类型、学习率及其调度、动量或 Adam 的 betas 与 eps、权重衰减、梯度裁剪和损失缩放，以及它更新哪些参数；"
     "前一步处处一致，因此只有两步之间的更新改变了权重。"),
    (r" Only one rank was compared and (?P<call>\S+) is a collective: its output combines the inputs of every rank in "
     r"its group, and this rank's inputs agree, so the difference most likely comes from another rank \(with a single "
     r"rank in the group, the collective itself computes otherwise, e\.g\. its reduce op\)\.",
     " 只对比了一个 rank，而 {call} 是集合通信：其输出合并了通信组内每个 rank 的输入，而本 rank 的输入一致，因此差异很可能来自另一个 "
     "rank（若通信组只有一个 rank，则是集合通信本身计算不同，例如其归约操作）。"),
    (r"Compare every rank: pass the dump roots that hold all the rank folders \(golden and target\) so that the rank "
     r"where the difference starts is found; this rank only receives it through (?P<call>\S+)\.",
     "对比所有 rank：传入包含全部 rank 目录的 dump 根目录（golden 与目标侧），以找到差异开始的 rank；本 rank 只是经由 {call} "
     "接收到该差异。"),
    (r" The golden dump is (?P<g>\S+) and the target's is (?P<t>\S+): (?P<t_what>.+?), so some differences are expected "
     r"there; dump the same step and rank on both sides to compare like with like\.",
     " golden 侧的 dump 是 {g}，目标侧是 {t}：{t_what}，因此那里出现一些差异是意料之中的；请在两侧 dump 相同的 step 和 rank，"
     "以便同类相比。"),
    (r"^another training step, which starts from weights that the steps between have updated and another rank, which "
     r"is fed other data or holds another shard of the model$",
     "另一个训练 step（它从中间各步已更新过的权重开始），也是另一个 rank（它的输入数据不同，或持有模型的另一分片）"),
    (r"^another training step, which starts from weights that the steps between have updated$",
     "另一个训练 step，它从中间各步已更新过的权重开始"),
    (r"^another rank, which is fed other data or holds another shard of the model$",
     "另一个 rank，它的输入数据不同，或持有模型的另一分片"),
    (r" Not compared: (?P<t_parts>.+?), so nothing here speaks for (?:it|them)\.", " 未对比：{t_parts}，因此这里的结论不涉及它们。"),
    (r"the golden's (?P<keys>\S+(?:, \S+)*(?: …)?) \((?P<n>\d+)\) (?:has|have) no target dump",
     "golden 侧的 {keys}（{n} 个）没有对应的目标侧 dump"),
    (r"the target's (?P<keys>\S+(?:, \S+)*(?: …)?) \((?P<n>\d+)\) (?:has|have) no golden dump",
     "目标侧的 {keys}（{n} 个）没有对应的 golden 侧 dump"),
    (r" Before it, outputs differ only at a precision level \(the first: (?P<node>\S+), (?P<x>\S+)x the allowed error\), as "
     r"GEMMs in a reduced precision \(TF32, HF32\) make them; this jump is far beyond that\.",
     " 在它之前，各输出只在精度层面上不同（第一个：{node}，为允许误差的 {x} 倍），这正是低精度 GEMM（TF32、HF32）造成的；"
     "这一跳变则远超于此。"),
    (r"(?P<name>\S+) \((?P<t_what>a parameter or buffer|an index or mask tensor|a tensor no dumped call produced|an "
     r"input)\) is the one input of (?P<node>\S+) that is not exactly the golden's \((?P<t_err>[^(),]*(?:\([^()]*\))?), "
     r"within what another summation order explains\) while the call's output differs: the difference enters (?P=node) "
     r"through (?P<arg>\S+) — (?P<t_d>.+?); statistics of one weight taken on two devices can differ this way too, so "
     r"check its layout first",
     "{name}（{t_what}）是 {node} 唯一与 golden 不完全相同的输入（{t_err}，在另一种求和顺序可解释的范围内），而该调用的输出不同："
     "差异经由 {arg} 进入 {node}——{t_d}；同一权重在两台设备上取得的统计量也可能这样不同，因此请先检查它的布局"),
    (r"(?<=无问题的 rank：)none", "无"),
    (r"; (?P<ranks>\S+(?:, \S+)*) only receives? it through a collective \((?:its|their) own inputs agree\)",
     "；{ranks} 只是通过集合通信收到它（其自身输入一致）"),
    (r"; (?P<ranks>\S+(?:, \S+)*) diverges? too \(later or on their own\)", "；{ranks} 也有偏离（更晚或各自独立）"),
    (r"; (?P<ranks>\S+(?:, \S+)*) diverges? at the same call \((?P<call>\S+)\) on (?:its|their) own",
     "；{ranks} 在同一个调用（{call}）上各自独立地偏离"),
    (r"; clean: (?P<ranks>[^.]+)\.", "；无问题的 rank：{ranks}。"),
    (r" A later step starts from weights the earlier step's differing gradients already updated, so its divergence "
     r"follows from this one and is not a fault of its own\.",
     " 后面的 step 从已被前一 step 有差异的梯度更新过的权重开始，其偏离由此而来，并非独立的故障。"),
    (r" All (?P<n>\d+) ranks are clean\.", " 全部 {n} 个 rank 均无问题。"),
    (r" All (?P<n>\d+) step and rank dumps are clean\.", " 全部 {n} 个 step/rank 的 dump 均无问题。"),

    # ------------------------------------------------------------------ diagnosis: probes (measured behaviour)
    (r"the target output of (?P<key>\S+) equals the sigmoid-approximated \(quick, x\*sigmoid\(1\.702x\)\) GELU of its "
     r"input \(residual (?P<r>\S+)\)", "{key} 的目标侧输出等于其输入的 sigmoid 近似（quick，x*sigmoid(1.702x)）GELU（残差 {r}）"),
    (r"the target output of (?P<key>\S+) equals the tanh-approximated GELU of its input \(residual (?P<r>\S+)\)",
     "{key} 的目标侧输出等于其输入的 tanh 近似 GELU（残差 {r}）"),
    (r"the target output of (?P<key>\S+) equals the exact \(erf\) GELU of its input \(residual (?P<r>\S+)\)",
     "{key} 的目标侧输出等于其输入的精确（erf）GELU（残差 {r}）"),
    (r"the target output of (?P<key>\S+) equals the (?P<what>[^()]+?) GELU of its input \(residual (?P<r>\S+)\)",
     "{key} 的目标侧输出等于其输入的 {what} GELU（残差 {r}）"),
    (r"the target output of (?P<key>\S+) equals the normalisation with eps=(?P<eps>\S+)", "{key} 的目标侧输出等于 eps={eps} 的归一化"),
    (r"the target output of (?P<key>\S+) equals normalisation with the batch's own statistics",
     "{key} 的目标侧输出等于用 batch 自身统计量做的归一化"),
    (r"the target output of (?P<key>\S+) equals normalisation with the running mean and variance",
     "{key} 的目标侧输出等于用 running mean 和 variance 做的归一化"),
    (r"the target output of (?P<key>\S+) equals the softmax of its input over dim (?P<d>\S+)",
     "{key} 的目标侧输出等于其输入在 dim {d} 上的 softmax"),
    (r"re-computing (?P<key>\S+) in float64 from the target's own recorded inputs ", "用目标侧自身记录的输入以 float64 重算 {key} "),

    # ------------------------------------------------------------------ diagnosis: next actions (advice.py, explain.py)
    (r"^Measured: (?P<t_s>.+?)\. (?P<t_fix>.+)$", "实测：{t_s}。{t_fix}"),
    (r"^Measured: (?P<t_s>.+?)\.$", "实测：{t_s}。"),
    (r"Use the same GELU on both sides \(approximate='none' for the exact one, or 'tanh' on both\)\.",
     "两侧使用同一种 GELU（精确版用 approximate='none'，或两侧都用 'tanh'）。"),
    (r"Use the same GELU on both sides \(approximate='tanh' on both, or the exact one on both\)\.",
     "两侧使用同一种 GELU（两侧都用 approximate='tanh'，或都用精确版）。"),
    (r"Use the same GELU on both sides: the target runs the quick \(sigmoid\) approximation, often a fused NPU kernel "
     r"or a model config's hidden_act \('quick_gelu'\); switch it to the golden's\.",
     "两侧使用同一种 GELU：目标侧运行的是 quick（sigmoid）近似，常见于融合的 NPU 内核或模型配置的 hidden_act（'quick_gelu'）；"
     "改为与 golden 侧一致。"),
    (r"Call model\.eval\(\) on the target \(or freeze this BatchNorm\) so it normalises with its running statistics\.",
     "在目标侧调用 model.eval()（或冻结该 BatchNorm），使其用 running 统计量归一化。"),
    (r"Run the target in the same mode as the golden \(train mode if the golden normalises with batch statistics\)\.",
     "让目标侧以与 golden 相同的模式运行（若 golden 用 batch 统计量归一化则用 train 模式）。"),
    (r"Set the same eps on both sides \(model config / the fused kernel's argument\)\.", "两侧设置相同的 eps（模型配置或融合内核的参数）。"),
    (r"Make the softmax run over the same dim on both sides \(check the layout the tensor has there\)\.",
     "让两侧的 softmax 在同一个 dim 上计算（检查该处张量的布局）。"),
    (r"Turn dropout off in both runs for the comparison \(model\.eval\(\), or p=0\)\.", "对比时在两次运行中都关闭 dropout（model.eval() 或 p=0）。"),
    (r"The operator is consistent with its inputs on the target: look at what feeds it \(an input or argument this dump "
     r"does not compare\) before suspecting the kernel\.",
     "目标侧该算子与其输入一致：在怀疑内核之前，先检查输入它的东西（本 dump 未对比的输入或参数）。"),
    (r"The kernel itself is the suspect: reproduce it alone from the recorded inputs \(below\) before reporting it\.",
     "内核本身可疑：上报之前，先用记录的输入（见下）单独复现它。"),
    (r"Check that the layer runs in the same mode on both sides: model\.eval\(\) before inference \(train mode normalises "
     r"with the batch's own statistics and updates the running ones\)\.",
     "检查两侧该层的运行模式是否相同：推理前调用 model.eval()（train 模式用 batch 自身统计量归一化并更新 running 统计量）。"),
    (r"Check that the running mean/variance were loaded from the checkpoint \(not left at 0/1\) and that eps and momentum "
     r"are the same\.", "检查 running mean/variance 是否从 checkpoint 加载（而非停留在 0/1），以及 eps 与 momentum 是否相同。"),
    (r"Check the epsilon on both sides \(1e-5 vs 1e-6 vs 1e-12 differ in configs and fused kernels\)\.",
     "检查两侧的 epsilon（配置和融合内核中 1e-5、1e-6、1e-12 各不相同）。"),
    (r"Check fused vs decomposed: a fused NPU normalisation may compute the variance in another dtype; compare with the "
     r"decomposed form \(mean, variance, rsqrt\) kept in FP32\.",
     "检查融合与分解实现：融合的 NPU 归一化可能以另一种 dtype 计算方差；与保持 FP32 的分解形式（mean、variance、rsqrt）对比。"),
    (r"Check the mask reaching the softmax: the fill value \(-inf, -10000, dtype minimum\), the masked positions and the "
     r"dim the softmax runs over\.", "检查进入 softmax 的掩码：填充值（-inf、-10000、dtype 最小值）、被掩码的位置以及 softmax 所在的 dim。"),
    (r"Check the scale applied before it \(1/sqrt\(head_dim\)\) and the dtype it runs in \(FP32 softmax vs FP16\)\.",
     "检查其之前的缩放（1/sqrt(head_dim)）以及其运行的 dtype（FP32 softmax 还是 FP16）。"),
    (r"Check the attention mask \(causal offset, padding mask, fill value\) and the scale \(1/sqrt\(head_dim\)\)\.",
     "检查 attention 掩码（因果偏移、padding 掩码、填充值）和缩放（1/sqrt(head_dim)）。"),
    (r"Check the layout the fused attention kernel expects \(BSH vs BNSD, head count\) and the softmax dtype\.",
     "检查融合 attention 内核期望的布局（BSH 还是 BNSD、head 数）以及 softmax 的 dtype。"),
    (r"Check the weight's layout and conversion: a checkpoint converted for another framework may hold it transposed or "
     r"split/merged differently \(q/k/v fused, gate/up fused\)\.",
     "检查权重的布局与转换：为其他框架转换的 checkpoint 可能是转置的，或拆分/合并方式不同（q/k/v 融合、gate/up 融合）。"),
    (r"Check the accumulation dtype: an FP16/BF16 matmul that accumulates in low precision \(or HF32 on the NPU\) loses "
     r"more than the golden's FP32 accumulation; keep this layer in FP32 to see\.",
     "检查累加 dtype：以低精度累加的 FP16/BF16 矩阵乘（或 NPU 上的 HF32）比 golden 的 FP32 累加损失更多；将该层保持 FP32 即可验证。"),
    (r"Check the data layout \(NCHW vs NHWC\) and the weight layout, padding, stride, dilation and groups\.",
     "检查数据布局（NCHW 还是 NHWC）以及权重布局、padding、stride、dilation 和 groups。"),
    (r"Check the convolution algorithm's accumulation dtype \(FP16 accumulation on the NPU vs FP32\)\.",
     "检查卷积算法的累加 dtype（NPU 上 FP16 累加还是 FP32）。"),
    (r"Check that dropout is off in evaluation \(model\.eval\(\)\) on both sides, or compare with the same seed and the "
     r"same random-number generator: dropout masks never match across devices\.",
     "检查两侧评估时 dropout 是否关闭（model.eval()），或用相同的种子与随机数生成器对比：dropout 掩码在不同设备间不会一致。"),
    (r"Check the token ids reaching it \(tokenizer, vocabulary, special tokens\) and padding_idx\.",
     "检查进入它的 token id（tokenizer、词表、特殊 token）以及 padding_idx。"),
    (r"Check the embedding table: vocabulary size, resized or tied embeddings, and the checkpoint conversion\.",
     "检查 embedding 表：词表大小、是否调整大小或共享 embedding，以及 checkpoint 转换。"),
    (r"Check the variant: exact \(erf\) vs tanh-approximated GELU, SiLU vs a fused SwiGLU, and the dtype it runs in\.",
     "检查变体：精确（erf）GELU 还是 tanh 近似 GELU、SiLU 还是融合的 SwiGLU，以及其运行的 dtype。"),
    (r"Check the interpolation mode, align_corners and the output size/scale factor on both sides\.",
     "检查两侧的插值模式、align_corners 以及输出尺寸/缩放因子。"),
    (r"Check the reduced dims, keepdim and the accumulation dtype \(a low-precision sum over a long axis\)\.",
     "检查归约的 dim、keepdim 以及累加 dtype（在长轴上做低精度求和）。"),
    (r"Check the dtype both sides cast to \(float16 vs bfloat16 vs float32\) and where the cast happens\.",
     "检查两侧转换到的 dtype（float16、bfloat16 还是 float32）以及转换发生的位置。"),
    (r"The forward pass agrees: check (?P<op>\S+)'s backward — a custom autograd Function or a fused kernel's gradient "
     r"formula, gradient scaling \(loss scale, clipping\) and hooks on the gradients\.",
     "前向一致：检查 {op} 的反向 — 自定义 autograd Function 或融合内核的梯度公式、梯度缩放（损失缩放、裁剪）以及梯度上的 hook。"),
    (r"Re-run (?P<op>\S+) alone on both platforms from the golden's recorded inputs and compare the inputs and outputs "
     r"with (?P<t_call>.+): equal inputs with different outputs are the kernel's\.",
     "在两个平台上用 golden 记录的输入单独重跑 {op}，并用 {t_call} 对比输入和输出：输入相同而输出不同，即为内核的问题。"),
    (r"Re-dump (?P<op>\S+) in tensor mode on both sides \(msprobe task 'tensor' with this API in its 'list'\), then "
     r"compare its inputs and outputs with (?P<call>.+): statistics alone cannot show that the inputs are identical\.",
     "在两侧以 tensor 模式重新 dump {op}（msprobe task 'tensor'，并把该 API 加入 'list'），再用 {call} 对比其输入和输出："
     "仅凭统计量无法证明输入完全相同。"),
    (r"Tell the kernel from its inputs: (?P<call>.+?) re-runs the call on the CPU from the target's recorded inputs "
     r"\(fault_enters: operator or inputs\)\.",
     "区分内核与输入：{call} 用目标侧记录的输入在 CPU 上重跑该调用（其结果判定差异来自算子本身还是其输入）。"),
    (r"^(?P<a>.+?) and (?P<b>acc-agent .+)$", "{a} 和 {b}"),
    (r"If the operator is random or order-dependent \(dropout, sampling, atomic reductions\), first compare two target "
     r"runs of the same input: (?P<call>.+?); a random operator is not a migration fault\.",
     "若该算子具有随机性或依赖执行顺序（dropout、采样、原子归约），先对比同一输入的两次目标侧运行：{call}；随机算子不是迁移问题。"),
    (r"Before reporting (?P<op>\S+) to the vendor, show its parameters are identical: dump them \(msprobe level 'mix' "
     r"records a module's parameters\) and compare them too\.",
     "向厂商上报 {op} 之前，先证明其参数完全相同：dump 参数（msprobe level 'mix' 会记录模块参数）并一并对比。"),
    (r"Its inputs and parameters are shown identical on both sides: report (?P<op>\S+) to the vendor with its recorded "
     r"inputs and outputs, arguments and dtypes, the framework, torch_npu and CANN versions, and these compare rows",
     "其输入和参数已证明两侧完全相同：向厂商上报 {op}，附上记录的输入输出、参数与 dtype、框架、torch_npu 和 CANN 版本，以及这些对比行"),
    (r"(?<=对比行)\.", "。"),
    (r"Find where values grow past the target dtype's range before (?P<op>\S+): compare the inputs' Max/Min with the "
     r"dtype's limit \((?P<limit>\S+) for (?P<dt>FP16|BF16|FP32)\); scale the loss/inputs, keep this operator in FP32, or "
     r"enable the framework's overflow-safe variant\.",
     "找出 {op} 之前数值在何处超出目标 dtype 的范围：将输入的 Max/Min 与 dtype 上限对比（{dt} 为 {limit}）；缩放 loss 或输入、"
     "将该算子保持 FP32，或启用框架的防溢出版本。"),
    (r"Look inside (?P<op>\S+) for an operation that is invalid on these inputs: 0/0, Inf - Inf, the square root, log or "
     r"fractional power of a negative number, a division by a zero norm or variance; replay it on the dumped inputs "
     r"against the golden's kernel and guard its input \(a clamp or an eps\) where the golden's kernel does\.",
     "检查 {op} 内部对这些输入无效的运算：0/0、Inf - Inf、负数的平方根、对数或分数次幂、除以为零的范数或方差；用 dump 的输入"
     "对照 golden 的内核重放该算子，并在 golden 内核做了保护之处同样保护其输入（截断或加 eps）。"),
    (r"Run msprobe's overflow check \(task overflow_check\) on the target to confirm the first overflowing call on every "
     r"rank\.", "在目标侧运行 msprobe 的溢出检测（task overflow_check），确认每个 rank 上第一个溢出的调用。"),
    (r"Make argument (?P<arg>\S+) of (?P<op>\S+) the same as on the golden side \((?P<v>.+?)\): it is read from a config "
     r"or default that differs between the two code bases\.",
     "让 {op} 的参数 {arg} 与 golden 侧一致（{v}）：它来自两套代码中不同的配置或默认值。"),
    (r"Check where the value comes from \(model config, a default changed between library versions\)\.",
     "检查该值的来源（模型配置，或在库版本之间改变的默认值）。"),
    (r"Check that both sides load the same checkpoint and that no weight is re-initialised or tied differently on the "
     r"target\.", "检查两侧加载的是否为同一 checkpoint，以及目标侧是否有权重被重新初始化或以不同方式共享。"),
    (r"Dump the code that builds it with msprobe's level mix or add it to the dump list\.",
     "用 msprobe 的 level mix dump 构建它的代码，或将其加入 dump 列表。"),
    (r"Add that code to the dump \(msprobe level mix, or a list of APIs\) and compare again\.",
     "将这段代码加入 dump（msprobe level mix 或 API 列表），然后重新对比。"),
    (r"Check the pairing of this row: a renamed or fused module on the target pairs different tensors; fix it with a "
     r"mapping \(target_name: golden_name\)\.", "检查该行的配对：目标侧改名或融合的模块会配对到不同的张量；用映射（target_name: golden_name）修正。"),
    (r"Compare layouts: the target may store the tensor transposed \(NCHW/NHWC, \[B,S,H\] vs \[S,B,H\]\) or reshaped\.",
     "对比布局：目标侧可能以转置（NCHW/NHWC、[B,S,H] 与 [S,B,H]）或 reshape 后的形式存储该张量。"),
    (r"Check in-place operators and graph fusions on the target: dump the un-fused graph\.", "检查目标侧的原地算子与图融合：dump 未融合的图。"),
    (r"Re-dump both runs with msprobe task 'statistics' \(the default\) or 'tensor', and check that names pair \(a "
     r"mapping file pairs renamed layers\)\.", "用 msprobe task 'statistics'（默认）或 'tensor' 重新 dump 两次运行，并检查名称能否配对（映射文件可配对改名的层）。"),
    (r"Compare post-processing \(decoding, argmax/top-k, thresholds\) between the two sides: run the golden side's "
     r"post-processing on the target's final outputs\.", "对比两侧的后处理（解码、argmax/top-k、阈值）：在目标侧的最终输出上运行 golden 侧的后处理。"),
    (r"If the end metric still differs, check evaluation data and metric code are the same\.", "若最终指标仍不同，检查评估数据和指标代码是否相同。"),
    (r"Rerun with another input to confirm the excursion is noise: it should move\.", "换一个输入重跑，确认该偏移是噪声：它应当会移动。"),
    (r"Pass a bench run \((?P<opt>[^)]+)\) to judge each layer against the baseline hardware\.", "传入 bench 运行（{opt}），以基线硬件为参照判定每一层。"),
    (r"Keep the layers where the error grows fastest in higher precision first \((?P<names>.+?)\) and the first layer "
     r"that loses precision \((?P<start>\S+)\); compare again and add more until the final error is within tolerance\.",
     "先将误差增长最快的层（{names}）和第一个损失精度的层（{start}）保持更高精度；重新对比，逐步增加，直到最终误差在容差内。"),
    (r"If the target quantises or computes in lower precision than the golden \(int8, FP16/BF16, HF32/TF32 matmuls\), "
     r"rerun that side once in higher precision: if all layers then agree, precision is the cause\.",
     "若目标侧做了量化或以低于 golden 的精度计算（int8、FP16/BF16、HF32/TF32 矩阵乘），以更高精度重跑一次：若各层随之一致，原因就是精度。"),
    (r"Check preprocessing on both sides: normalisation mean/std and scale, resize/crop, and the colour order \(RGB vs "
     r"BGR\) of the image loader; for text, the tokenizer and its vocabulary\.",
     "检查两侧的预处理：归一化的均值/标准差与缩放、resize/crop、图像加载的颜色顺序（RGB 还是 BGR）；文本则检查 tokenizer 及其词表。"),
    (r"Check the tensor layout fed to the model \(NCHW vs NHWC\) and the dtype cast of the input\.", "检查送入模型的张量布局（NCHW 还是 NHWC）以及输入的 dtype 转换。"),
    (r"Feed both runs the exact same saved input tensor \(disable random augmentation and shuffling\), then compare "
     r"again\.", "给两次运行输入完全相同的已保存输入张量（关闭随机数据增强和打乱），然后重新对比。"),

    (r"the target output of (?P<key>\S+) equals normalisation with the batch's own mean and variance \(residual "
     r"(?P<r>\S+)\): the layer runs in training mode on the target \(batch statistics\) where the golden uses its "
     r"running statistics",
     "{key} 的目标侧输出等于用 batch 自身均值和方差做的归一化（残差 {r}）：目标侧该层以训练模式运行（batch 统计量），"
     "而 golden 使用 running 统计量"),
    (r"the target output of (?P<key>\S+) equals normalisation with the running mean and variance \(residual "
     r"(?P<r>\S+)\): the target runs the layer in eval mode where the golden normalises with batch statistics "
     r"\(training mode\)", "{key} 的目标侧输出等于用 running 均值和方差做的归一化（残差 {r}）：目标侧该层以 eval 模式运行，"
     "而 golden 用 batch 统计量归一化（训练模式）"),
    (r"the target output of (?P<key>\S+) equals the normalisation with eps=(?P<eps>\S+) \(residual (?P<r>[^)]+)\)",
     "{key} 的目标侧输出等于 eps={eps} 的归一化（残差 {r}）"),
    (r" \(the call records eps=(?P<e>[^)]+)\)", "（调用记录的 eps={e}）"),
    (r"; the golden side uses eps=(?P<e>\S+?)(?=\.|$)", "；golden 侧使用 eps={e}"),
    (r"; the golden computes the exact \(erf\) one", "；golden 侧计算的是精确（erf）版本"),
    (r"; the golden computes the tanh-approximated one", "；golden 侧计算的是 tanh 近似版本"),
    (r"; the golden computes the sigmoid-approximated \(quick, x\*sigmoid\(1\.702x\)\) one",
     "；golden 侧计算的是 sigmoid 近似（quick）版本"),
    (r"the target output of (?P<key>\S+) equals the softmax of its input over dim (?P<d>\S+?)(?: \(the call records "
     r"dim=(?P<rd>[^)]+)\))? \(residual (?P<r>[^)]+)\), not over the axis the golden uses",
     "{key} 的目标侧输出等于其输入在 dim {d} 上的 softmax（残差 {r}），而不是 golden 所用的轴"),
    (r"(?P<pct>[\d.]+%) of the target output of (?P<key>\S+) is zeroed where the input is not and the rest is scaled "
     r"by (?P<s>\S+): dropout is active \(training mode\) on the target; the golden passes its input through",
     "{key} 的目标侧输出有 {pct} 在输入非零处被置零，其余乘以 {s}：目标侧 dropout 处于激活状态（训练模式）；golden 侧直接传递输入"),
    (r"the golden zeroes (?P<pct>[\d.]+%) of (?P<key>\S+)'s output and the target none: dropout is active on the "
     r"golden side only", "golden 侧将 {key} 的输出置零 {pct}，目标侧没有：只有 golden 侧 dropout 处于激活状态"),
    (r"the target calls (?P<a>\S+) where the golden calls (?P<b>\S+) \((?P<g>\S+)\); ",
     "目标侧调用 {a}，golden 侧在此处调用 {b}（{g}）；"),
    (r"the target calls (?P<a>\S+) where the golden calls (?P<b>\S+) \((?P<g>[^\s()]+)\)",
     "目标侧调用 {a}，golden 侧在此处调用 {b}（{g}）"),
    (r"re-computing (?P<key>\S+) in float64 from the target's own recorded inputs gives the target's output \(residual "
     r"(?P<r>[^)]+)\): the operator computes what its inputs say",
     "用目标侧自身记录的输入以 float64 重算 {key}，得到目标侧的输出（残差 {r}）：该算子的计算与其输入相符"),
    (r"re-computing (?P<key>\S+) in float64 from the target's own recorded inputs does not give the target's output "
     r"\(residual (?P<r>[^,]+), allowed (?P<a>[^)]+)\): the kernel computes something else",
     "用目标侧自身记录的输入以 float64 重算 {key}，得不到目标侧的输出（残差 {r}，允许 {a}）：内核算的是别的东西"),
    (r"none of the usual variants of (?P<key>\S+) \(re-computed in float64 from the target's recorded inputs\) gives "
     r"the target's output \(best residual (?P<r>[^)]+)\): the kernel computes something else",
     "{key} 的各种常见变体（用目标侧记录的输入以 float64 重算）都得不到目标侧的输出（最佳残差 {r}）：内核算的是别的东西"),
    # compare_dumps: why nothing could be compared
    (r"inconclusive: neither dump records a tensor \(msprobe wrote no call at level (?P<lv>[^)]+)\)\. Level L0 "
     r"records only nn\.Module calls, so a model that calls torch\.nn\.functional or tensor methods directly records "
     r"nothing: dump both runs again at level L1 \(API calls\) or mix",
     "无法判定：两个 dump 都没有记录任何张量（msprobe 在 {lv} 级别没有写下任何调用）。L0 级别只记录 nn.Module 调用，直接调用 "
     "torch.nn.functional 或张量方法的模型什么也不会记录：请用 L1 级别（API 调用）或 mix 级别重新 dump 两侧"),
    (r"inconclusive: neither dump records a tensor \(msprobe wrote no call\)\. Level L0 records only nn\.Module calls, "
     r"so a model that calls torch\.nn\.functional or tensor methods directly records nothing: dump both runs again "
     r"at level L1 \(API calls\) or mix",
     "无法判定：两个 dump 都没有记录任何张量（msprobe 没有写下任何调用）。L0 级别只记录 nn.Module 调用，直接调用 "
     "torch.nn.functional 或张量方法的模型什么也不会记录：请用 L1 级别（API 调用）或 mix 级别重新 dump 两侧"),
    (r"inconclusive: no tensor of the target dump matched the golden dump by name \(unmatched (?P<g>\d+) golden / "
     r"(?P<t>\d+) target\); check the mapping file \((?P<m>\S+)\) or try (?P<o>\S+)",
     "无法判定：目标侧 dump 中没有任何张量按名称与 golden dump 配对（未配对：golden {g} 个 / 目标侧 {t} 个）；请检查映射文件"
     "（{m}）或尝试 {o}"),
    # leaves.describe: how a leaf tensor differs
    (r"the same values with another shape \((?P<t>\[[^\]]*\]) vs golden (?P<g>\[[^\]]*\])\)", "数值相同但形状不同（{t}，golden 为 {g}）"),
    (r"another shape: (?P<t>\S+(?:, \S+)*?) vs golden (?P<g>\S+(?:, \S+)*)", "形状不同：{t}，golden 为 {g}"),
    (r"the golden tensor transposed \(same values, last two axes swapped\): a layout or checkpoint-conversion error",
     "是 golden 张量的转置（数值相同，最后两个轴交换）：布局或 checkpoint 转换错误"),
    (r"the golden tensor transposed \(last two axes swapped\) with every element (?P<x>\S+)x the golden's \(a "
     r"constant factor: a scaling or a wrong config value\)",
     "是 golden 张量的转置（最后两个轴交换），且每个元素都是 golden 的 {x} 倍（常数因子：缩放或配置值有误）"),
    (r"the same values in another order \(a reordering, e\.g\. permuted channels or heads\)",
     "数值相同但顺序不同（重排，例如通道或 head 被置换）"),
    (r"every element is (?P<x>\S+)x the golden's \(a constant factor: a scaling or a wrong config value\)",
     "每个元素都是 golden 的 {x} 倍（常数因子：缩放或配置值有误）"),
    (r"another constant: (?P<t>\S+) everywhere instead of (?P<g>\S+)", "另一个常数：处处为 {t}，而不是 {g}"),
    (r"every element is shifted by (?P<x>\S+) \(a constant offset\)", "每个元素都偏移了 {x}（常数偏移）"),
    (r"(?P<pct>[\d.]+%) of its elements differ \(relative error above (?P<tol>[^)]+)\)",
     "其 {pct} 的元素不同（相对误差超过 {tol}）"),
    (r"(?P<n>\d+) of (?P<m>\d+) elements differ \((?P<pct>[\d.]+%)\)", "{m} 个元素中有 {n} 个不同（{pct}）"),
    (r"the mask equals the golden one shifted by (?P<k>[-+]?\d+) column\(s\): an off-by-one in how it is built",
     "该掩码等于 golden 掩码平移 {k} 列：构建方式差了一位"),
    (r"the mask equals the golden one shifted by (?P<k>[-+]?\d+) row\(s\): an off-by-one in how it is built",
     "该掩码等于 golden 掩码平移 {k} 行：构建方式差了一位"),
    (r"one value in every element: (?P<t>\S+) on the target, (?P<g>\S+) on the golden",
     "每个元素都是同一个值：目标侧为 {t}，golden 侧为 {g}"),
    (r"Max, Min and Mean are all (?P<d>\S+) from the golden's: most likely every element shifted by a constant \(an "
     r"offset: positions or indices counted from another start, a bias added twice or left out\)",
     "Max、Min 和 Mean 都比 golden 的偏移 {d}：很可能每个元素都被加上了同一个常数（偏移：位置或索引的起点不同，或偏置被加了两次或漏加）"),
    (r"Max, Min, Mean and Norm are all (?P<x>\S+)x the golden's: most likely every element scaled by a constant factor "
     r"\(a scaling or a wrong config value\)", "Max、Min、Mean 和 Norm 都是 golden 的 {x} 倍：很可能每个元素都被乘以同一个常数因子"
     "（缩放或配置值有误）"),
    (r"the same Max and Min, the only statistics msprobe records for an integer or bool tensor, but another md5 "
     r"digest: other elements hold other values",
     "Max 与 Min 相同（msprobe 对整数或布尔张量只记录这两项），但 md5 摘要不同：其他元素的取值不同"),
    (r"^statistics differ: (?P<l>.+)$", "统计量不同：{l}"),
    (r"statistics differ: (?=(?:Max|Min|Mean|Norm) )", "统计量不同："),
    (r"\b(?P<k>Max|Min|Mean|Norm) (?P<a>-?(?:[\d.]+(?:e[-+]?\d+)?|Inf|NaN)) vs (?P<b>-?(?:[\d.]+(?:e[-+]?\d+)?|Inf|NaN))\b",
     "{k} 目标侧 {a}、golden 侧 {b}"),
    (r"the same Max and Min, and a Mean and Norm that differ only by the order they were summed in: most likely the "
     r"same values in another arrangement, e\.g\. transposed or permuted \(a layout or checkpoint-conversion error\)",
     "Max 和 Min 相同，Mean 和 Norm 仅因求和顺序不同而有差异：很可能是相同的数值换了排列方式，例如被转置或置换（布局或 "
     "checkpoint 转换错误）"),
    (r"the same statistics \(Max/Min/Mean/Norm\) but other bytes \(md5\): most likely the same values in another "
     r"order, e\.g\. transposed", "统计量（Max/Min/Mean/Norm）相同但字节不同（md5）：很可能是相同的数值换了顺序，例如被转置"),
    # values inside sentences already translated: a tensor where the other run passed a scalar, an absent value
    (r"a tensor of shape (?P<s>\[[^\]]*\])", "形状为 {s} 的张量"),
    (r"a tensor of shape (?P<s>\[[^\]]*\]) on the golden, (?P<b>\S+) on the target",
     "golden 侧为形状 {s} 的张量，目标侧为 {b}"),
    (r"(?P<a>\S+) on the golden, a tensor of shape (?P<s>\[[^\]]*\]) on the target",
     "golden 侧为 {a}，目标侧为形状 {s} 的张量"),
    (r"(?P<a>\S+) on the golden, (?P<b>\S+) on the target", "golden 侧为 {a}，目标侧为 {b}"),
    (r"(?<=为) ?none\b", "无"),
    (r"(?<=（)none(?=）)", "无"),
    # explain.operator_actions: arguments, parameters, masks, other leaves
    (r"Compare the weights that feed (?P<op>\S+) \((?P<arg>[^)]+)\) in the two checkpoints: (?P<t_d>.+?)\. Fix the "
     r"checkpoint conversion or loading \(transposed, scaled or re-laid-out weights\), then compare again\.",
     "对比两个 checkpoint 中输入 {op} 的权重（{arg}）：{t_d}。修正 checkpoint 的转换或加载（转置、缩放或重新布局的权重），然后重新对比。"),
    (r"Compare the weights that feed (?P<op>\S+) \((?P<arg>[^)]+)\) in the two checkpoints\. Fix the checkpoint "
     r"conversion or loading \(transposed, scaled or re-laid-out weights\), then compare again\.",
     "对比两个 checkpoint 中输入 {op} 的权重（{arg}）。修正 checkpoint 的转换或加载（转置、缩放或重新布局的权重），然后重新对比。"),
    (r"Compare how the mask/index tensor (?P<arg>\S+) of (?P<op>\S+) is built on the two sides(?: \((?P<t_d>.+)\))?: "
     r"msprobe does not dump the APIs that build it \(triu/tril, arange, comparisons\), so the difference first shows "
     r"here\.", "对比两侧如何构建 {op} 的掩码/索引张量 {arg}（{t_d}）：msprobe 不会 dump 构建它的 API（triu/tril、arange、比较），"
     "因此差异首先在这里出现。"),
    (r"^on the golden the output of (?P<k>\S+); no call the target dumps before it produced it$",
     "golden 侧由 {k} 输出；目标侧在它之前没有任何已 dump 的调用产生它"),
    (r"(?P<name>\S+) holds integers, of which msprobe records only Max and Min, and these agree; on the target it is the "
     r"output of (?P<made>\S+), a call the golden does not make, and (?P<shows>\S+) differs \((?P<t_err>[^()]*)\): the "
     r"difference enters (?P<node>\S+) through (?P<arg>\S+)",
     "{name} 为整数张量，msprobe 只记录其 Max 和 Min，两者一致；在目标侧它是 {made} 的输出，golden 侧没有这个调用，而 "
     "{shows} 不同（{t_err}）：差异经由 {arg} 进入 {node}"),
    (r"made on the target by (?P<made>\S+), a call the golden does not make; its Max and Min agree, all msprobe records "
     r"of an integer tensor", "在目标侧由 {made} 生成，golden 侧没有这个调用；其 Max 和 Min 一致，而整数张量 msprobe 只记录这两项"),
    (r"^on the golden the output of (?P<k>\S+), a call the target does not make$",
     "golden 侧由 {k} 输出，而目标侧没有这个调用"),
    (r"^on the target the output of (?P<k>\S+), a call the golden does not make$",
     "目标侧由 {k} 输出，而 golden 侧没有这个调用"),
    (r"The golden computes (?P<arg>\S+) of (?P<op>\S+) with (?P<k>\S+); the target does not make that call: look for a "
     r"call the port left out or added there \(a scaling, a normalisation, a residual or a cast\)(?P<t_d>; .+)?\.",
     "golden 用 {k} 计算 {op} 的 {arg}；目标侧没有这个调用：查找迁移时在此处漏掉或多加的调用（缩放、归一化、残差或类型转换）{t_d}。"),
    (r"The golden computes (?P<arg>\S+) of (?P<op>\S+) with (?P<k>\S+); the target makes no such call before (?P=op) "
     r"\(a call of that name comes later or not at all\): look for a call the port left out or added there \(a "
     r"scaling, a normalisation, a residual or a cast\)(?P<t_d>; .+)?\.",
     "golden 用 {k} 计算 {op} 的 {arg}；目标侧在 {op} 之前没有这样的调用（同名调用出现得更晚或根本没有）：查找迁移时在此处漏掉或多加的调用"
     "（缩放、归一化、残差或类型转换）{t_d}。"),
    (r"^; (?P<t_d>.+)$", "；{t_d}"),
    (r"If the call is only named otherwise on the target, pair the two with a mapping file, then compare again\.",
     "若该调用在目标侧只是名称不同，用映射文件把两者配对后再比较。"),
    (r"Find the code that produces (?P<arg>\S+) of (?P<op>\S+): no dumped call produced it(?: \((?P<t_d>.+)\))?; dump "
     r"that code \(msprobe list/level mix\) to see which step differs\.",
     "找到产生 {op} 的 {arg} 的代码：没有任何已 dump 的调用产生它（{t_d}）；dump 这段代码（msprobe list/level mix）以查看哪一步不同。"),
    (r"Look at what happens to (?P<name>\S+) between the call that produced it and (?P<op>\S+): a hook \(register_hook, "
     r"forward hooks\), an in-place operation, a custom autograd Function or an operator msprobe does not dump "
     r"\(view/transpose/cat, custom kernels\)\.",
     "检查 {name} 在产生它的调用与 {op} 之间发生了什么：hook（register_hook、forward hook）、原地操作、自定义 autograd Function，"
     "或 msprobe 不会 dump 的算子（view/transpose/cat、自定义内核）。"),
    (r"Compare its (?P<arg>\S+) \(a weight or buffer\) file by file: (?P<call>.+)\.$", "逐个文件对比其 {arg}（权重或缓冲区）：{call}。"),
    (r" — the replay bundle \((?P<call>.+?)\) holds all of it with a standalone repro\.py\.",
     " — replay 打包（{call}）包含上述全部内容及独立的 repro.py。"),
    # msprobe's own messages (its CSV's Err_message), and the row messages built on them
    (r"error: There is nan/inf/-inf in the maximum or minimum value of NPU\.", "错误：NPU 侧最大值或最小值中有 nan/inf/-inf。"),
    (r"error: The NormRelativeErr of output is greater than 0\.5\.", "错误：输出的 NormRelativeErr 大于 0.5。"),
    (r"error: The Required_Grad of NPU and Bench are inconsistent", "错误：NPU 与 Bench 的 Required_Grad 不一致"),
    (r"error: The scalar parameters of NPU and Bench are inconsistent\.", "错误：NPU 与 Bench 的标量参数不一致。"),
    (r"error: The dtype of NPU and Bench are inconsistent\.", "错误：NPU 与 Bench 的 dtype 不一致。"),
    (r"error: The shape of NPU and Bench are inconsistent\.", "错误：NPU 与 Bench 的形状不一致。"),
    (r"warning: The norm relative error of output is 10 times that of input\.", "警告：输出的范数相对误差是输入的 10 倍。"),
    (r"md5 differs", "md5 不同"),
    (r"the end of the pass \((?P<name>\S+)\) is within precision again: on these inputs its effect on the result stays "
     r"inside rounding, but the call computes something else, which other inputs or longer training can expose\.",
     "该方向末尾（{name}）又回到精度范围内：在这些输入上它对结果的影响仍在舍入之内，但该调用计算的是另一回事，换用其他输入或更长的训练会暴露出来。"),
    (r"recorded (?P<stats>(?:(?:Max|Min|Mean|Norm) -?(?:Inf|NaN)(?:, )?)+) on the target",
     "目标侧记录的 {stats}"),
    (r"recorded (?P<stats>(?:(?:Max|Min|Mean|Norm) -?(?:Inf|NaN)(?:, )?)+) on the golden",
     "golden 侧记录的 {stats}"),
    (r"statistics not comparable", "统计量无法比较"),
    (r"dtype differs: target (?P<t>\S+) vs golden (?P<g>\S+)", "dtype 不同：目标侧 {t}，golden 侧 {g}"),
    (r"Inf/NaN at other positions \((?P<t>\d+) on the target, (?P<g>\d+) on the golden\): ",
     "Inf/NaN 位于不同位置（目标侧 {t} 个，golden 侧 {g} 个）："),
    (r"N/A: NaN/Inf positions differ \(target NaN (?P<tn>\d+), Inf (?P<ti>\d+); golden NaN (?P<gn>\d+), Inf (?P<gi>\d+)\)",
     "N/A：NaN/Inf 的位置不同（目标侧 NaN {tn} 个、Inf {ti} 个；golden 侧 NaN {gn} 个、Inf {gi} 个）"),
    (r"shape unmatched: target (?P<t>\[[^\]]*\]) vs golden (?P<g>\[[^\]]*\]) \(after squeeze\)",
     "shape unmatched：目标侧 {t}，golden 侧 {g}（squeeze 之后）"),

    # ------------------------------------------------------------------ compare_loss_curves
    (r"Ascend migration acceptance", "昇腾迁移验收"),
    (r"all (?P<n>\d+) accuracy criteria of the (?P<t_p>.+?) profile met: (?P<t_list>.+?)(?P<t_warn>; \d+ warning\(s\) .*)?$",
     "{t_p} 标准的全部 {n} 项精度判据均满足：{t_list}{t_warn}"),
    (r"(?P<n>\d+) of (?P<m>\d+) accuracy criteria of the (?P<t_p>.+?) profile failed: (?P<t_list>.+?)"
     r"(?P<t_warn>; \d+ warning\(s\) .*)?$", "{t_p} 标准的 {m} 项精度判据中有 {n} 项未满足：{t_list}{t_warn}"),
    (r"; (?P<n>\d+) warning\(s\) about the step axes or the baseline's noise, listed with the result",
     "；有 {n} 条关于步数轴或基线噪声的警告，随结果列出"),
    (r"(?P<m>grad norm|loss|lr|loss scale) mean relative error (?P<v>[\d.]+ %) ≤ (?P<lim>[\d.]+ %)",
     "{m} 平均相对误差 {v} ≤ {lim}"),
    (r"(?P<m>grad norm|loss|lr|loss scale) mean relative error (?P<v>[\d.]+ %) > (?P<lim>[\d.]+ %)",
     "{m} 平均相对误差 {v} > {lim}"),
    (r"(?P<m>grad norm|loss) first-step relative error (?P<v>[\d.]+ %) ≤ (?P<lim>[\d.]+ %) relative, (?P<a>\S+) ≤ "
     r"(?P<al>\S+) absolute", "{m} 首步相对误差 {v} ≤ 相对 {lim}，{a} ≤ 绝对 {al}"),
    (r"(?P<m>grad norm|loss) first-step relative error (?P<v>[\d.]+ %) (?P<op>[≤>]) (?P<lim>[\d.]+ %)",
     "{m} 首步相对误差 {v} {op} {lim}"),
    (r"the baseline's own step-to-step (?P<m>grad norm|loss) noise \((?P<noise>[\d.]+ %)\) is larger than the "
     r"(?P<lim>[\d.]+ %) limit of the mean relative error: curves smoothed over (?P<n>\d+) points compared as well, judged "
     r"on the raw curves \((?P<raw>[\d.]+ %)\), which meet the limit; smoothed (?P<sm>[\d.]+ %)",
     "基线自身的逐步 {m} 噪声（{noise}）大于平均相对误差的限值 {lim}：也对比了 {n} 点平滑后的曲线，按原始曲线判定（{raw}），满足限值；"
     "平滑后 {sm}"),
    (r"the baseline's own step-to-step (?P<m>grad norm|loss) noise \((?P<noise>[\d.]+ %)\) is larger than the "
     r"(?P<lim>[\d.]+ %) limit of the mean relative error: curves smoothed over (?P<n>\d+) points compared as well, judged "
     r"on the raw curves \((?P<raw>[\d.]+ %)\)",
     "基线自身的逐步 {m} 噪声（{noise}）大于平均相对误差的限值 {lim}：也对比了 {n} 点平滑后的曲线，按原始曲线判定（{raw}）"),
    (r"the logs start at different steps \(baseline (?P<b>\S+), target (?P<t>\S+)\): ", "两份日志的起始步不同（基线 {b}，目标 {t}）："),
    (r"(?P<t_list>.+) \((?P<t_p>[^()]+) profile\); (?P<m>grad norm|loss|lr|loss scale) first leaves its limit at step "
     r"(?P<step>\d+)", "{t_list}（{t_p} 标准）；{m} 在第 {step} 步首次超出限值"),
    (r"^(?P<t_list>.+) \((?P<t_p>[^()]+) profile\)$", "{t_list}（{t_p} 标准）"),
    (r"(?P<ms>[\w ,]+?) bit-identical over (?P<n>\d+) compared steps", "{ms} 在对比的 {n} 步上逐位一致"),
    (r"; judged on smoothed curves \(the baseline's own noise is above the limit\): (?P<l>.+?)(?=;|$)",
     "；按平滑后曲线判定（基线自身噪声高于限值）：{l}"),
    (r"; performance outside its limits \(reported, not judged here\): (?P<l>.+)$", "；性能指标超出其限值（仅报告，此处不作判定）：{l}"),
    (r"no recognisable metric in (?P<p>\S+) \((?P<d>[^)]*)\)", "{p} 中没有可识别的指标（{d}）"),
    (r"no (?P<m>[\w ]+?) series in the (?P<t_side>baseline|target) log", "{t_side} 日志中没有 {m} 序列"),
    (r"no accuracy criterion of the (?P<t_p>.+?) profile could be evaluated \((?P<t_why>.+); common metrics: "
     r"(?P<c>[^)]*)\)$", "{t_p} 标准的精度判据均无法评估（{t_why}；共同指标：{c}）"),
    (r"no accuracy metric in both logs", "两份日志中没有共同的精度指标"),
    (r"^baseline log: (?P<t_w>.+)$", "基线日志：{t_w}"),
    (r"^target log: (?P<t_w>.+)$", "目标日志：{t_w}"),
    (r"(?P<m>grad norm|loss|lr|loss scale) is NaN/Inf at step (?P<s>\d+)", "{m} 在第 {s} 步为 NaN/Inf"),
    (r"the target is NaN/Inf at step\(s\) (?P<s>[\d, ]+)", "目标侧在第 {s} 步为 NaN/Inf"),
    (r"judged on the smoothed curves \((?P<v>[\d.]+ %); raw (?P<r>[\d.]+ %)\)", "按平滑后曲线判定（{v}；原始 {r}）"),
    (r"curves smoothed over (?P<n>\d+) points compared as well, ", "也对比了 {n} 点平滑后的曲线，"),
    (r"the baseline's own step-to-step (?P<m>grad norm|loss|lr|loss scale) noise \((?P<noise>[\d.]+ %)\) is larger "
     r"than the (?P<lim>[\d.]+ %) limit of the mean relative error: ",
     "基线自身的逐步 {m} 噪声（{noise}）大于平均相对误差的限值 {lim}："),
    (r"every overlapping step was left out \(first (?P<n>\d+) steps / warm-up\)", "所有重叠的步都被排除了（前 {n} 步 / 预热）"),
    (r"the logs count steps in different units: the baseline by (?P<b>[^,]+), the target by (?P<t>[^;]+); points with "
     r"the same number may not be the same point of training",
     "两份日志计步单位不同：基线按 {b}，目标按 {t}；编号相同的点可能不是训练中的同一时刻"),
    (r"the (?P<t_side>baseline|target) log numbers its points by record \(1, 2, 3 in file order\), not by optimisation "
     r"step; the curves line up only if both logged at the same interval",
     "{t_side} 日志按记录编号（文件顺序 1、2、3），而不是按优化步；只有两侧记录间隔相同时曲线才能对齐"),
    (r"the logs use different intervals: the baseline every (?P<b>\d+), the target every (?P<t>\d+) step\(s\); compared "
     r"on the (?P<t_sp>baseline|target)'s steps, the (?P<t_de>baseline|target)'s (?P<how>values at those steps|values "
     r"interpolated between its points)", "两份日志的记录间隔不同：基线每 {b} 步，目标每 {t} 步；按 {t_sp} 的步对比，{t_de} 取{how}"),
    (r"^baseline$", "基线"), (r"^target$", "目标"),
    (r"^values at those steps$", "这些步上的值"), (r"^values interpolated between its points$", "其相邻点之间插值得到的值"),
    (r"the step ranges differ by a factor of about (?P<f>\d+) \(baseline (?P<b>[^,]+), target (?P<t>[^)]+)\): the "
     r"(?P<t_big>baseline|target) log may count samples or records rather than optimisation steps, or the runs have "
     r"different lengths", "两份日志的步数范围相差约 {f} 倍（基线 {b}，目标 {t}）：{t_big} 日志可能按样本或记录计数而非优化步，或两次运行长度不同"),
    (r"no overlapping steps \(baseline (?P<b>[^,]+), ", "没有重叠的步（基线 {b}，"),

    # ------------------------------------------------------------------ measure_performance / compare_performance
    (r"device-only: the model's forward pass only, no pre/post-processing", "仅设备侧：只含模型前向，不含前后处理"),
    (r"end-to-end: (?P<rest>.+)$", "端到端：{rest}"),
    (r"first calls pay for allocation and cache warm-up", "最初几次调用包含内存分配与缓存预热开销"),
    (r"(?P<n>\d+) samples give stable p50/p95", "{n} 个样本可得到稳定的 p50/p95"),
    (r"none \(numpy on CPU is synchronous\)", "无（CPU 上的 numpy 本身是同步的）"),
    (r"samples/s = batch_size / mean latency", "samples/s = batch 大小 / 平均时延"),
    (r" \(per sample\)", "（按样本计）"),
    (r"requests/s = 1 / mean latency", "requests/s = 1 / 平均时延"),
    (r"sequential, single request at a time", "顺序执行，每次一个请求"),
    (r"sequential, one request at a time", "顺序执行，每次一个请求"),
    (r"per-call overhead: the ratio falls from (?P<a>\S+) at batch (?P<ba>\d+) to (?P<b>\S+) at batch (?P<bb>\d+) "
     r"\(host-bound Python, kernel launch latency, small-batch inefficiency\)",
     "单次调用开销：比值从 batch {ba} 时的 {a} 降到 batch {bb} 时的 {b}（受主机侧 Python、内核启动时延、小 batch 效率低的限制）"),
    (r"device execution is slower on the target \(the timed forward pass itself\): to check — dynamic shapes causing "
     r"recompilation \(fix shapes\), FP32 where FP16/BF16 was intended, and on an Ascend NPU operators falling back "
     r"from AI Core to AICPU; a profile \(torch_npu\.profiler / msprof\) shows which operators take the time",
     "目标侧设备执行更慢（被计时的前向本身）：待检查 — 动态 shape 导致重新编译（固定 shape）、本应 FP16/BF16 却用了 FP32，"
     "以及在昇腾 NPU 上算子从 AI Core 回退到 AICPU；用 profile（torch_npu.profiler / msprof）可看出哪些算子耗时"),
    (r"host-side preprocessing \(decode/resize/normalise\) is slower on the target host CPU: check dataloader workers, "
     r"CPU affinity/NUMA binding, and whether the baseline ran preprocessing on the GPU",
     "目标主机 CPU 上的预处理（解码/resize/归一化）更慢：检查 dataloader worker 数、CPU 亲和性/NUMA 绑定，以及基线是否在 GPU 上做预处理"),
    (r"postprocessing \(NMS, decoding, \.cpu\(\)/\.item\(\) copies\) is slower: operators falling back to AICPU/host, "
     r"or synchronising device-to-host copies inside the loop",
     "后处理（NMS、解码、.cpu()/.item() 拷贝）更慢：算子回退到 AICPU/主机，或循环内有同步的设备到主机拷贝"),
    (r"data loading or host-device transfer: use pinned memory and non_blocking copies, check file I/O and batch "
     r"collation", "数据加载或主机-设备传输：使用 pinned memory 与 non_blocking 拷贝，检查文件 I/O 与 batch 拼接"),
    (r"the '(?P<stage>[^']+)' stage takes (?P<ms>\S+) ms longer on the target", "'{stage}' 阶段在目标侧多耗时 {ms} ms"),
    (r"device throughput: the ratio grows from (?P<a>\S+) to (?P<b>\S+) with batch size \(compute or memory-bandwidth "
     r"bound kernels, precision mode\)", "设备吞吐：比值随 batch 从 {a} 增长到 {b}（内核受计算或显存带宽限制，或精度模式）"),
    (r"warm-up not finished: (?P<n>\d+) early timed iteration\(s\) on the target still look like warm-up "
     r"\(compilation\); raise (?P<opt>\S+)", "预热未完成：目标侧前 {n} 次计时迭代看起来仍是预热（编译）；请增大 {opt}"),
    (r"unstable target timings \(p95/p50 = (?P<r>\S+)\): background load or a busy device; run check-environment and "
     r"look at npu_busy", "目标侧计时不稳定（p95/p50 = {r}）：有后台负载或设备繁忙；请运行 check-environment 并查看 npu_busy"),
    (r"(?P<name>warmup|iterations|source|throughput definition|synchronisation|statistics|percentile method|concurrency)"
     r" differs: baseline (?P<b>.+), target (?P<t>.+)$", "{name} 不同：基线 {b}，目标 {t}"),
    (r"scope differs: baseline (?P<b>\S+), target (?P<t>\S+)", "测量范围不同：基线 {b}，目标 {t}"),
    (r"batch sizes measured on one side only \(not compared\): (?P<l>.+)$", "仅一侧测量的 batch（未对比）：{l}"),
]
