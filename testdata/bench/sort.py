# Sorts 100,000 (int, str) tuples. The ints come from a linear congruential
# generator (the same list on every run and implementation) and repeat a
# lot, so many comparisons go on to the strings.
x = 12345
items = []
for i in range(100_000):
    x = (x * 1103515245 + 12345) % 2147483648
    items.append((x % 1000, str(i)))
items.sort()
items[0], items[50_000], items[-1]
