"""Secrets blanked from command lines before they are recorded or shown."""

from __future__ import annotations

import re

_SECRET_FLAG = re.compile(r"(?i)^--?[\w-]*(api[-_]?key|token|secret|password)[\w-]*$")


def redact_args(args: list[str]) -> list[str]:
    """Command-line words with secrets blanked: values of --api-key/--token-like flags (as the
    next word or after '='), and anything that looks like a key (sk-..., Bearer ...)."""
    out, hide = [], False
    for a in args:
        if hide:
            out.append("<redacted>")
            hide = False
            continue
        flag, eq, _ = a.partition("=")
        if _SECRET_FLAG.match(flag) and not flag.endswith(("-env", "-file", "_env", "_file")):
            if eq:
                out.append(f"{flag}=<redacted>")
                continue
            hide = True
        out.append(re.sub(r"(?i)(sk-|bearer\s+)\S+", r"\1<redacted>", a))
    return out
