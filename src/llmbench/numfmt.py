"""Number formatting for tables (a leaf module: the train command uses it on GPU machines
without importing the whole CLI)."""


def fmt(v: float | None, digits: int = 3) -> str:
    if v is None:
        return "-"
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"
