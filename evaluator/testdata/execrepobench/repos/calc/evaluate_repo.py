import sys

import pytest

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "tests"]))
