# json.dumps of 300 records (strings with quotes and non-ASCII, ints,
# floats, booleans, None, nested lists and dicts), 5 times over, the
# default and the compact, sorted form; the lengths of what was made and a
# piece of it.
import json

records = []
for i in range(300):
    records.append({
        'id': i,
        'name': f'user {i} "the {i % 7}th"',
        'email': f'user{i}@example.com',
        'score': i * 0.25 + 0.1,
        'active': i % 3 == 0,
        'manager': None if i % 5 else i // 5,
        'tags': ['a', 'bé', 'c' * (i % 4)],
        'address': {'street': f'{i} Main St', 'zip': 10000 + i, 'geo': [i / 8, -i / 16]},
    })
size = 0
for _ in range(5):
    size += len(json.dumps(records))
    size += len(json.dumps(records, sort_keys=True, separators=(',', ':')))
text = json.dumps(records[7])
size, text
