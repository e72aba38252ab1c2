"""The application layer: runs the skills a project configures and writes the deliverables.

It sits above the tools (which it calls through the registry's catalogue) and the renderer (which
turns the typed results into markdown), and below the front ends (CLI, MCP server) that expose it.
"""
