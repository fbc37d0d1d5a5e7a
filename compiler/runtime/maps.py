"""The device copies of a kernel's TMA tensor maps (128-byte CUtensorMaps its PTX reads through
a pointer), made so that a launch may also be captured into a CUDA graph.

A copy lives in a slot of an arena: device memory and pinned host memory of SLOTS maps each,
allocated outside captures (a capture may not allocate). A map is written to its host slot and
copied to the device on the launch's stream:

- outside a capture the copy is waited for (the map is then in place for every stream) and the
  slot kept for later launches with the same map;
- inside a capture the copy is recorded into the graph (a node that copies the pinned slot at
  every replay, before the launch that reads it) and the slot is the graph's from then on:
  never reused, since a replay reads it at any later time. A later launch outside the capture
  copies it again before using it (the graph may not have run yet).

Past MAP_LIMIT copies (new pointers every call) the slots no graph holds are reused, after the
context's work has run; `flushes` counts those times (a kernel's ready launches pass addresses
and are dropped then). A capture that needs a slot when none is free is a CudaError telling to
warm up outside the capture: a SPARE of free slots is kept ahead of captures.

A launch made again from a kernel's ready launches (pointers it saw before) does not pass
through `address`; a capture may record it all the same. Telling that apart would cost a
capture query every launch, so the first repeat of a ready launch `hold`s its maps as a capture
would: those slots are never reused (a loop over the same tensors makes no new maps; one over
new tensors seldom repeats a launch, and its maps go back to the free slots).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.runtime import driver

SIZE = 128  # bytes of a CUtensorMap
SLOTS = 1024  # maps an arena holds
SPARE = 512  # free slots kept ahead of a capture (an arena is added below it)
MAP_LIMIT = 4096  # copies kept before the free ones are reused


@dataclass
class _Copy:
    device: int
    host: int
    written: bool  # on the device now (False: only a graph's copy writes it)
    held: bool  # a captured launch reads it: never reused


class MapStore:
    """A kernel's tensor-map copies, by (context, map bytes)."""

    def __init__(self) -> None:
        self._copies: dict[tuple[int, bytes], _Copy] = {}
        self._free: dict[int, list[tuple[int, int]]] = {}  # context → (device, host) slots
        self._held = 0
        self.flushes = 0

    def address(self, ctx: int, data: bytes, stream: int) -> tuple[int, bool]:
        """(device address of map `data`, whether it is in place now): False only inside a
        capture, whose launches must not be kept for uncaptured calls."""
        capturing = driver.capturing(stream)
        copy = self._copies.get((ctx, data))
        if copy is None:
            if len(self._copies) - self._held >= MAP_LIMIT and not capturing:
                self._flush()
            device, host = self._slot(ctx, capturing)
            copy = self._copies[(ctx, data)] = _Copy(device, host, False, False)
            driver.write_host(host, data)
        elif copy.written or capturing:
            self._hold(copy, capturing)
            return copy.device, copy.written and not capturing
        driver.copy_to_device(copy.device, copy.host, SIZE, stream)
        self._hold(copy, capturing)
        if not capturing:
            driver.synchronize(stream)
            copy.written = True
        return copy.device, not capturing

    def hold(self, ctx: int, maps: tuple[bytes, ...]) -> None:
        """Keep the slots of `maps` for good (a launch that a graph may have captured reads
        them at any later time)."""
        for data in maps:
            copy = self._copies.get((ctx, data))
            if copy is not None:
                self._hold(copy, True)

    def _hold(self, copy: _Copy, capturing: bool) -> None:
        if capturing and not copy.held:
            copy.held = True
            self._held += 1

    def _slot(self, ctx: int, capturing: bool) -> tuple[int, int]:
        free = self._free.setdefault(ctx, [])
        if capturing and not free:
            raise driver.CudaError(
                f"a CUDA-graph capture needs more than the {SPARE} new TMA maps kept ready: "
                "launch the captured calls once before capturing"
            )
        if not capturing and len(free) <= SPARE:
            device = driver.alloc(SLOTS * SIZE)
            host = driver.alloc_pinned(SLOTS * SIZE)
            free.extend((device + i * SIZE, host + i * SIZE) for i in reversed(range(SLOTS)))
        return free.pop()

    def _flush(self) -> None:
        """Reuse the slots no graph holds, once the launches that read them ran (every
        stream's)."""
        driver.synchronize_context()
        for key, copy in list(self._copies.items()):
            if not copy.held:
                self._free[key[0]].append((copy.device, copy.host))
                del self._copies[key]
        self.flushes += 1
