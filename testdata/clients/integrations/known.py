"""Known differences between upstream's worker and ours, met through the
integrations run.py drives: "module.snippet" -> the reason. docs/
conformance.md lists the same. An entry that no longer differs fails the
run, so the list cannot go stale."""

KNOWN: dict[str, str] = {
    'haystack_tool.type_check_under_small_memory_limit': (
        "upstream's worker counts what its type checker keeps (about 5 MB) against the session's max_memory, "
        'so with type_check and a limit under about 5.5 MB code that allocates anything raises MemoryError; '
        "monty-go's checker is a module of its own, outside the interpreter's budget, and the code runs"
    ),
}
