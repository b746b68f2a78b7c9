import pytest

from calc.stats import Accumulator, mean, median


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5
    with pytest.raises(ValueError):
        mean([])


def test_median():
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5
    with pytest.raises(ValueError):
        median([])


def test_accumulator():
    acc = Accumulator()
    assert acc.push(2) == 1
    assert acc.push(4) == 2
    assert acc.mean() == 3
