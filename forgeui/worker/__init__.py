"""``forge_worker``: one process runs many runs at once, taking jobs from procrastinate.

A django-tasks task enqueued in production becomes a procrastinate job on PostgreSQL
(``backend.ProcrastinateBackend``) carrying the task's path and its ids; the worker
(``serve``) awaits coroutine tasks on its event loop and runs sync ones on a bounded
thread pool (``jobs``), up to ``--concurrency`` jobs in flight.
"""
