"""The application layer: runs the skills a project configures and writes the deliverables.

It sits above the tools (which it runs by name, tools.spec.skill_tool) and the renderer (which
turns the typed results into markdown), and below the front ends (CLI, MCP server) that expose it.
"""
