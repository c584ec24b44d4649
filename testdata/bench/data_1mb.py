# About 1 MB of session state: 10,000 distinct 100-character strings.
data = [str(i).rjust(100, 'x') for i in range(10000)]
