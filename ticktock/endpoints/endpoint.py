"""A live endpoint as a model option (``model=endpoint``): where the server is, how to reach it, how long to wait.

``configs/model/endpoint.yaml`` builds an ``Endpoint``. Nothing here opens a connection: the options are checked when
the run starts, before any work, and each bad one is one line naming the key (``EndpointOptionError``, exit 2).

Secrets: a bearer token is read only from the environment variable that ``token_env`` names, when a connection opens;
run.json and every message record the variable's name, never its value. Credentials written into the URL
(``wss://user:secret@host/...``, or a ``?api_key=...`` query) are replaced by ``***`` wherever the URL is shown or
recorded (``redacted``); the connection itself goes only to the URL given.

Example::

    >>> endpoint = Endpoint(url="ws://127.0.0.1:8099/v1/realtime")
    >>> endpoint.check(); endpoint.host
    '127.0.0.1:8099'
    >>> redacted("wss://me:s3cret@api.example.org/v1/realtime?model=m&api_key=abc")
    'wss://***@api.example.org/v1/realtime?model=m&api_key=***'
    >>> Endpoint(url="http://127.0.0.1:8099/v1/realtime").check()
    Traceback (most recent call last):
    ...
    ticktock.endpoints.endpoint.EndpointOptionError: model.url: must be a ws:// or wss:// URL, got 'http://127.0.0.1:8099/v1/realtime'
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from ticktock.errors import EXIT_ENDPOINT, ConfigError, TickTockError

#: Query keys whose values are secrets (case-insensitive): redacted wherever a URL is shown.
SECRET_QUERY_KEYS = re.compile(r"(key|token|secret|password|auth|signature|sig)", re.IGNORECASE)
#: An environment variable's name: letters, digits and underscores, not starting with a digit.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


#: The timing options and their bounds (seconds; ms for the send lag).
TIMING_BOUNDS = (("connect_timeout_s", 0.1, 600), ("unit_timeout_s", 0.1, 3600), ("reply_timeout_s", 0.1, 3600),
                 ("grace_s", 0.0, 600), ("end_timeout_s", 0.1, 3600), ("quiet_s", 0.05, 600),
                 ("close_timeout_s", 0.1, 600), ("send_lag_bound_ms", 0.1, 60_000))


class EndpointOptionError(ConfigError):
    """An endpoint option is not allowed (exit code 2): the message names the key, the value and what is allowed."""


class EndpointError(TickTockError):
    """The endpoint cannot be used at all: it cannot be reached, or it refuses the session before any audio (exit code
    5). A session that fails once started is not this error: it is marked failed and the run goes on."""

    exit_code = EXIT_ENDPOINT


def redacted(url: str) -> str:
    """``url`` with its credentials replaced by ``***``: the user-info part and the values of secret-looking query
    keys (``SECRET_QUERY_KEYS``)."""
    parts = urlsplit(str(url))
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, "***" if SECRET_QUERY_KEYS.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_secrets(url: str) -> list[str]:
    """The secrets a URL carries: its ``user:password@`` part, the password alone, and the values of its secret-looking
    query keys (``SECRET_QUERY_KEYS``, as ``redacted`` hides them), raw and percent-decoded.

    >>> sorted(url_secrets("wss://me:s3cret@h/v1?model=m&api_key=a%2Bb"))
    ['a%2Bb', 'a+b', 'me:s3cret', 's3cret']
    >>> url_secrets("ws://127.0.0.1:8099/v1/realtime?duplex=1")
    []
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = set()
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        found |= {userinfo, unquote(userinfo)}
        if parts.password:
            found |= {parts.password, unquote(parts.password)}
    for raw_key, raw_value in (pair.partition("=")[::2] for pair in parts.query.split("&")):
        if raw_value and SECRET_QUERY_KEYS.search(raw_key):
            found |= {raw_value, dict(parse_qsl(f"v={raw_value}")).get("v", raw_value)}
    return sorted(found - {""})


