# Unpacking: 10-element tuples and lists, unpacked into names, swapped and
# starred, 5,000 times each; the sums of what was unpacked.
t = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
l = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
total = 0
for i in range(5_000):
    a, b, c, d, e, f, g, h, j, k = t
    total += a + k
    a, b, c, d, e, f, g, h, j, k = l
    total += b + j
    a, b = b, a
    total += a - b
    first, *middle, last = t
    total += first + last + len(middle)
    x, (y, z) = i, (a, b)
    total += x + y + z
total
