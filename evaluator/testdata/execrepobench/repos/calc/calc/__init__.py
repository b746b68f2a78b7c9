"""A tiny calculator package used by the evaluator's tests."""
from calc.ops import add, div, mul, sub

__all__ = ["add", "sub", "mul", "div"]
