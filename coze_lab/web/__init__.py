"""Thin tornado handlers: parse, authorize, one service call, serialize."""
