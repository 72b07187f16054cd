"""Options of a registered part (a load pattern, a request shape): its own pydantic model,
filled from `--pattern-opt` / `--shape-opt KEY=VALUE`, its errors named by that flag."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from llmbench.errors import SpecError


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def parse_options(model: type[BaseModel], given: dict[str, Any], flag: str, owner: str) -> BaseModel:
    try:
        return model(**given)
    except ValidationError as e:
        raise SpecError([(flag, f"{owner}: " + "; ".join(
            f"{'.'.join(map(str, err['loc'])) or 'options'}: {err['msg']}"
            for err in e.errors()))]) from None
