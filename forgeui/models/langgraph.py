"""LangGraph checkpoints kept by ``forgeui.langgraph.ForgeSaver``.

A checkpoint row holds the checkpoint without its large channel values; each of those is a
``LangGraphBlob`` keyed by (thread, namespace, channel, version), written only when the
channel's version changes, so a step that leaves a channel alone does not copy it. A list
that a step only appended to is kept as the appended items and the version it extends
(``base_version``), with a whole copy (``root_version``) every so often, so reading it back
is one query for a bounded number of rows.
``LangGraphWrite`` rows are the pending writes of a checkpoint's tasks.

These tables are LangGraph's, not forge's: no ``Run`` or ``Interrupt`` row mirrors them.
"""

from __future__ import annotations

from django.db import models

from .runs import ID_LENGTH


class LangGraphCheckpoint(models.Model):
    thread_id = models.CharField(max_length=ID_LENGTH)
    checkpoint_ns = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    checkpoint_id = models.CharField(max_length=ID_LENGTH)
    parent_checkpoint_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    # Copied out of the metadata so deleting a run's checkpoints is an index lookup.
    run_id = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    type = models.CharField(max_length=32, help_text="the serializer's type tag")
    checkpoint = models.BinaryField(help_text="the checkpoint with its small values inline")
    metadata = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread_id", "checkpoint_ns", "checkpoint_id"],
                                    name="langgraph_checkpoint_key"),
        ]
        indexes = [models.Index(fields=["run_id"], name="langgraph_checkpoint_run")]

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.checkpoint_ns}/{self.checkpoint_id}"


class LangGraphBlob(models.Model):
    thread_id = models.CharField(max_length=ID_LENGTH)
    checkpoint_ns = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    channel = models.CharField(max_length=ID_LENGTH)
    version = models.CharField(max_length=ID_LENGTH)
    type = models.CharField(max_length=32, help_text="the serializer's type tag, or 'empty'")
    blob = models.BinaryField(null=True)
    base_version = models.CharField(
        max_length=ID_LENGTH, blank=True, default="",
        help_text="for appended items, the version of the list they extend; '' when whole")
    root_version = models.CharField(
        max_length=ID_LENGTH, blank=True, default="",
        help_text="for appended items, the version of the whole copy they lead back to")
    depth = models.PositiveIntegerField(
        default=0, help_text="appended parts between this version and a whole copy")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread_id", "checkpoint_ns", "channel", "version"],
                                    name="langgraph_blob_key"),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.checkpoint_ns}/{self.channel}@{self.version}"


class LangGraphWrite(models.Model):
    thread_id = models.CharField(max_length=ID_LENGTH)
    checkpoint_ns = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    checkpoint_id = models.CharField(max_length=ID_LENGTH)
    task_id = models.CharField(max_length=ID_LENGTH)
    task_path = models.CharField(max_length=ID_LENGTH, blank=True, default="")
    idx = models.IntegerField()
    channel = models.CharField(max_length=ID_LENGTH)
    type = models.CharField(max_length=32, help_text="the serializer's type tag")
    blob = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"],
                name="langgraph_write_key"),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.checkpoint_id}/{self.task_id}[{self.idx}]"
