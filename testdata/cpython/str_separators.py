# str.partition and str.rpartition with separators of one byte and longer,
# at the start, the end, absent, repeated, in non-ASCII text, and their
# errors; str.isspace, split(), strip() and split(None, n) over every ASCII
# character and Unicode's spaces (Python's whitespace is not Rust's: it has
# the separators \x1c to \x1f).
texts = ['key=value', '=value', 'key=', 'key', '', '==', 'a=b=c', 'é=ü=ø', 'naïve:ünïcode:x', 'x' * 40 + ':' + 'y' * 3, '😀|😃|😄']
seps = ['=', ':', '|', 'x', '==', 'é', '=ü', 'ü=', '😃', 'y' * 3, 'zz']
for text in texts:
    row = []
    for sep in seps:
        row.append((text.partition(sep), text.rpartition(sep)))
    print(repr(text), row)
for bad in ('', None, 1):
    try:
        'a=b'.partition(bad)
    except (TypeError, ValueError) as e:
        print('partition', repr(bad), type(e).__name__)
    try:
        'a=b'.rpartition(bad)
    except (TypeError, ValueError) as e:
        print('rpartition', repr(bad), type(e).__name__)

print([i for i in range(128) if chr(i).isspace()])
print([c.isspace() for c in '\x85\xa0\u1680\u2000\u200a\u200b\u2028\u2029\u202f\u205f\u3000\ufeff'])
for i in range(128):
    c = chr(i)
    text = 'a' + c + 'b' + c + c + ' c' + c
    parts = (text.split(), text.split(None, 1), text.rsplit(None, 1), text.strip(), text.lstrip(), text.rstrip(), (c + 'x' + c).strip())
    if i % 16 == 0 or c.isspace():
        print(i, parts)
    else:
        assert parts[0] == ['a' + c + 'b' + c + c, 'c' + c], (i, parts)
mixed = ' \x1c2024-03-05\t12:34:56\x1fINFO\x0b user=ada\u3000x\x85y\n'
print(mixed.split(), mixed.split(None, 3), mixed.strip(), mixed.rsplit(None, 2))
