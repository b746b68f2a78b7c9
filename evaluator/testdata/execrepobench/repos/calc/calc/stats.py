from calc.ops import add, div


def mean(values):
    if not values:
        raise ValueError("mean of empty sequence")
    total = 0
    for v in values:
        total = add(total, v)
    return div(total, len(values))


def median(values):
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median of empty sequence")
    mid = n // 2
    if n % 2 == 1:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


class Accumulator:
    def __init__(self):
        self.values = []

    def push(self, value):
        self.values.append(value)
        return len(self.values)

    def mean(self):
        return mean(self.values)
