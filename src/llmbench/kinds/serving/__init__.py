"""Serving points (`llmbench serve`): their config, kind, session (the timing loop), prompts and summary."""
