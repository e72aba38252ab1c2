"""The known log formats, in detection-priority order (ties go to the earlier one)."""

from __future__ import annotations

from acc_agent.io.logs.base import LogFormat
from acc_agent.io.logs.formats.csv_metrics import CsvMetrics, LightningCsv
from acc_agent.io.logs.formats.hf_trainer_state import HfTrainerState
from acc_agent.io.logs.formats.hf_trainer_text import HfTrainerText
from acc_agent.io.logs.formats.imagenet_text import ImagenetText
from acc_agent.io.logs.formats.jsonl import JsonLines
from acc_agent.io.logs.formats.megatron import MegatronText
from acc_agent.io.logs.formats.megatron_golden import MegatronGolden
from acc_agent.io.logs.formats.mindspeed_json import MindSpeedBaselineJson
from acc_agent.io.logs.formats.mindspore import MindSporeText
from acc_agent.io.logs.formats.mmcv import MmcvText
from acc_agent.io.logs.formats.mmengine import MmengineText
from acc_agent.io.logs.formats.result_table import ResultTable
from acc_agent.io.logs.formats.tensorboard_events import TensorBoardEvents
from acc_agent.io.logs.formats.timm_text import TimmText

ALL_FORMATS: tuple[LogFormat, ...] = (
    MegatronGolden(),
    MindSpeedBaselineJson(),
    HfTrainerState(),
    MegatronText(),
    MmengineText(),
    MmcvText(),
    MindSporeText(),
    ImagenetText(),
    TimmText(),
    HfTrainerText(),
    LightningCsv(),
    CsvMetrics(),
    JsonLines(),
    ResultTable(),
    TensorBoardEvents(),
)

BY_NAME = {f.name: f for f in ALL_FORMATS}
