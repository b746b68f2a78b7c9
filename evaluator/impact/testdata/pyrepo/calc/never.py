"""Imported by nothing."""


def never():
    return 0
