"""What forge keeps in the database.

``Thread`` and ``Checkpoint`` are the checkpoint store proper (``forgeui.store``); ``Run``
and ``Interrupt`` mirror the checkpoints into rows the inbox and the API can query;
``Answer``, ``SteeringNote`` and ``AuditEntry`` record what people did; ``Event`` is the
monotonic feed a reconnecting websocket catches up from.
"""

from .audit import (
    AppendOnly,
    AuditEntry,
    AuditQuerySet,
)
from .audit_checks import (
    ChainCheck,
    ChainCheckQuerySet,
    verify_chain,
    verify_when_due,
)
from .events import (
    Event,
    EventKind,
    EventQuerySet,
)
from .interrupts import (
    BREAKPOINT_KINDS,
    Answer,
    AnswerKind,
    AnswerQuerySet,
    Interrupt,
    InterruptQuerySet,
    PayloadField,
    SteeringNote,
)
from .notifications import (
    DeliveryStatus,
    NotificationCursor,
    Webhook,
    WebhookDelivery,
    WebhookEvent,
    WebhookQuerySet,
)
from .requests import (
    AgentRequest,
    AgentRequestQuerySet,
)
from .runs import (
    ID_LENGTH,
    Checkpoint,
    CheckpointQuerySet,
    ChildPolicy,
    InterruptStatus,
    Run,
    RunQuerySet,
    RunStatus,
    Thread,
)
from .tokens import (
    TOKEN_PREFIX,
    TOKEN_PREFIX_LENGTH,
    TOKEN_USE_RESOLUTION,
    ApiToken,
    ApiTokenQuerySet,
)

__all__ = [
    "BREAKPOINT_KINDS",
    "ID_LENGTH",
    "TOKEN_PREFIX",
    "TOKEN_PREFIX_LENGTH",
    "TOKEN_USE_RESOLUTION",
    "AgentRequest",
    "AgentRequestQuerySet",
    "Answer",
    "AnswerKind",
    "AnswerQuerySet",
    "ApiToken",
    "ApiTokenQuerySet",
    "AppendOnly",
    "AuditEntry",
    "AuditQuerySet",
    "ChainCheck",
    "ChainCheckQuerySet",
    "Checkpoint",
    "CheckpointQuerySet",
    "ChildPolicy",
    "DeliveryStatus",
    "Event",
    "EventKind",
    "EventQuerySet",
    "Interrupt",
    "InterruptQuerySet",
    "InterruptStatus",
    "NotificationCursor",
    "PayloadField",
    "Run",
    "RunQuerySet",
    "RunStatus",
    "SteeringNote",
    "Thread",
    "Webhook",
    "WebhookDelivery",
    "WebhookEvent",
    "WebhookQuerySet",
    "verify_chain",
    "verify_when_due",
]
