"""What every entry point that takes a policy (the integrations, replay, tune) checks first:
that it is a :class:`ctxwin.Policy`, so a policy path (or ``None``) is refused where it is
passed, not found at the first model call as a bare ``AttributeError``."""

from __future__ import annotations

from ctxwin._engine import Policy
from ctxwin._exceptions import PolicyError

__all__ = ["checked_policy"]


def checked_policy(policy: object, what: str) -> Policy:
    """``policy``, when it is a :class:`ctxwin.Policy`; otherwise a :class:`ctxwin.PolicyError`
    (``key="policy"``) saying that ``what`` (the constructor or factory called) takes one."""
    if not isinstance(policy, Policy):
        raise PolicyError(
            f"{what} takes a Policy (ctxwin.load_policy(...)), not {type(policy).__name__}",
            key="policy",
        )
    return policy
