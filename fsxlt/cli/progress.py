"""Progress bars for long CLI work (to stderr, so stdout stays clean for tables)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def bar(description: str, unit: str = "it") -> Callable[[Iterable[T]], Iterable[T]]:
    """A wrapper that shows a progress bar over an iterable; quiet when not a terminal."""

    def wrap(items: Iterable[T]) -> Iterable[T]:
        return tqdm(items, desc=description, unit=unit, leave=False, dynamic_ncols=True,
                    disable=None)

    return wrap
