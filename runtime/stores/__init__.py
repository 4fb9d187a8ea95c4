"""Checkpoint store backends that need nothing but Python."""

from .memory import InMemoryCheckpointStore

__all__ = ["InMemoryCheckpointStore"]
