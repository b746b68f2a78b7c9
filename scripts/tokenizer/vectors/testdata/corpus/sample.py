#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""Sample module for tokenizer reference vectors.

It's not meant to run; it exercises contractions (it's, we'll, they've, I'd,
you're, I'M, WE'LL), decorators, f-strings, numbers like 3.14159, 1e-10,
0xFF_FF, 1_000_000 and unicode: naïve café, 日本語, Ελληνικά, emoji 🐍.
"""
from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Iterable, Optional


@dataclasses.dataclass(frozen=True)
class Point:
    x: float = 0.0
    y: float = 0.0

    def __add__(self, other: "Point") -> "Point":
        return Point(self.x + other.x, self.y + other.y)

    def norm(self) -> float:
        return (self.x ** 2 + self.y ** 2) ** 0.5


def fib(n: int) -> Iterable[int]:
    a, b = 0, 1
    for _ in range(n):
        yield a
        a, b = b, a + b


class LRUCache(dict):
    def __init__(self, capacity: int = 128) -> None:
        super().__init__()
        self.capacity = capacity

    def get_or_set(self, key: Any, default: Optional[Any] = None) -> Any:
        if key in self:
            value = self.pop(key)
        else:
            value = default
        self[key] = value
        while len(self) > self.capacity:
            del self[next(iter(self))]
        return value


async def fetch_all(urls: list[str], *, timeout: float = 2.5) -> dict[str, int]:
    results: dict[str, int] = {}

    async def one(url: str) -> None:
        await asyncio.sleep(0)
        results[url] = len(url)

    await asyncio.wait_for(asyncio.gather(*(one(u) for u in urls)), timeout)
    return results


def main(argv: list[str] | None = None) -> int:
    pts = [Point(i, -i) for i in range(10)]
    total = sum((p.norm() for p in pts), start=0.0)
    print(f"total={total:.3f} {len(pts)=} {'ok' if total > 0 else 'bad'!r}")
    print("tab\tseparated\tvalues", r"raw\string", b"\x00\xff", 'single\'quote')
    matrix = [[0] * 3 for _ in range(3)]
    matrix[1][2] += 42  # the answer
    squares = {k: k**2 for k in range(1, 11) if k % 2 == 0}
    lam = lambda *args, **kw: (args, kw)  # noqa: E731
    try:
        1 / 0
    except ZeroDivisionError as exc:  # pragma: no cover
        print("error:", exc)
    finally:
        pass
    return 0 if squares and lam and matrix else 1


if __name__ == "__main__":
    raise SystemExit(main())
