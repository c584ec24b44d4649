# Float arithmetic on many small objects: 1,500 points made from a linear
# congruential generator, each scaled to unit length (a method and a
# square root), then the largest of each coordinate and the mean x, shown
# to 9 decimals.
import math


class Point:
    def __init__(self, x, y, z):
        self.x = x
        self.y = y
        self.z = z

    def normalize(self):
        length = math.sqrt(self.x * self.x + self.y * self.y + self.z * self.z)
        self.x /= length
        self.y /= length
        self.z /= length

    def biggest(self, other):
        if other.x > self.x:
            self.x = other.x
        if other.y > self.y:
            self.y = other.y
        if other.z > self.z:
            self.z = other.z
        return self


x = 12345
points = []
for i in range(1_500):
    x = (x * 1103515245 + 12345) % 2147483648
    a = x / 2147483648 - 0.5
    points.append(Point(a, a * a * 3.0 + 0.25, 1.0 - a * 2.5))
total = 0.0
for p in points:
    p.normalize()
    total += p.x
best = Point(-2.0, -2.0, -2.0)
for p in points:
    best.biggest(p)
f'{best.x:.9f}', f'{best.y:.9f}', f'{best.z:.9f}', f'{total / len(points):.9f}'
