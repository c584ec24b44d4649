# json.loads of a 300-record document (made once by json.dumps), 5 times;
# totals taken from the parsed values.
import json

parts = []
for i in range(300):
    parts.append({
        'id': i,
        'name': f'item é "{i}"',
        'price': i * 1.5 + 0.25,
        'in_stock': i % 2 == 0,
        'note': None,
        'sizes': [i % 3, i % 5, i % 7],
        'dims': {'w': i, 'h': i * 2, 'unit': 'cm'},
    })
text = json.dumps({'items': parts, 'count': len(parts)})
ids = 0
price = 0.0
stock = 0
for _ in range(5):
    doc = json.loads(text)
    for item in doc['items']:
        ids += item['id'] + item['dims']['h'] + sum(item['sizes'])
        price += item['price']
        stock += item['in_stock']
len(text), ids, f'{price:.2f}', stock, doc['items'][3]['name']
