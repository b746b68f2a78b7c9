import pytest

import mod


@pytest.fixture(scope="session")
def token():
    return mod.token()
