import pytest

from calc import ops


def test_add():
    assert ops.add(2, 3) == 5


@pytest.mark.parametrize("a,b,want", [(2, 3, 6), (4, 0, 0)], ids=["two by three", "times [zero]"])
def test_mul(a, b, want):
    assert ops.mul(a, b) == want


@pytest.mark.parametrize("x", [1, 2])
def test_scaled(x):
    assert ops.scaled(x) == 10 * x


def test_squared(squared):
    assert squared == 49


def test_squared_again(squared):
    assert squared > 0
