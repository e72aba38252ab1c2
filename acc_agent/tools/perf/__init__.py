"""The parts of the performance skill, one job per module, behind the two tools in ``tools/performance.py``.

Why a package of its own: the registry imports every public module under ``acc_agent/tools`` to find
tools, so this package and its modules import nothing heavy at module level and register nothing.
"""
