# The spectral norm of the infinite matrix a(i, j) = 1 / ((i + j)(i + j + 1)
# / 2 + i + 1), cut to 20 x 20, by the power method on its transpose times
# itself: ten steps, then sqrt(u.v / v.v). Plain loops (not sum()), so that
# every implementation adds in the same order; shown to 9 decimals
# (a tuple: upstream's command shows a str result without its quotes).
import math

n = 20


def a(i, j):
    s = i + j
    return 1.0 / (s * (s + 1) // 2 + i + 1)


def times(v):
    out = []
    for i in range(n):
        total = 0.0
        for j in range(n):
            total += a(i, j) * v[j]
        out.append(total)
    return out


def times_transposed(v):
    out = []
    for i in range(n):
        total = 0.0
        for j in range(n):
            total += a(j, i) * v[j]
        out.append(total)
    return out


u = [1.0] * n
for _ in range(10):
    v = times_transposed(times(u))
    u = times_transposed(times(v))
uv = 0.0
vv = 0.0
for i in range(n):
    uv += u[i] * v[i]
    vv += v[i] * v[i]
n, f'{math.sqrt(uv / vv):.9f}'
