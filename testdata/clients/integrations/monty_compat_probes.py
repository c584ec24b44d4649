"""monty-compat 0.5.0's behavioural discovery, as its users run it: the
whole probe catalog (269 probes of the language surface, each run on
CPython and on Monty through `PydanticMontyRunner`, a pydantic-monty pool of
one worker with `request_timeout=2.0`, and classified: supported, a
semantic mismatch, unsupported at parse, type check or run time, crash,
timeout), one snippet per group of categories; and the runner's kill and
recovery: a probe that never ends is cut at the request timeout (the pool
kills its worker) and the next probe runs on a new one.
"""

from __future__ import annotations

from collections import defaultdict

from monty_compat.probe_catalog import BASELINE_PROBES
from monty_compat.probes import ProbeSpec, ProbeStatus, PydanticMontyRunner, classify_monty_error, run_probe, run_probes

from common import snippet

# The catalog's categories, grouped into snippets of a few dozen probes.
GROUPS = {
    'statements_and_expressions': ('statement', 'expression', 'scope', 'import', 'match', 'with', 'with_semantics'),
    'operators': ('operator', 'operator_semantics', 'protocol'),
    'protocol_matrix': ('protocol_matrix',),
    'builtins_and_formatting': ('builtin', 'builtin_semantics', 'fstring', 'fstring_semantics', 'format'),
    'classes': ('class', 'class_protocol', 'class_semantics', 'dataclass'),
    'functions_generators_async': (
        'function',
        'function_semantics',
        'generator',
        'comprehension',
        'comprehension_semantics',
        'async',
        'async_semantics',
        'exception',
        'exception_semantics',
    ),
}


def outcome(results) -> str:
    """Each probe's status, with the error's type where there is one."""
    lines = []
    for r in results:
        line = f'{r.id}: {r.status.value}'
        if r.error_type:
            line += f' ({r.error_type})'
        lines.append(line)
    return '\n'.join(lines)


def run_group(name: str) -> str:
    specs = [p for p in BASELINE_PROBES if p.category in GROUPS[name]]
    with PydanticMontyRunner(request_timeout=2.0) as runner:
        results = run_probes(specs, runner)
    counts = defaultdict(int)
    for r in results:
        counts[r.status.value] += 1
    assert counts['supported'] > len(specs) // 2, dict(counts)
    assert not counts['crash'] and not counts['timeout'] and not counts['unknown_error'], outcome(results)
    return f'{dict(sorted(counts.items()))}\n{outcome(results)}'


def test_every_category_is_grouped():
    missing = {p.category for p in BASELINE_PROBES} - {c for cs in GROUPS.values() for c in cs}
    assert not missing, missing


for _group in GROUPS:

    def _make(group=_group):
        def run():
            return run_group(group)

        run.__name__ = f'catalog_{group}'
        return snippet(run)

    _make()


@snippet
def catalog_is_covered():
    """Every probe of the catalog is in one of the groups above."""
    test_every_category_is_grouped()
    return f'{len(BASELINE_PROBES)} probes in {len(GROUPS)} groups'


@snippet
def request_timeout_kill_and_recovery():
    """Code that never ends, run through the runner: the pool kills its
    worker at the request timeout (MontyCrashedError, which the runner's
    classification calls a crash); the next probe runs on a new worker."""
    after = ProbeSpec('after', 'expression', 'sum(range(10))', 'runs after the kill')
    with PydanticMontyRunner(request_timeout=2.0) as runner:
        try:
            first = f'returned {runner.run("n = 0\nwhile n >= 0:\n    n += 1\nn")!r}'
        except Exception as e:  # what the runner's caller classifies
            first = f'{classify_monty_error(e).value} ({type(e).__name__})'
        second = run_probe(after, runner)
    assert first.startswith(('timeout', 'crash')), first  # the pool reports the killed worker as crashed
    assert second.status is ProbeStatus.SUPPORTED and second.actual == 45, second
    return f'{first}\n{second.status.value} {second.actual}'
