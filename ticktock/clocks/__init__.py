"""Deadline clocks: how long post-audio and idle-window work takes (never by sleeping)."""
