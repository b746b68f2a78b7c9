def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    result = 0
    for _ in range(abs(b)):
        result = add(result, a)
    if b < 0:
        result = -result
    return result


def div(a, b):
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return a / b
