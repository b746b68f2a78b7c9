"""Imported by one test only, lazily."""

VALUE = 42
