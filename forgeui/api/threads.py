"""A thread's checkpoints (``/api/threads/...``, ``/api/checkpoints/...``) and its forks."""

from datetime import UTC, datetime
from functools import partial
from typing import Any

from django.http import Http404, HttpRequest
from ninja import Field, Router, Schema, Status
from ninja.pagination import paginate

from forgeui import langgraph
from forgeui.api.pagination import BytePage
from forgeui.api.schemas import BODY_ERRORS, CONFLICT, ERRORS, Body, Id, get_one
from forgeui.models import Interrupt, Run, Thread
from forgeui.permissions.roles import Action, allowed
from forgeui.runs import services
from forgeui.runs.exceptions import NotFound
from forgeui.runs.services.forking import wording as fork_start
from forgeui.store import DjangoCheckpointStore
from forgeui.store.pages import ThreadPages
from forgeui.team.sensitive import mask

router = Router(tags=["forge"])


class CheckpointOut(Schema):
    """A checkpoint row; the fields below ``created_at`` come from its stored record."""

    id: str
    thread_id: str
    run_id: str
    parent_id: str | None
    seq: int = Field(description="position in the thread, from 1")
    node: str | None
    status: str
    step: int
    created_at: datetime
    namespace: list[str]
    interrupt_payload: Any
    pending_input: Any
    state: dict[str, Any]
    history: list[Any]
    interrupts: list[Any] = Field(description="this run's pending interrupts at this point")
    resolved: list[Any] = Field(description="interrupts answered or cancelled so far")
    steering: list[Any]
    output: Any
    error: Any = Field(description="why it failed; null where nothing did")
    forked_from: str | None
    next_step: str = Field(description="on a fork's first checkpoint: what resuming does")

    @staticmethod
    def resolve_status(obj: Any) -> str:
        """A fork's first checkpoint waiting to be driven reads ``forked``, not failed."""
        return fork_start.shown_status(obj)

    @staticmethod
    def resolve_state(obj: Any) -> dict[str, Any]:
        return mask(langgraph.shown_state(obj), getattr(obj, "masked_keys", ()))

    @staticmethod
    def resolve_error(obj: Any) -> Any:
        return fork_start.shown_error(obj)

    @staticmethod
    def resolve_next_step(obj: Any) -> str:
        return fork_start.next_step(obj)

    @staticmethod
    def resolve_seq(obj: Any) -> int:
        return int(obj.position)

    @staticmethod
    def resolve_created_at(obj: Any) -> datetime:
        return datetime.fromtimestamp(obj.created_at / 1000, UTC)

    @staticmethod
    def resolve_parent_id(obj: Any) -> str | None:
        return obj.parent_id or None

    @staticmethod
    def resolve_node(obj: Any) -> str | None:
        return obj.node or None


class CheckpointStateOut(Schema):
    """One checkpoint's state alone: small however long the thread's history has grown."""

    id: str
    thread_id: str
    seq: int = Field(description="position in the thread, from 1")
    state: dict[str, Any]

    @staticmethod
    def resolve_seq(obj: Any) -> int:
        return int(obj.position)

    @staticmethod
    def resolve_state(obj: Any) -> dict[str, Any]:
        return mask(langgraph.shown_state(obj), getattr(obj, "masked_keys", ()))


class ForkIn(Body):
    checkpoint_id: Id | None = None
    inputs: dict[str, Any] | None = Field(
        None, description="edit-then-fork: interrupt id (pending at that checkpoint) -> new "
                          "input for the paused node, which runs again from it in the fork")
    answers: dict[str, Any] | None = Field(
        None, description="interrupt id -> an answer given to the fork's copy of it at once")


class ForkOut(Schema):
    thread_id: str


MASKED_FIELDS = frozenset({"interrupt_payload", "pending_input", "state", "history",
                           "interrupts", "resolved", "output", "steering"})


class Masked:
    """A checkpoint as someone who may not answer its thread's interrupts reads it: every
    key they mark sensitive masked, wherever in the record it is."""

    def __init__(self, record: Any, keys: tuple[str, ...]) -> None:
        self.record, self.masked_keys = record, keys

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.record, name)
        return mask(value, self.masked_keys) if name in MASKED_FIELDS else value


def hidden_keys(user: Any, thread_id: str) -> tuple[str, ...]:
    """The keys to mask in ``thread_id``'s checkpoints for ``user``: those its tree's
    interrupts mark sensitive, unless ``user`` may answer them. ``NotFound`` when the
    thread is not one ``user`` may read."""
    run = (Run.objects.visible_to(user).filter(thread_id=thread_id)
           .values("team", "root_thread_id").first())
    if run is None:
        raise NotFound(f"no thread {thread_id!r}")
    if allowed(user, Action.ANSWER, run["team"]):
        return ()
    marked = Interrupt.objects.of_tree(run["root_thread_id"]).values_list("sensitive",
                                                                          flat=True)
    return tuple(dict.fromkeys(key for keys in marked for key in keys or ()))


def shown_to(keys: tuple[str, ...], records: list[Any]) -> list[Any]:
    return [Masked(record, keys) for record in records] if keys else records


def checkpoint_bytes(checkpoint: Any) -> int:
    """A checkpoint's size in the list, as its JSON (each one carries its thread so far)."""
    return len(CheckpointOut.from_orm(checkpoint).model_dump_json())


@router.get("/threads/{anypath:thread_id}/checkpoints", response={200: list[CheckpointOut],
                                                                **ERRORS})
@paginate(BytePage, measure=checkpoint_bytes)
def list_checkpoints(request: HttpRequest, thread_id: Id) -> Any:
    """Oldest first, a page at most ``limit`` checkpoints and about 2 MB: ``next`` is the
    URL of the page after. Sub-agent thread ids contain '/'; send them as they are."""
    get_one(Thread.objects.filter(deleted=False), "thread", thread_id)
    keys = hidden_keys(request.auth, thread_id)
    store = DjangoCheckpointStore()
    fetch = partial(store.list_sync, thread_id)
    return ThreadPages(store.count_sync(thread_id),
                       lambda first, last: shown_to(keys, fetch(first, last)))


@router.get("/checkpoints/{checkpoint_id}", response={200: CheckpointOut, **ERRORS})
def get_checkpoint(request: HttpRequest, checkpoint_id: Id) -> Any:
    found = DjangoCheckpointStore().load_by_id_sync(checkpoint_id)
    if found is None:
        raise Http404(f"no checkpoint {checkpoint_id!r}")
    try:
        keys = hidden_keys(request.auth, found.thread_id)
    except NotFound:
        raise NotFound(f"no checkpoint {checkpoint_id!r}") from None
    return shown_to(keys, [found])[0]


@router.get("/checkpoints/{checkpoint_id}/state",
            response={200: CheckpointStateOut, **ERRORS})
def get_checkpoint_state(request: HttpRequest, checkpoint_id: Id) -> Any:
    """The state at one checkpoint, without the history that a long thread makes large."""
    return get_checkpoint(request, checkpoint_id)


@router.post("/threads/{anypath:thread_id}/fork",
             response={201: ForkOut, **BODY_ERRORS, **CONFLICT})
def fork_thread(request: HttpRequest, thread_id: Id, body: ForkIn) -> Any:
    """Copy a root thread as of a checkpoint (default: latest) into a new thread,
    optionally with a paused node's input edited or an answer pre-filled."""
    new_thread = services.fork_thread(request.auth, thread_id, body.checkpoint_id,
                                      inputs=body.inputs, answers=body.answers)
    return Status(201, {"thread_id": new_thread})
