"""The roles a member holds in a team, in order: viewer < editor < owner (pure: imports no Django).

A viewer reads dashboards and exports; an editor also changes settings, launches audits and imports files; an owner
also manages the team's members and deletes its objects.
"""
from __future__ import annotations

VIEWER = "viewer"
EDITOR = "editor"
OWNER = "owner"

ORDER: tuple[str, ...] = (VIEWER, EDITOR, OWNER)
CHOICES: tuple[tuple[str, str], ...] = ((VIEWER, "Viewer"), (EDITOR, "Editor"), (OWNER, "Owner"))


def rank(role: str | None) -> int:
    """The role's place in ORDER (0 for a viewer); -1 for no role. Raises ValueError for an unknown role."""
    if role is None:
        return -1
    if role not in ORDER:
        raise ValueError(f"unknown role {role!r}: one of {', '.join(ORDER)}")
    return ORDER.index(role)


def at_least(role: str | None, minimum: str) -> bool:
    """Whether ``role`` (None: no role) is ``minimum`` or above."""
    return rank(role) >= rank(minimum)


def roles_at_least(minimum: str) -> tuple[str, ...]:
    """Every role that is ``minimum`` or above."""
    return ORDER[rank(minimum):]
