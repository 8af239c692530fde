"""Handing items from a worker thread to a coroutine's bounded queue (log streams, exec
sessions): the thread waits while the queue is full, and gives up once ``closed`` is set
or the event loop is gone, so it never outlives its consumer."""

from __future__ import annotations

import asyncio
import threading
from typing import TypeVar

T = TypeVar("T")


def hand_over(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[T], item: T,
              closed: threading.Event) -> bool:
    """Put ``item`` on ``queue`` from a thread; False when the consumer is gone."""
    future = asyncio.run_coroutine_threadsafe(queue.put(item), loop)
    while not closed.is_set():
        try:
            future.result(timeout=0.5)
            return True
        except TimeoutError:
            continue
        except Exception:  # the loop is gone
            return False
    future.cancel()
    return False
