# Counts the words of a 200,000-word text in a dict. The words are drawn
# from a small vocabulary by a linear congruential generator (the same text
# on every run and implementation).
vocabulary = ['the', 'of', 'and', 'to', 'in', 'a', 'is', 'that', 'for', 'it', 'as', 'was', 'with', 'be', 'by', 'on']
x = 12345
drawn = []
for i in range(200_000):
    x = (x * 1103515245 + 12345) % 2147483648
    drawn.append(vocabulary[(x >> 16) % 16])
text = ' '.join(drawn)
counts = {}
for word in text.split():
    counts[word] = counts.get(word, 0) + 1
len(counts), counts['the'], counts['on']
