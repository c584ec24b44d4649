# json.dumps and json.loads over strings whose escapes fall at every place
# of an 8-byte word (the encoder skips safe bytes eight at a time), with and
# without ensure_ascii; then objects whose keys repeat across documents and
# calls (json.loads keeps a cache of short strings), at the cache's length
# bounds, escaped, non-ASCII and duplicated.
import json

specials = ['"', '\\', '\n', '\x00', '\x1f', '\x7f', 'é', '\u2028', '😀', '\t']
check = 0
count = 0
for special in specials:
    for length in range(1, 20):
        for place in range(length):
            text = 'abcdefghijklmnopqrstu'[:place] + special + 'vwxyz0123456789ABCDEF'[:length - place - 1]
            for ensure in (True, False):
                out = json.dumps(text, ensure_ascii=ensure)
                assert json.loads(out) == text, (text, out)
                for ch in out:
                    check = (check * 131 + ord(ch)) % 2305843009213693951
                count += 1
print(count, check)
print(json.dumps('x' * 17 + '"' + 'y' * 7 + '\\'), json.dumps('safe ascii only, thirty-two chars'))
print(json.dumps(['é' * 9, 'ü' + 'a' * 8 + '\u2028'], ensure_ascii=False))
print(json.dumps(['é' * 9, 'ü' + 'a' * 8 + '\u2028']))

doc = '[' + ','.join('{"id": %d, "name": "user %d", "ab": "ab", "%s": true, "k\\"q": 1, "\\u00e9t\\u00e9": "caf\\u00e9", "dup": 1, "dup": %d}' % (i, i, 'x' * (63 + i % 3), i) for i in range(40)) + ']'
first = json.loads(doc)
second = json.loads(doc)
print(len(first), first[0], first[39])
print(first == second, sorted(first[1]), [len(k) for k in first[2]])
print(json.loads('{"a": "a", "ab": "ab", "ab": ["ab", {"ab": "ab"}]}'))
for bad in ['{"ab": 1, "cd": }', '{"ab": 1, "ab"', '["ab", "cd"', '{"ab" 1}']:
    try:
        json.loads(bad)
    except ValueError as e:
        print(type(e).__name__)
