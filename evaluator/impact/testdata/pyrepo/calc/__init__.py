"""A small package for the impact runner's tests."""
