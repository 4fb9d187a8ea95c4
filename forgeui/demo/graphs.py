"""The demo graphs: the README's quick start and the dashboard's demo runs.

Deterministic, no network, no model: each stands for a kind of human-in-the-loop flow.
``FORGE_GRAPHS`` points at these by default (``"forgeui.demo.graphs:transfer"``, ...).
"""

from __future__ import annotations

from typing import Any

from runtime import DurableExecutor, NodeContext

ACTIONS = ["accept", "edit", "respond", "ignore"]


# -- transfer: the quick start ---------------------------------------------------------

def ask(input: Any, ctx: NodeContext) -> dict[str, Any]:
    approved = ctx.interrupt({"question": "Approve this transfer?"})
    return {"input": input, "approved": approved}


def execute(input: dict[str, Any]) -> dict[str, Any]:
    return {**input, "done": True}


transfer = DurableExecutor(nodes=[("ask", ask), ("execute", execute)], name="transfer")


# -- supervisor: two sub-agents in parallel, each asking for approval ------------------

def plan(topic: Any) -> dict[str, Any]:
    return {"topic": topic.get("topic", "quarterly report") if isinstance(topic, dict) else topic}


def find_sources(task: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    sources = [f"{task['topic']} — internal wiki", f"{task['topic']} — finance ledger"]
    answer = ctx.interrupt({"question": "Use these sources?", "sources": sources,
                            "actions": ACTIONS})
    return {"sources": sources, "review": answer, "steering": ctx.steering}


def draft(task: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    text = f"Draft about {task['topic']}."
    answer = ctx.interrupt({"question": "Publish this draft?", "draft": text,
                            "actions": ACTIONS})
    return {"draft": text, "review": answer, "steering": ctx.steering}


def summarize(parts: dict[str, Any]) -> dict[str, Any]:
    return {"report": parts}


research_agent = DurableExecutor(nodes=[("find_sources", find_sources)], name="research_agent")
writer_agent = DurableExecutor(nodes=[("draft", draft)], name="writer_agent")

supervisor = DurableExecutor(
    nodes=[("plan", plan), ("research_agent", research_agent),
           ("writer_agent", writer_agent), ("summarize", summarize)],
    edges={"plan": lambda _: ["research_agent", "writer_agent"],
           "research_agent": lambda _: "summarize", "writer_agent": lambda _: "summarize"},
    name="supervisor",
)


# -- parallel approvals: two sign-offs in one step -------------------------------------

def request(expense: Any) -> Any:
    return expense


def legal(expense: Any, ctx: NodeContext) -> Any:
    return ctx.interrupt({"question": "Legal sign-off?", "expense": expense,
                          "actions": ["accept", "respond"]})


def finance(expense: Any, ctx: NodeContext) -> Any:
    return ctx.interrupt({
        "question": "Finance sign-off?", "expense": expense,
        "answer_schema": {
            "type": "object",
            "properties": {"approved": {"type": "boolean"},
                           "limit": {"type": "integer", "minimum": 0}},
            "required": ["approved"],
        },
    })


def decide(signoffs: dict[str, Any]) -> dict[str, Any]:
    return {"signoffs": signoffs}


parallel_approvals = DurableExecutor(
    nodes=[("request", request), ("legal", legal), ("finance", finance), ("decide", decide)],
    edges={"request": lambda _: ["legal", "finance"], "legal": lambda _: "decide",
           "finance": lambda _: "decide"},
    name="parallel_approvals",
)


# -- deploy: a static breakpoint before the risky node ---------------------------------

def build(release: Any) -> dict[str, Any]:
    version = release.get("version", "1.0.0") if isinstance(release, dict) else "1.0.0"
    return {"version": version, "artifact": f"app-{version}.tar.gz"}


def deploy_release(built: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    receipt = ctx.once("deploy", lambda: {"deployed": built["artifact"]})
    return {**built, **receipt}


def verify(deployed: dict[str, Any]) -> dict[str, Any]:
    return {**deployed, "healthy": True}


deploy = DurableExecutor(
    nodes=[("build", build), ("deploy", deploy_release), ("verify", verify)],
    interrupt_before=["deploy"],
    name="deploy",
    input_schema={
        "type": "object",
        "properties": {
            "version": {"type": "string", "title": "Version", "minLength": 1, "maxLength": 40,
                        "description": "The release to build and deploy (default 1.0.0)"},
            "canary": {"type": "boolean", "title": "Canary first"},
        },
    },
)


# -- nested: a sub-sub-agent three levels down -----------------------------------------

def investigate(case: Any, ctx: NodeContext) -> dict[str, Any]:
    answer = ctx.interrupt({"question": "Escalate this case?", "case": case,
                            "actions": ["accept", "respond"]})
    return {"case": case, "escalate": answer}


def triage(case: Any) -> Any:
    return case


def report(findings: Any) -> dict[str, Any]:
    return {"findings": findings}


specialist_agent = DurableExecutor(nodes=[("investigate", investigate)], name="specialist_agent")
team_agent = DurableExecutor(nodes=[("triage", triage), ("specialist_agent", specialist_agent)],
                             name="team_agent")
nested = DurableExecutor(nodes=[("intake", triage), ("team_agent", team_agent),
                                ("report", report)], name="nested")

# -- email: Agent Inbox's four responses to one proposed action ------------------------

EMAIL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "title": "To", "minLength": 3, "maxLength": 200},
        "subject": {"type": "string", "title": "Subject", "minLength": 1, "maxLength": 200},
        "body": {"type": "string", "title": "Body", "minLength": 1, "maxLength": 5000},
    },
    "required": ["to", "subject", "body"],
}


