"""Before a load runs: read the user's server URL the forgiving way and check that a server
answers there, so a typo costs one line and exit 2 instead of a whole point of failed requests.

- `localhost:8000` (no scheme) means `http://localhost:8000`.
- A base URL given with the API prefix (`http://host:8000/v1`) is the same server: request
  paths already carry `/v1/...`, so the prefix is dropped instead of asking `/v1/v1/...`.
- The check is `GET /v1/models` (every OpenAI-compatible server has it; its first id is the
  default served model name), falling back to `GET /health` for servers without a model list.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import urlsplit, urlunsplit

from llmbench.errors import SpecError


def safe_url(url: str) -> str:
    """The URL for the record: user:password@ in a URL is a credential, kept out."""
    u = urlsplit(url)
    host = u.hostname or ""
    return f"{u.scheme}://{host}{':' + str(u.port) if u.port else ''}{u.path}"


def normalize_url(url: str) -> str:
    s = url.strip()
    if "://" not in s:
        s = "http://" + s
    u = urlsplit(s)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise SpecError([("URL", f"{url!r} is not a server address; give http://HOST:PORT "
                                 "(or HOST:PORT)")])
    try:
        u.port   # noqa: B018 -- raises on a port that is not a number
    except ValueError:
        raise SpecError([("URL", f"{url!r}: the port is not a number")]) from None
    path = u.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[:-3]
    return urlunsplit((u.scheme, u.netloc, path, "", ""))


def _get(url: str, api_key: str | None, timeout_s: float) -> tuple[int, bytes]:
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    if api_key:
        req.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


def check_server(url: str, api_key: str | None = None, timeout_s: float = 10.0) -> list[str]:
    """The model ids the server lists (possibly none); SpecError (exit 2) with the reason when
    nothing usable answers at `url` (already normalised)."""
    try:
        status, body = _get(f"{url}/v1/models", api_key, timeout_s)
        if status == 404:
            health, _ = _get(f"{url}/health", api_key, timeout_s)
            if health == 200:
                return []
    except urllib.error.URLError as e:
        reason = e.reason
        why = "connection refused" if isinstance(reason, ConnectionRefusedError) else str(reason)
        if isinstance(reason, TimeoutError):
            why = f"no answer within {timeout_s:g} s"
        raise SpecError([("URL", f"no server answers at {url} ({why}); is it running, and is "
                                 "the address right?")]) from None
    except TimeoutError:
        raise SpecError([("URL", f"the server at {url} did not answer within {timeout_s:g} s")]) from None
    except OSError as e:
        raise SpecError([("URL", f"cannot reach {url}: {e}")]) from None
    if status in (401, 403):
        raise SpecError([("URL", f"the server at {url} refused the request (HTTP {status}): give "
                                 "its API key with --api-key-env VAR or --api-key-file FILE")])
    if status == 404:
        raise SpecError([("URL", f"{url} answers, but not as an OpenAI-compatible server "
                                 "(GET /v1/models and /health: HTTP 404); give the server's root, "
                                 "e.g. http://host:8000")])
    if status != 200:
        raise SpecError([("URL", f"the server at {url} answered GET /v1/models with HTTP {status}")])
    try:
        data = json.loads(body).get("data") or []
        return [m["id"] for m in data if isinstance(m, dict) and "id" in m]
    except (ValueError, AttributeError, TypeError):
        return []