@dataclass
class Endpoint:
    """A running server to replay sessions into.

    ``url``: its WebSocket URL (``ws://`` or ``wss://``), used as given; ``token_env``: the name of the environment
    variable holding a bearer token (sent as ``Authorization: Bearer ...``), or None; ``frame_ms``: the audio sent
    per ``input_audio_buffer.append`` (it divides the 1000 ms unit).

    Every wait is a deadline on the monotonic clock from the moment the awaited thing became due; pings, heartbeats
    and events of no interest never move it: ``connect_timeout_s`` for the connection and the server's
    ``session.created``; ``unit_timeout_s`` (per-unit protocols) for each unit's decision, from the end of its
    audio (a server that stops answering ends its session within it); ``reply_timeout_s`` (turn-based protocols)
    for a reply's end, from its start; after the last frame, ``grace_s`` for the reply in flight once every unit is
    decided (then the client closes anyway) and, turn-based, ``quiet_s`` without output and no reply open ends the
    session (``end_timeout_s`` after the last frame at most); ``close_timeout_s`` for ``session.closed`` or the
    socket's close after the client's ``session.close`` (then the client closes the socket). So a mute server costs a
    session at most ``unit_timeout_s`` plus ``close_timeout_s`` past the end of the awaited unit's audio.

    ``send_lag_bound_ms``: a frame sent later than this after its time is *late* (the client machine could not keep
    real time), said in run.json and the tables; ``decoder``: the label of the server's decoding method in the
    tables when the server does not report it (``ticktock serve`` does); ``name``: the config's label.
    """

    url: str
    token_env: str | None = None
    frame_ms: int = 100
    connect_timeout_s: float = 10.0
    unit_timeout_s: float = 10.0
    reply_timeout_s: float = 60.0
    grace_s: float = 5.0
    end_timeout_s: float = 60.0
    quiet_s: float = 3.0
    close_timeout_s: float = 5.0
    send_lag_bound_ms: float = 20.0
    decoder: str | None = None
    name: str = "endpoint"

    def check(self) -> None:
        """Every option, each in one ``EndpointOptionError`` line naming it; the token variable must be set, and a
        URL carrying ``user:password@`` is refused with a token (one or the other authenticates), its secrets shown
        as ``***``:

        >>> import os; os.environ["DOC_TOKEN"] = "t0k3n"
        >>> Endpoint(url="ws://me:s3cret@127.0.0.1:9/v1/realtime", token_env="DOC_TOKEN").check()
        Traceback (most recent call last):
        ...
        ticktock.endpoints.endpoint.EndpointOptionError: model.url: holds credentials ('ws://***@127.0.0.1:9/v1/realtime') and model.token_env names a bearer token too: the server gets one or the other; remove the user:password@ part of the URL, or model.token_env
        >>> del os.environ["DOC_TOKEN"]
        """
        parts = urlsplit(str(self.url)) if isinstance(self.url, str) else None
        if parts is None or parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise EndpointOptionError(f"model.url: must be a ws:// or wss:// URL, got {redacted(str(self.url))!r}")
        try:
            parts.port
        except ValueError:
            raise EndpointOptionError(f"model.url: the port is not a number from 0 to 65535 in {redacted(self.url)!r}")
        if not (isinstance(self.frame_ms, int) and not isinstance(self.frame_ms, bool) and 10 <= self.frame_ms <= 1000
                and 1000 % self.frame_ms == 0):
            raise EndpointOptionError(f"model.frame_ms: must be a whole number of ms from 10 to 1000 that divides the "
                                      f"1000 ms unit (10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000), got "
                                      f"{self.frame_ms!r}")
        for key, least, most in TIMING_BOUNDS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    math.isfinite(value) and least <= value <= most):
                raise EndpointOptionError(f"model.{key}: must be a number from {least} to {most}, got {value!r}")
        if self.token_env is not None:
            if not (isinstance(self.token_env, str) and ENV_NAME.fullmatch(self.token_env)):
                raise EndpointOptionError(f"model.token_env: must be the NAME of an environment variable (the token "
                                          f"itself is never written in a config), got {self.token_env!r}")
            if not os.environ.get(self.token_env):
                raise EndpointOptionError(f"model.token_env: the environment variable {self.token_env} is not set or "
                                          "empty (export it with the server's bearer token)")
            if parts.username is not None or parts.password is not None:
                raise EndpointOptionError(f"model.url: holds credentials ({redacted(self.url)!r}) and model.token_env "
                                          f"names a bearer token too: the server gets one or the other; remove the "
                                          f"user:password@ part of the URL, or model.token_env")

    @property
    def host(self) -> str:
        """``host:port`` of the server (the port as written, or the scheme's)."""
        parts = urlsplit(self.url)
        port = parts.port or (443 if parts.scheme == "wss" else 80)
        return f"{parts.hostname}:{port}"

    @property
    def shown_url(self) -> str:
        """The URL as it may be shown and recorded (``redacted``)."""
        return redacted(self.url)

    def headers(self) -> dict[str, str]:
        """The connection's headers: the bearer token from ``token_env``'s variable, when named."""
        if self.token_env is None:
            return {}
        return {"Authorization": f"Bearer {os.environ.get(self.token_env, '')}"}

    def describe(self) -> dict:
        """What run.json records about the endpoint: the redacted URL, the token variable's name, the options."""
        return {"url": self.shown_url, "host": self.host, "token_env": self.token_env, "frame_ms": self.frame_ms,
                **{key: getattr(self, key) for key, _, _ in TIMING_BOUNDS}}
