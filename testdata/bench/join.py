# Joins 100,000 pieces: the decimal strings of 0 to 99,999.
pieces = [str(i) for i in range(100_000)]
text = ''.join(pieces)
len(text), text[-10:]
