"""Known differences between upstream's monty.v1 worker and monty-go's, and
the comparison monty_v1.py, monty_v1_ws.py and integrations/run.py share.

Each entry names a scenario whose outcome differs, with the reason.
docs/conformance.md lists the same differences for readers.
"""

KNOWN: dict[str, str] = {}

# monty_v1_oscalls.py's outcomes are keyed CASE/CONTEXT/TRANSPORT.
_ZERO_ASYNC_SLEEP = (
    "asyncio.sleep(0) (or a negative delay) with sleep='call_host': upstream's interpreter asks the host for "
    'a 0-second sleep; ours returns at once without asking, because the module runs every sleep in system '
    'mode and Monty completes a zero async sleep itself there (a module change: the sleep mode as part of '
    "the session's policy in the ABI)"
)
OSCALLS_KNOWN: dict[str, str] = {
    f'sleep_{case}_call_host{how}/async/{transport}': _ZERO_ASYNC_SLEEP
    for case in ('zero_delay', 'negative')
    for how in ('', '_refused', '_no_handler')
    for transport in ('sync-pool', 'async-pool')
}


def compare(
    names, ref: dict[str, str], got: dict[str, str], ours: str, known_list: dict[str, str] = KNOWN, where: str = 'monty_v1_known.py'
) -> list[str]:
    """Compares each scenario's outcome under upstream's worker (ref) with
    ours (got), printing the ones that agree, and returns the problems: a
    failure on either side, a difference not in known_list (KNOWN, kept in
    where), an entry of it that no longer differs."""
    problems = []
    for name in names:
        r, g, known = ref[name], got[name], known_list.get(name)
        if r.startswith('FAILED'):
            problems.append(f'{name}: fails under upstream worker:\n{r}')
        elif g.startswith('FAILED'):
            problems.append(f'{name}: fails on {ours}:\n{g}\n(upstream: {r})')
        elif r != g and known is None:
            problems.append(f'{name}: differs\n  upstream: {r}\n  ours:     {g}')
        elif r == g and known is not None:
            problems.append(f'{name}: listed in {where} but no longer differs; remove the entry')
        else:
            print(f'ok {name}' + (' (known difference)' if known else ''))
    return problems
