# Regular-expression extraction over 1,000 lines of made-up support mail:
# e-mail addresses, ISO dates, amounts and order numbers pulled out with
# compiled patterns (findall, finditer, named groups, search, sub); counts,
# totals and the most frequent mail domain.
import re

users = ['ada', 'grace.h', 'linus_t', 'ken', 'b.liskov']
domains = ['example.com', 'mail.example.org', 'corp.test']
x = 12345
lines = []
for i in range(1_000):
    x = (x * 1103515245 + 12345) % 2147483648
    lines.append(
        f'From {users[x % 5]}@{domains[(x >> 4) % 3]} on 2024-{1 + x % 12:02d}-{1 + (x >> 6) % 28:02d}: '
        f'order #{100000 + x % 900000} charged ${(x >> 3) % 10000}.{x % 100:02d}, '
        f'ref ORD-{(x >> 8) % 1000:03d}; cc {users[(x >> 2) % 5]}@{domains[x % 3]}'
    )

email = re.compile(r'[\w.]+@([\w.]+\.\w+)')
iso_date = re.compile(r'(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})')
amount = re.compile(r'\$(\d+)\.(\d\d)')
order = re.compile(r'#(\d{6})')
domains_seen = {}
months = [0] * 13
cents = 0
orders = 0
refs = 0
for line in lines:
    for domain in email.findall(line):
        domains_seen[domain] = domains_seen.get(domain, 0) + 1
    for m in iso_date.finditer(line):
        months[int(m.group('month'))] += 1
    m = amount.search(line)
    if m:
        cents += int(m.group(1)) * 100 + int(m.group(2))
    if order.search(line):
        orders += 1
    refs += len(re.sub(r'ORD-(\d+)', r'<\1>', line)) - len(line)
top = max(sorted(domains_seen), key=lambda d: domains_seen[d])
top, domains_seen[top], months[1:], cents, orders, refs
