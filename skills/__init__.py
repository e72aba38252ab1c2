"""Marks skills/ as the package ``acc_agent.resources.skills`` (see pyproject.toml).

Why a Python file in a data folder: an editable install only maps a sub-package onto a folder
outside ``acc_agent/`` when the folder holds an ``__init__.py``; with it, importlib.resources
finds these skill folders the same way in a checkout and in an installed wheel.
"""
