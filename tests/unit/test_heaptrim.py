"""HeapTrim: a pane worker trims its heap once per interval, and only after it was busy (#15).

That a real worker runs it is proven in tests/e2e/test_heap_trim.py."""

from __future__ import annotations

import asyncio
import platform

import pytest

from pebrel import heaptrim
from pebrel.heaptrim import HeapTrim
from tests.conftest import wait_for_async

pytestmark = pytest.mark.timeout(30)


class _Trims:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def test_only_a_busy_interval_trims() -> None:
    trims = _Trims()
    heap = HeapTrim(trims)
    heap.tick()
    assert trims.count == 0, "a quiet worker trimmed"
    heap.busy = True
    heap.tick()
    assert (trims.count, heap.busy) == (1, False)
    heap.tick()
    assert trims.count == 1, "trimmed again without work in between"


def test_without_malloc_trim_nothing_is_trimmed() -> None:
    heap = HeapTrim(None)
    heap.busy = True
    heap.tick()
    assert heap.trims == 0
    asyncio.run(asyncio.wait_for(heap.run(), 1))  # returns at once: no timer is kept


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_glibc_malloc_trim_is_found_and_runs() -> None:
    trim = heaptrim.malloc_trim()
    assert trim is not None
    trim()


def test_run_ticks_every_interval() -> None:
    async def scenario() -> None:
        trims = _Trims()
        heap = HeapTrim(trims, interval_s=0.01)
        task = asyncio.get_running_loop().create_task(heap.run())
        try:
            heap.busy = True
            await wait_for_async(lambda: trims.count == 1, 5, "a trim after busy")
            heap.busy = True
            await wait_for_async(lambda: trims.count == 2, 5, "a second trim after busy")
        finally:
            task.cancel()

    asyncio.run(scenario())
