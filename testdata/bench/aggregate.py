# Aggregating rows, as an agent does with a query's result: 2,000 sales
# rows (dicts drawn by a linear congruential generator) grouped by region
# and by product: counts, sums, the largest sale, averages; the top three
# products by revenue.
regions = ['north', 'south', 'east', 'west', 'central']
products = ['widget', 'gadget', 'doohickey', 'gizmo', 'sprocket', 'flange', 'bracket']
x = 12345
rows = []
for i in range(2_000):
    x = (x * 1103515245 + 12345) % 2147483648
    rows.append({
        'id': i,
        'region': regions[x % 5],
        'product': products[(x >> 8) % 7],
        'units': 1 + (x >> 12) % 20,
        'price_cents': 199 + (x >> 4) % 5000,
    })

by_region = {}
by_product = {}
for row in rows:
    revenue = row['units'] * row['price_cents']
    stats = by_region.get(row['region'])
    if stats is None:
        stats = by_region[row['region']] = {'count': 0, 'revenue': 0, 'best': 0}
    stats['count'] += 1
    stats['revenue'] += revenue
    if revenue > stats['best']:
        stats['best'] = revenue
    by_product[row['product']] = by_product.get(row['product'], 0) + revenue

summary = []
for region in sorted(by_region):
    stats = by_region[region]
    summary.append((region, stats['count'], stats['revenue'] // stats['count'], stats['best']))
top = sorted(by_product.items(), key=lambda kv: kv[1], reverse=True)[:3]
summary, top
