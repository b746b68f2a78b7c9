"""Arithmetic."""

SCALE = 10


def add(a, b):
    return a + b


def mul(a, b):
    result = 0
    for _ in range(b):
        result = add(result, a)
    return result


def scaled(x):
    return x * SCALE


def square(x):
    return x * x


def unused(x):
    return (x +
            1)
