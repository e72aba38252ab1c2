"""One module per report section: each builds a typed view from the typed tool outputs it needs.

Why views and not dicts: templates read attributes, and a renamed tool field breaks the type check
here instead of silently printing N/A in a report.
"""
