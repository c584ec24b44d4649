total = 0
for i in range(1000000):
    total += i
total
