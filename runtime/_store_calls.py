"""Store calls written once for sync and async callers (a dialogue, and its two drivers),
and ``update_latest``: a compare-and-set on a thread's latest checkpoint, retried."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar

from .checkpoint import BlockingStore, Draft, HeadStore, as_blocking
from .errors import CheckpointConflict

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LoadLatest:
    """A store call a dialogue asks for: ``load_head(thread_id)``."""

    thread_id: str


@dataclass(frozen=True, slots=True)
class SaveNext:
    """A store call a dialogue asks for: ``save_head(draft)``."""

    draft: Draft


# Store work written once for sync and async callers: the generator yields the calls it
# needs, gets each call's result sent back (a conflict thrown back in), and returns its
# answer; ``converse`` carries it out, on a store's async calls or its blocking twins.
StoreDialogue = Generator[LoadLatest | SaveNext, Draft | None, T]


class _Heads(Protocol):
    """The two store calls a dialogue makes (``HeadStore``'s)."""

    async def load_head(self, thread_id: str) -> Draft | None: ...

    async def save_head(self, draft: Draft) -> None: ...


async def converse(store: _Heads, dialogue: StoreDialogue[T]) -> T:
    """Carry out ``dialogue`` with ``store``'s async calls."""
    reply: Draft | None = None
    conflict: CheckpointConflict | None = None
    while True:
        try:
            call = dialogue.send(reply) if conflict is None else dialogue.throw(conflict)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        reply, conflict = None, None
        try:
            if isinstance(call, LoadLatest):
                reply = await store.load_head(call.thread_id)
            else:
                await store.save_head(call.draft)
        except CheckpointConflict as exc:
            conflict = exc


class _Twins:
    """A ``BlockingStore``'s blocking twins under ``HeadStore``'s names: coroutines that
    never suspend, so ``converse`` over them finishes at its first step, with no loop."""

    def __init__(self, store: BlockingStore) -> None:
        self.store = store

    async def load_head(self, thread_id: str) -> Draft | None:
        return self.store.load_head_sync(thread_id)

    async def save_head(self, draft: Draft) -> None:
        self.store.save_head_sync(draft)


def converse_blocking(store: BlockingStore, dialogue: StoreDialogue[T]) -> T:
    """Carry out ``dialogue`` with ``store``'s blocking twins, on a thread that may."""
    running = converse(_Twins(store), dialogue)
    try:
        running.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    running.close()
    raise RuntimeError("a blocking store call suspended")


Change = Callable[[Draft | None], Draft]


def _latest_changed(thread_id: str, change: Change) -> StoreDialogue[Draft]:
    """Save ``change(latest)`` as the thread's next checkpoint, retrying from the new
    latest on ``CheckpointConflict``; the checkpoint saved."""
    while True:
        cp = change((yield LoadLatest(thread_id)))
        try:
            yield SaveNext(cp)
        except CheckpointConflict:
            continue
        return cp


async def update_latest(store: HeadStore, thread_id: str, change: Change) -> Draft:
    """Save ``change(latest)`` as the thread's next checkpoint, retrying from the new latest
    on ``CheckpointConflict``; the checkpoint saved.

    ``change`` is plain, fast code (it runs on the store's own thread when the store is a
    ``BlockingStore``: then the whole loop is one trip there) and gets a fresh checkpoint
    each try.
    """
    blocking = as_blocking(store)
    if blocking is not None:
        return await blocking.call_in_store_thread(
            partial(update_latest_blocking, blocking, thread_id, change))
    return await converse(store, _latest_changed(thread_id, change))


def update_latest_blocking(store: BlockingStore, thread_id: str,
                           change: Change) -> Draft:
    """``update_latest`` with a ``BlockingStore``'s blocking twins, on its thread."""
    return converse_blocking(store, _latest_changed(thread_id, change))
