"""A tenant's policy priority is its ceiling: a request may ask for less, never for more.

Decision: with a tenant, the effective priority is the less urgent of the tenant's policy
priority and ``x-gateway-priority`` (the header can only lower it); without the header it
is the tenant's. Without tenants (an open gateway) there is no ceiling: the header decides,
standard when absent.
"""

from __future__ import annotations

from gateway.admission.queue import Priority


def effective_priority(requested: Priority | None, ceiling: Priority | None) -> Priority:
    """The priority a request is served at (``Priority``: a larger value is less urgent)."""
    if ceiling is None:
        return Priority.STANDARD if requested is None else requested
    if requested is None:
        return ceiling
    return max(requested, ceiling)
