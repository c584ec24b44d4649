# Five bodies under Newtonian gravity (G = 1): an invented star and four
# planets, stepped 300 times by a fixed time step (velocities from every pair's pull,
# then positions), the momentum first made zero. The total energy before and
# after, shown to 9 decimals.
import math

# x, y, z, vx, vy, vz, mass
bodies = [
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 40.0],
    [3.1, 0.0, 0.2, 0.0, 3.5, 0.1, 0.04],
    [0.0, -5.3, 0.0, 2.7, 0.0, -0.05, 0.012],
    [-8.2, 1.1, -0.4, -0.3, -2.2, 0.0, 0.02],
    [6.0, 6.0, 0.5, -1.6, 1.7, 0.02, 0.003],
]


def energy():
    e = 0.0
    for i in range(len(bodies)):
        b = bodies[i]
        e += 0.5 * b[6] * (b[3] * b[3] + b[4] * b[4] + b[5] * b[5])
        for j in range(i + 1, len(bodies)):
            c = bodies[j]
            dx, dy, dz = b[0] - c[0], b[1] - c[1], b[2] - c[2]
            e -= b[6] * c[6] / math.sqrt(dx * dx + dy * dy + dz * dz)
    return e


def advance(dt, steps):
    count = len(bodies)
    for _ in range(steps):
        for i in range(count):
            b = bodies[i]
            for j in range(i + 1, count):
                c = bodies[j]
                dx = b[0] - c[0]
                dy = b[1] - c[1]
                dz = b[2] - c[2]
                d2 = dx * dx + dy * dy + dz * dz
                f = dt / (d2 * math.sqrt(d2))
                mb = b[6] * f
                mc = c[6] * f
                b[3] -= dx * mc
                b[4] -= dy * mc
                b[5] -= dz * mc
                c[3] += dx * mb
                c[4] += dy * mb
                c[5] += dz * mb
        for b in bodies:
            b[0] += dt * b[3]
            b[1] += dt * b[4]
            b[2] += dt * b[5]


px = py = pz = 0.0
for b in bodies:
    px += b[3] * b[6]
    py += b[4] * b[6]
    pz += b[5] * b[6]
star = bodies[0]
star[3] -= px / star[6]
star[4] -= py / star[6]
star[5] -= pz / star[6]
before = energy()
advance(0.001, 300)
f'{before:.9f}', f'{energy():.9f}'
