"""What forge keeps in the database.

``Thread`` and ``Checkpoint`` are the checkpoint store proper (``forgeui.store``); ``Run``
and ``Interrupt`` mirror the checkpoints into rows the inbox and the API can query;
``Answer``, ``Approval``, ``SteeringNote`` and ``AuditEntry`` record what people did;
``Event`` is the monotonic feed a reconnecting websocket catches up from.
``LangGraphCheckpoint``, ``LangGraphBlob`` and ``LangGraphWrite`` keep LangGraph graphs'
checkpoints (``forgeui.langgraph``).
"""

from .approvals import (
    Approval,
    ApprovalQuerySet,
    Vote,
)
from .audit import (
    THREAD_DELETED,
    AppendOnly,
    AuditEntry,
    AuditQuerySet,
)
from .audit_checks import (
    ChainCheck,
    ChainCheckQuerySet,
    chain_check_every,
    verify_chain,
    verify_when_due,
)
from .events import (
    Event,
    EventKind,
    EventQuerySet,
)
from .identities import (
    AGENT_USER_PREFIX,
    SignInMethod,
    SsoIdentity,
    reserved_for_agents,
    sign_in_field,
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
from .langgraph import (
    LangGraphBlob,
    LangGraphCheckpoint,
    LangGraphWrite,
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
    "AGENT_USER_PREFIX",
    "BREAKPOINT_KINDS",
    "ID_LENGTH",
    "THREAD_DELETED",
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
    "Approval",
    "ApprovalQuerySet",
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
    "LangGraphBlob",
    "LangGraphCheckpoint",
    "LangGraphWrite",
    "NotificationCursor",
    "PayloadField",
    "Run",
    "RunQuerySet",
    "RunStatus",
    "SignInMethod",
    "SsoIdentity",
    "SteeringNote",
    "Thread",
    "Vote",
    "Webhook",
    "WebhookDelivery",
    "WebhookEvent",
    "WebhookQuerySet",
    "chain_check_every",
    "reserved_for_agents",
    "sign_in_field",
    "verify_chain",
    "verify_when_due",
]
