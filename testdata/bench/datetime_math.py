# Date and time arithmetic: 2,000 invoices issued at times drawn by a
# linear congruential generator, each due 30 days later moved off the
# weekend, and how late each is paid; per weekday counts, the total days
# late, the latest due date and the mean hours from issue to payment.
from datetime import date, datetime, timedelta

start = datetime(2024, 1, 1, 9, 0)
x = 12345
weekdays = [0] * 7
late_days = 0
latest_due = date(2000, 1, 1)
hours = 0.0
for i in range(2_000):
    x = (x * 1103515245 + 12345) % 2147483648
    issued = start + timedelta(days=x % 365, minutes=(x >> 9) % 1440)
    due = (issued + timedelta(days=30)).date()
    if due.weekday() == 5:
        due += timedelta(days=2)
    elif due.weekday() == 6:
        due += timedelta(days=1)
    paid = issued + timedelta(days=(x >> 5) % 45, hours=(x >> 3) % 24)
    weekdays[due.weekday()] += 1
    late = (paid.date() - due).days
    if late > 0:
        late_days += late
    if due > latest_due:
        latest_due = due
    hours += (paid - issued).total_seconds() / 3600
weekdays, late_days, latest_due.isoformat(), f'{hours / 2_000:.4f}'
