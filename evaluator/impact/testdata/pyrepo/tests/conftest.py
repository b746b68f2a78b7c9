import pytest

from calc import ops


@pytest.fixture(scope="session")
def squared():
    return ops.square(7)
