"""Number formatting for the train command's table (as llmbench.cli.common.fmt)."""


def fmt(v: float | None, digits: int = 3) -> str:
    if v is None:
        return "-"
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"
