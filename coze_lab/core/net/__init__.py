"""Outbound HTTP for workflow and plugin calls, guarded against private addresses."""

from coze_lab.core.net.guard import BlockedAddress, OutboundPolicy, guarded_request

__all__ = ["BlockedAddress", "OutboundPolicy", "guarded_request"]
