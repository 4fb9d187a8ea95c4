"""docs/langgraph.md's LangChain recipe (``create_agent`` + ``HumanInTheLoopMiddleware``) as
registered graphs, on a fake chat model: ``FORGE_GRAPHS`` names ``per_call`` and
``batched``. The model asks to mail the report to the agent's own address, then reports
what the tool said."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from tests.docblocks import block, replaced

PAGE = "docs/langgraph.md"
PROPOSED = {"to": "agent@example.com", "body": "the report"}


class MailingModel(BaseChatModel):
    """A chat model that calls ``send_email`` once, then repeats the tool's answer."""

    @property
    def _llm_type(self) -> str:
        return "fake-mailing"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> MailingModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"done: {last.content}")
        else:
            reply = AIMessage(content="", tool_calls=[
                {"name": "send_email", "args": dict(PROPOSED), "id": "call-1",
                 "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


class Outbox:
    def send(self, to: str, body: str) -> None:
        """Nothing leaves the test: the tool's answer names the address."""


def recipe(mode: str) -> Any:
    """The recipe run as its module would be, in ``mode``: its ``graph``."""
    code = block(PAGE, "from langchain.agents import create_agent")
    if mode != "per_call":
        code = replaced(code, 'interrupt_mode="per_call"', f'interrupt_mode="{mode}"')
    namespace: dict[str, Any] = {"model": MailingModel(), "outbox": Outbox(),
                                 "__name__": "myagent.graph"}
    exec(compile(code, PAGE, "exec"), namespace)
    return namespace["graph"]


def per_call() -> Any:
    return recipe("per_call")


def batched() -> Any:
    return recipe("batched")
