"""``python -m acc_agent`` runs the CLI."""

from acc_agent.cli import main

main()
