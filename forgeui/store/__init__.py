"""The runtime's checkpoint store on the Django ORM, and the rows it mirrors."""

from .checkpoints import DjangoCheckpointStore

__all__ = ["DjangoCheckpointStore"]
