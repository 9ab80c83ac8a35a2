"""The Spark monitoring REST API over HTTP (stdlib urllib): GET a JSON document, with retries
and backoff; every failure is counted by kind, and the error that ends the retries names the
URL.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable
from typing import Any


class LiveError(RuntimeError):
    """The live commands cannot go on: the message names the URL, the file or the setting."""


class Unreachable(LiveError):
    """Nothing answered at the URL after every retry (a connection refused, a timeout)."""


class HttpError(LiveError):
    """The URL answered with an HTTP error status after every retry."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class RestClient:
    """GET `<url>/api/v1/<path>` as JSON. A connection failure or an HTTP 404 / 5xx is retried
    `retries` times with exponential backoff from `backoff` seconds (a driver busy with
    garbage collection answers late; a stage's page 404s while the UI cleans up); `errors`
    counts every failed try by kind ("http 404", "connection", ...)."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 10.0,
        retries: int = 4,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ):
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise LiveError(f"{url!r} is not an http(s) URL (e.g. http://driver-host:4040)")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.sleep = sleep
        self.errors: Counter[str] = Counter()

    def endpoint(self, path: str, query: dict[str, Any] | None = None) -> str:
        address = f"{self.url}/api/v1/{path.lstrip('/')}"
        if query:
            address += "?" + urllib.parse.urlencode(query, doseq=True)
        return address

    def get(self, path: str, query: dict[str, Any] | None = None, retries: int | None = None):
        address = self.endpoint(path, query)
        tries = 1 + (self.retries if retries is None else retries)
        last: LiveError | None = None
        for attempt in range(tries):
            if attempt:
                self.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                with urllib.request.urlopen(address, timeout=self.timeout) as answer:
                    body = answer.read()
            except urllib.error.HTTPError as error:
                self.errors[f"http {error.code}"] += 1
                last = HttpError(
                    f"{address}: HTTP {error.code} {error.reason} (after {attempt + 1} tries)",
                    error.code,
                )
                if error.code != 404 and error.code < 500:
                    break  # a bad request stays bad
                continue
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as error:
                self.errors["connection"] += 1
                reason = getattr(error, "reason", error)
                last = Unreachable(
                    f"{address}: no answer ({reason}) after {attempt + 1} tries over "
                    f"{self.backoff * (2**attempt - 1):.1f} s"
                )
                continue
            try:
                return json.loads(body)
            except ValueError:
                self.errors["not json"] += 1
                last = LiveError(f"{address}: the answer is not JSON: {body[:80]!r}")
        assert last is not None
        raise last
