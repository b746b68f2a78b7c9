import sys

import mod


def test_drops_tracer():
    sys.settrace(None)  # as a debugger or a coverage tool would
    assert mod.f() == 1


def test_after():
    assert mod.g() == 2
