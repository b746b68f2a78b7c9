"""Strings."""

from calc.ops import SCALE

BANNER = "=" * SCALE


def shout(s):
    """Loud."""
    return s.upper() + "!"


class Greeter:
    greeting = "hello"

    def greet(self, name):
        return "%s, %s" % (self.greeting,
                           name)


def table():
    return {
        "a": 1,
        "b": 2,
    }


def lazy():
    global _unused
    from calc import late
    return late.VALUE
