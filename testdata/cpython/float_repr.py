# Floats as CPython writes them: repr, str, f-strings, containers and
# json.dumps give the shortest digits that read back to the same float, and
# where two shortest candidates are equally near, the even one
# (1211892337208732.25 is 1211892337208732.2). Then json.dumps(sort_keys=True)
# over str keys (ordered by code point), other keys, and keys that cannot be
# compared.
import json

ties = [1211892337208732.25, 158676543829070.625, 171752074115539.625, 0.5, 2.5, 1e23, 5e-324,
        9007199254740993.0, 1.7976931348623157e308, 2.2250738585072014e-308]
edges = [0.0, -0.0, 1e-4, 9.999999999999999e-05, 1e-5, 1e16, 9999999999999998.0, 1e15, 123.0, 0.1,
         0.30000000000000004, 1.5e300, -2.5e-7, float('inf'), float('-inf'), float('nan')]
for v in ties + edges:
    print(repr(v), str(v), f'{v}', f'{v!r}')
print(ties)
print(json.dumps(ties[:-1] + edges[:-3]))

# A few thousand floats across the whole range, a checksum of their reprs and
# every hundredth one in full.
x = 12345
check = 0
for i in range(3000):
    x = (x * 6364136223846793005 + 1442695040888963407) % 18446744073709551616
    values = [(x >> 11) / 8.0, (x >> 20) / 4.0 + 0.5, (x % 1000003) / 100.0,
              ((x >> 12) / 4503599627370496.0 + 1.0) * 10.0 ** ((x >> 3) % 60 - 30)]
    for v in values:
        text = repr(v)
        assert json.dumps(v) == text, (text, json.dumps(v))
        for ch in text:
            check = (check * 31 + ord(ch)) % 2305843009213693951
    if i % 100 == 0:
        print(values)
print(check)

# sort_keys: str keys by code point (ASCII, Latin-1, BMP, astral, empty).
keys = {'b': 1, 'a': 2, 'B': 3, 'é': 4, 'z': 5, '\uffff': 6, '😀': 7, '': 8, 'aa': 9, 'a\x00': 10}
print(json.dumps(keys, sort_keys=True))
print(json.dumps(keys, sort_keys=True, ensure_ascii=False))
print(json.dumps({'outer': keys, 'list': [{'y': 1, 'x': 2}]}, sort_keys=True, indent=1))
print(json.dumps({3: 'c', 1: 'a', 2.5: 'b', False: 'f'}, sort_keys=True))
try:
    json.dumps({'a': 1, 2: 'b'}, sort_keys=True)
except TypeError as e:
    print('TypeError:', e)
