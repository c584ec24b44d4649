# Fannkuch on the permutations of 0..5, taken in lexicographic order: a
# permutation's flip count is how often its first element k is nonzero and
# the first k + 1 elements are reversed. The largest count, and a checksum
# that adds the counts of the even-numbered permutations and subtracts
# those of the odd ones.
N = 6


def flips(perm):
    p = list(perm)
    count = 0
    k = p[0]
    while k:
        i, j = 0, k
        while i < j:
            p[i], p[j] = p[j], p[i]
            i += 1
            j -= 1
        count += 1
        k = p[0]
    return count


def advance(p):
    # Steps p to the next permutation in lexicographic order; False after
    # the last one.
    i = len(p) - 2
    while i >= 0 and p[i] > p[i + 1]:
        i -= 1
    if i < 0:
        return False
    j = len(p) - 1
    while p[j] < p[i]:
        j -= 1
    p[i], p[j] = p[j], p[i]
    lo, hi = i + 1, len(p) - 1
    while lo < hi:
        p[lo], p[hi] = p[hi], p[lo]
        lo += 1
        hi -= 1
    return True


perm = list(range(N))
most = 0
checksum = 0
sign = 1
more = True
while more:
    f = flips(perm)
    most = max(most, f)
    checksum += sign * f
    sign = -sign
    more = advance(perm)
most, checksum
