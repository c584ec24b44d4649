# A collector's traversal: a live graph of 2,000 lists, each holding its
# key and links to the next one and to two more (picked by a linear
# congruential generator), is kept while 100,000 short-lived lists are made
# and dropped, every hundredth pair left in a cycle: enough allocations to
# set off Monty's collector (every 100,000), which walks the live graph.
# Then the graph is walked from its first node: how many nodes that
# reaches, and a checksum of the walk.
size = 2_000
nodes = [[i] for i in range(size)]
x = 12345
for i in range(size):
    x = (x * 1103515245 + 12345) % 2147483648
    node = nodes[i]
    node.append(nodes[(i + 1) % size])
    node.append(nodes[x % size])
    node.append(nodes[(x >> 16) % size])

made = 0
for i in range(50_000):
    a = [i]
    b = [a, a]
    if i % 100 == 0:
        a.append(b)
    made += 2

seen = {0}
stack = [nodes[0]]
checksum = 0
while stack:
    node = stack.pop()
    checksum = (checksum * 31 + node[0]) % 1_000_000_007
    for other in node[1:]:
        if other[0] not in seen:
            seen.add(other[0])
            stack.append(other)
made, len(seen), checksum
