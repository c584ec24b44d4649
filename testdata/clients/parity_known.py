"""Deliberate differences from upstream Monty that parity.py allows: case
name -> reason. Each is also described in docs/conformance.md."""

KNOWN: dict[str, str] = {
    'deque(maxlen=2**40)': (
        'a maxlen past 2**32 - 1 raises OverflowError on wasm32, whose usize is 32 bits, where a 64-bit host '
        'accepts it; it is a bound, not a memory request, and saturating it would make .maxlen report a '
        'different number, so the error stays'
    ),
    # itertools sizes between 2**31 and 2**63 saturate on wasm32 (the carried
    # patch monty-1.4.0-wasm32-sizes.patch), which puts them as far past any
    # allocation as 2**62 is on 64-bit: they get the answer 2**62 gets there.
    'tee(2**40)': (
        "2**40 iterators are past what wasm32 can address: CPython's bare MemoryError, which code can catch, "
        'as for tee([1], 2**62) on 64-bit; a 64-bit host tries, and its memory limit ends the run with MemoryError'
    ),
    'combinations_with_replacement(2**40)': (
        "an index vector of 2**40 slots is past what wasm32 can address: CPython's bare MemoryError, which code "
        'can catch, as for r=2**62 on 64-bit; a 64-bit host tries, and its memory limit ends the run with MemoryError'
    ),
    'product(repeat=2**40)': (
        "an index vector of 2**40 slots is past what wasm32 can address: OverflowError('repeat argument too "
        "large'), as for repeat=2**62 on 64-bit; a 64-bit host tries, and its memory limit ends the run with "
        'MemoryError'
    ),
}
