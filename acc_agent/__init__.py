"""acc-agent: check a GPU→Ascend NPU migration with real numbers.

Kept import-free on purpose: the CLI must start fast, so nothing heavy loads here.
"""

__version__ = "0.1.0"
