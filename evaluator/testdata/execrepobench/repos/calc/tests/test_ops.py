import pytest

from calc.ops import add, div, mul, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(2, 3) == -1


def test_mul():
    assert mul(4, 3) == 12
    assert mul(4, -3) == -12
    assert mul(0, 5) == 0


def test_div():
    assert div(6, 3) == 2
    with pytest.raises(ZeroDivisionError):
        div(1, 0)
