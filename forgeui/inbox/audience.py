"""Whose rows an inbox socket may be sent, and which of them it sees whole.

A socket's user reads the objects of some teams (``roles.teams_where``), or of every team
and of those no team owns (None). The socket joins the channel-layer groups of what it
reads (``broadcast``, through its loop's ``hub``), and every row, deletion and signal it
is about to send is checked against the same teams, so an event that reaches it some
other way (the fallback poll, a replay) shows it nothing it may not read. Sensitive
payload keys are shown whole only where the user may answer (``forgeui.team.sensitive``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forgeui.inbox.broadcast import INBOX_GROUP, team_group
from forgeui.permissions.roles import Action, teams_where


@dataclass(frozen=True, slots=True)
class Audience:
    """The teams in which a socket's user reads and answers (None: everywhere)."""

    reads: frozenset[str] | None
    answers: frozenset[str] | None

    @classmethod
    def of(cls, user: Any) -> Audience:
        """Read from the user's groups (one query, cached on the user object)."""
        return cls(teams_where(user, Action.READ), teams_where(user, Action.ANSWER))

    def groups(self) -> list[str]:
        """The inbox groups to join: the all-teams group, or one per team read."""
        if self.reads is None:
            return [INBOX_GROUP]
        return [team_group(team) for team in sorted(self.reads)]

    def may_read(self, team: str | None) -> bool:
        """May see an object of ``team`` ("": no team's; None: not known, so only a
        reader of everything may)."""
        return self.reads is None or (team is not None and team in self.reads)

    def sees_whole(self, team: str | None) -> bool:
        """Sees sensitive keys of an object of ``team``: may answer there."""
        return self.answers is None or (team is not None and team in self.answers)

    def reads_less_than(self, before: Audience) -> bool:
        """Whether some team ``before`` read is no longer read."""
        if self.reads is None:
            return False
        return before.reads is None or bool(before.reads - self.reads)
