# Barnes-Hut in two dimensions: 60 bodies at positions drawn by a linear
# congruential generator (the same on every run and implementation), put
# in a quadtree whose cells keep their mass and centre of mass; then each
# body's acceleration summed over the tree, a cell taken whole when its
# width is under 0.5 of its distance. The sums of the accelerations and of
# their sizes, shown to 6 decimals.
import math

THETA = 0.5
SOFTENING = 0.01


class Body:
    def __init__(self, x, y, mass):
        self.x = x
        self.y = y
        self.mass = mass


class Cell:
    def __init__(self, cx, cy, half):
        self.cx = cx
        self.cy = cy
        self.half = half
        self.mass = 0.0
        self.mx = 0.0
        self.my = 0.0
        self.body = None
        self.children = None

    def quadrant(self, body):
        i = 0
        if body.x >= self.cx:
            i += 1
        if body.y >= self.cy:
            i += 2
        return i

    def child(self, i):
        if self.children[i] is None:
            q = self.half / 2
            cx = self.cx + q if i & 1 else self.cx - q
            cy = self.cy + q if i & 2 else self.cy - q
            self.children[i] = Cell(cx, cy, q)
        return self.children[i]

    def insert(self, body):
        if self.mass == 0.0:
            self.body = body
        else:
            if self.children is None:
                self.children = [None, None, None, None]
                old = self.body
                self.body = None
                self.child(self.quadrant(old)).insert(old)
            self.child(self.quadrant(body)).insert(body)
        self.mass += body.mass
        self.mx += body.x * body.mass
        self.my += body.y * body.mass

    def pull(self, body):
        # The acceleration of body by this cell: (ax, ay).
        if self.mass == 0.0 or self.body is body:
            return 0.0, 0.0
        x = self.mx / self.mass
        y = self.my / self.mass
        dx = x - body.x
        dy = y - body.y
        d2 = dx * dx + dy * dy + SOFTENING
        d = math.sqrt(d2)
        if self.children is None or 2 * self.half < THETA * d:
            f = self.mass / (d2 * d)
            return dx * f, dy * f
        ax = ay = 0.0
        for c in self.children:
            if c is not None:
                cx, cy = c.pull(body)
                ax += cx
                ay += cy
        return ax, ay


seed = 12345


def draw():
    global seed
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed / 2147483648


bodies = [Body(draw() * 2 - 1, draw() * 2 - 1, 0.5 + draw()) for _ in range(60)]
root = Cell(0.0, 0.0, 1.0)
for b in bodies:
    root.insert(b)
sx = sy = size = 0.0
for b in bodies:
    ax, ay = root.pull(b)
    sx += ax
    sy += ay
    size += math.sqrt(ax * ax + ay * ay)
f'{sx:.6f}', f'{sy:.6f}', f'{size:.6f}'
