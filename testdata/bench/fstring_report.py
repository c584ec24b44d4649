# An f-string report: 1,500 order lines drawn by a linear congruential
# generator, each formatted with widths, alignment, thousands separators
# and fixed decimals, a subtotal line every 100 orders, joined into one
# text. Its length, line count and last three lines.
names = ['Ada', 'Grace', 'Linus', 'Barbara', 'Ken', 'Margaret', 'Dennis', 'Frances']
x = 12345
lines = [f"{'order':<8}{'customer':<10}{'qty':>5}{'unit':>10}{'total':>14}  status"]
subtotal = 0.0
for i in range(1_500):
    x = (x * 1103515245 + 12345) % 2147483648
    qty = 1 + x % 50
    unit = (x >> 8) % 100_000 / 100
    total = qty * unit
    subtotal += total
    status = 'shipped' if x % 3 else 'pending'
    lines.append(f'#{i:06d} {names[x % 8]:<10}{qty:>5}{unit:>10.2f}{total:>14,.2f}  {status}')
    if i % 100 == 99:
        lines.append(f"{'subtotal':>37}{subtotal:>14,.2f}  ({(i + 1) // 100} of {1_500 // 100}, {subtotal / (i + 1):.3f} avg)")
report = '\n'.join(lines)
len(report), report.count('\n') + 1, lines[-3:]
