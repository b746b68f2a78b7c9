"""Strings."""

from calc.ops import SCALE

BANNER = "=" * SCALE


def shout(s):
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
    from calc import late
    return late.VALUE
