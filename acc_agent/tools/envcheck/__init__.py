"""The environment skill's parts, one job per module: rules, probes, checks, the snapshot diff, text.

``acc_agent.tools.environment`` registers the two tools and wires these together. The tool registry
imports every package under ``acc_agent.tools``, so this file stays empty of imports and effects.
"""
