import os
import sys


def f():
    return 1


def g():
    return 2


if __name__ == "__main__":
    if sys.argv[1:] == ["exit"]:
        g()
        sys.stdout.flush()
        os._exit(0)  # no atexit: the child's lines are lost
    print(f())
