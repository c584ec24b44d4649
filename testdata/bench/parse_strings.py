# Parsing strings: 600 log lines made with f-strings ("2024-03-05
# 12:34:56 INFO user=ada action=login ms=123 path=/api/v1/items"), then
# parsed back: split, partition, int(), strip, startswith, lower. Counts
# per level, the slowest path and the total ms per user.
levels = ['INFO', 'WARN', 'ERROR', 'DEBUG']
users = ['ada', 'grace', 'linus', 'ken', 'barbara']
actions = ['login', 'read', 'write', 'logout']
x = 12345
lines = []
for i in range(600):
    x = (x * 1103515245 + 12345) % 2147483648
    lines.append(
        f'2024-03-{1 + x % 28:02d} {x % 24:02d}:{(x >> 5) % 60:02d}:{(x >> 11) % 60:02d} '
        f'{levels[(x >> 3) % 4]}  user={users[x % 5]} action={actions[(x >> 7) % 4]} '
        f'ms={(x >> 9) % 2000} path=/api/v{1 + x % 2}/{actions[(x >> 13) % 4]}s '
    )

per_level = {}
ms_per_user = {}
slowest = (0, '')
for line in lines:
    day, clock, level, rest = line.strip().split(None, 3)
    if not day.startswith('2024-'):
        continue
    hour = int(clock.partition(':')[0])
    fields = {}
    for item in rest.split():
        key, _, value = item.partition('=')
        fields[key] = value
    ms = int(fields['ms'])
    level = level.lower()
    per_level[level] = per_level.get(level, 0) + 1
    user = fields['user']
    ms_per_user[user] = ms_per_user.get(user, 0) + ms
    if (ms, fields['path']) > slowest and hour < 12:
        slowest = (ms, fields['path'])
sorted(per_level.items()), slowest, sorted(ms_per_user.items())
