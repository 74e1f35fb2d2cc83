"""Draft policies: which session's draft forward runs when sessions share a device and it would idle."""
