# Integer arithmetic at the edges of the interpreter's fast paths (both
# operands small ints: monty-1.4.0-wasm32-vm-loop.patch computes them in the
# dispatch loop) and just past them: overflow into long ints, floor division
# and modulo of negative numbers, zero divisors, shifts by negative, 63, 64
# and more places, bools and floats. int_edges.cpython.txt is what CPython
# prints for it (python3 int_edges.py); runtime's TestIntArithmeticEdges
# checks the interpreter prints the same.
def binary(a, b):
    out = []
    ops = (
        lambda: a + b, lambda: a - b, lambda: a * b, lambda: a // b, lambda: a % b,
        lambda: a & b, lambda: a | b, lambda: a ^ b, lambda: a << b if b < 200 else 'big', lambda: a >> b,
        lambda: a < b, lambda: a <= b, lambda: a > b, lambda: a >= b, lambda: a == b, lambda: a != b,
    )
    for op in ops:
        try:
            out.append(op())
        except (ZeroDivisionError, ValueError, TypeError, OverflowError) as e:
            out.append(type(e).__name__)
    return out


def iadd(x, b):
    x += b
    return x


def isub(x, b):
    x -= b
    return x


def imul(x, b):
    x *= b
    return x


def ifloordiv(x, b):
    x //= b
    return x


def imod(x, b):
    x %= b
    return x


def iand(x, b):
    x &= b
    return x


def ior(x, b):
    x |= b
    return x


def ixor(x, b):
    x ^= b
    return x


def ilshift(x, b):
    if b >= 200:
        return 'big'
    x <<= b
    return x


def irshift(x, b):
    x >>= b
    return x


def inplace(a, b):
    out = []
    for op in (iadd, isub, imul, ifloordiv, imod, iand, ior, ixor, ilshift, irshift):
        try:
            out.append(op(a, b))
        except (ZeroDivisionError, ValueError, TypeError, OverflowError) as e:
            out.append(type(e).__name__)
    return out


pairs = [
    (7, 5), (-7, 2), (7, -2), (-7, -2), (0, 5), (5, 0), (-6, 3),
    (2**63 - 1, 1), (-(2**63), -1), (-(2**63), 1), (2**62, 4), (2**31, 3), (3037000500, 3037000500),
    (1, 62), (1, 63), (-1, 63), (3, 0), (2**62, 1), (5, 64), (-5, 1), (-1, 100), (5, -1), (-(2**63), 63),
    (True, 1), (1, True), (7.5, 2), (-7.5, 2), (2**64, 3), (3, 100),
]
print([(a, b, binary(a, b), inplace(a, b)) for a, b in pairs])
