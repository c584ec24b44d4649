# json.loads of objects whose sizes change at the same depth (a dict starts
# with the capacity of the last object parsed at its depth), deeper than
# that is remembered, with duplicate keys, then grown, shrunk and compared;
# and json.dumps(sort_keys=True) over many str keys, in code point order
# across the planes, and over keys that are not all str.
import json


def obj(n, tag):
    return '{' + ','.join('"%s%d": %d' % (tag, i, i) for i in range(n)) + '}'


sizes = [1, 40, 3, 0, 33, 2, 7, 7, 64, 1, 5]
doc = '[' + ','.join('{"n": %d, "inner": %s, "list": [%s, %s]}' % (n, obj(n, 'k'), obj(n % 4, 'a'), obj(n // 2, 'b')) for n in sizes) + ']'
items = json.loads(doc)
print([len(item['inner']) for item in items], [[len(x) for x in item['list']] for item in items])
print(items[1]['inner']['k39'], list(items[4]['inner'])[-3:], items[9])
for item in items:
    inner = item['inner']
    for i in range(item['n'], item['n'] + 50):
        inner['k%d' % i] = -i
    for i in range(0, item['n'] + 50, 3):
        inner.pop('k%d' % i)
    assert len(inner) == sum(1 for i in range(item['n'] + 50) if i % 3), item['n']
print([sum(item['inner'].values()) for item in items], list(items[0]['inner'])[:5])
print(json.loads(doc) == json.loads(doc), json.loads(doc)[2] == items[2])

deep = '{"a": 1, "b": ' * 12 + '{"z": [1, {"y": 2, "x": 3}]}' + '}' * 12
value = json.loads(deep)
level = 0
while 'b' in value:
    value = value['b']
    level += 1
print(level, value, json.dumps(json.loads(deep))[:60])

dups = json.loads('[{"a": 1, "b": 2, "a": 3, "c": 4, "b": 5}, {"a": 1, "a": 2, "a": 3}, {"x": {}, "x": {"y": 1}, "y": []}]')
print(dups, [list(d) for d in dups])

wide = {chr(0x10000 + i % 7) + chr(0xffff - i) + str(i): i for i in range(40)}
wide.update({'\uffff': 'bmp', '\U00010000': 'astral', 'é': 'latin', 'e': 'ascii', '': 'empty', 'ab': 1, 'a': 2, 'b\x00': 0})
text = json.dumps(wide, sort_keys=True, ensure_ascii=False)
print(len(text), text[:120])
print([k for k in json.loads(text)][:10] == sorted(wide)[:10], list(json.loads(text)) == sorted(wide))
print(json.dumps({'b': {'d': 1, 'c': [{'z': 1, 'y': 2}]}, 'a': None}, sort_keys=True))
print(json.dumps({2: 'two', 1: 'one', 3.5: 'f', -1: 'neg'}, sort_keys=True))
try:
    json.dumps({1: 'one', 'a': 'str'}, sort_keys=True)
except TypeError as e:
    print('TypeError', e)
