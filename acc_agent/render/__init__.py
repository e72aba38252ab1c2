"""See design notes: one module per job; nothing heavy is imported at package import time."""
