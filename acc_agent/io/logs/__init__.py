"""Training-log readers: one small parser per format behind one interface.

``parse_log(path)`` detects the format and returns a :class:`ParsedLog` with canonical metric
series per run. A new format is one module in ``formats/`` with a :class:`LogFormat` subclass
added to ``formats.ALL_FORMATS``.
"""

from __future__ import annotations

from acc_agent.io.logs.base import LogFormat, Record
from acc_agent.io.logs.collect import ParsedLog, RunData, Series, parse_log

__all__ = ["LogFormat", "ParsedLog", "Record", "RunData", "Series", "parse_log"]
