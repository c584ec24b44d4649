"""Known differences between upstream's monty.v1 worker and monty-go's.

Each entry names a scenario of monty_v1.py whose outcome differs, with the
reason. docs/conformance.md lists the same differences for readers.
"""

KNOWN: dict[str, str] = {
    'assert_annotations': (
        "Configure.assert_message_annotations is not applied: monty-go's interpreter module always "
        'annotates failed asserts with the default 120-byte operand reprs (upstream\'s default), so '
        "assert_message_annotations=False or a custom length still gives `assert 'abcdefgh' == 'xyz'`. "
        'Honouring it needs the option in the wasm shim (wasm/src) and a rebuild of the module.'
    ),
}