def draft_email(request: Any) -> dict[str, Any]:
    request = request if isinstance(request, dict) else {}
    to, topic = request.get("to", "customer@example.com"), request.get("topic", "your order")
    return {"to": to, "subject": f"About {topic}",
            "body": f"Hello,\n\nhere is an update about {topic}.\n\nBest regards"}


def review_email(email: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    """Accept sends the draft, edit sends the reviewer's version, respond hands the
    reviewer's words back instead of sending, ignore drops the e-mail."""
    answer = ctx.interrupt({
        "title": f"Send this e-mail to {email['to']}?",
        "description": "The agent drafted an e-mail.\n\n- **Accept** sends it as drafted\n"
                       "- **Edit** sends your version\n- **Respond** sends your words back "
                       "to the agent instead\n- **Ignore** drops it",
        "action": "send_email", "args": email, "actions": ACTIONS,
        "answer_schema": EMAIL_SCHEMA,
    })
    kind = answer.get("type") if isinstance(answer, dict) else None
    if kind == "accept":
        return {"send": email, "response": "accept"}
    if kind == "edit":
        return {"send": answer["args"], "response": "edit"}
    if kind == "respond":
        return {"send": None, "response": "respond", "feedback": answer["args"]}
    return {"send": None, "response": "ignore"}


def send_email(decision: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    email = decision["send"]
    if email is None:
        return {**decision, "sent": False}
    receipt = ctx.once("send", lambda: {"sent_to": email["to"]})
    return {**decision, **receipt, "sent": True}


email = DurableExecutor(
    nodes=[("draft", draft_email), ("review", review_email), ("send", send_email)],
    name="email",
)

GRAPHS: dict[str, str] = {
    name: f"forgeui.demo.graphs:{name}"
    for name in ("transfer", "supervisor", "parallel_approvals", "deploy", "nested", "email")
}
# Written for LangGraph alone (forgeui/demo/langgraph_agent.py), where it is installed.
LANGGRAPH_GRAPHS: dict[str, str] = {
    "refund_agent": "forgeui.demo.langgraph_agent:refund_agent"}
