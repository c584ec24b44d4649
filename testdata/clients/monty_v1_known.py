"""Known differences between upstream's monty.v1 worker and monty-go's.

Each entry names a scenario of monty_v1.py whose outcome differs, with the
reason. docs/conformance.md lists the same differences for readers.
"""

KNOWN: dict[str, str] = {}
