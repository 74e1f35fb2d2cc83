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

import base64
import io
import json
import math
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Mapping, Sequence
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from ticktock.endpoints.protocol import SessionOutput
from ticktock.errors import EXIT_ENDPOINT, ConfigError, TickTockError

#: Query keys whose values are secrets (case-insensitive): redacted wherever a URL is shown.
SECRET_QUERY_KEYS = re.compile(r"(key|token|secret|password|auth|signature|sig)", re.IGNORECASE)
#: An environment variable's name: letters, digits and underscores, not starting with a digit.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


#: The timing options and their bounds (seconds; ms for the send lag).
TIMING_BOUNDS = (("connect_timeout_s", 0.1, 600), ("unit_timeout_s", 0.1, 3600), ("reply_timeout_s", 0.1, 3600),
                 ("grace_s", 0.0, 600), ("end_timeout_s", 0.1, 3600), ("quiet_s", 0.05, 600),
                 ("close_timeout_s", 0.1, 600), ("send_lag_bound_ms", 0.1, 60_000), ("capacity_wait_s", 0.0, 3600))
#: The reference voice sent with audio output when ``model.ref_audio`` is not given: 2.1 s of TickTock-Bench-mini's
#: synthetic speech (eSpeak NG), 16 kHz mono, in the package.
SHIPPED_VOICE = Path(__file__).with_name("reference_voice.flac")
#: The longest reference voice a session sends (s): vLLM-Omni puts its audio tokens in the session's first context.
MAX_VOICE_S = 30.0


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

    What a session asks the server to produce (``session_output``): ``modalities`` (``audio`` and/or ``text``);
    ``ref_audio``, the reference voice of the speech, sent with audio output as a ``data:audio/wav`` URI (a sound
    file's path; None: ``SHIPPED_VOICE``, a 2.1 s voice that ships with TickTock; vLLM-Omni's MiniCPM-o 4.5 refuses
    audio output without one); ``extra_body``, the server's own session options passed as given (e.g.
    ``{"force_listen_count": 8}`` for a model with random weights, which decides nothing otherwise).
    ``capacity_wait_s``: a server that refuses a session for capacity (vLLM-Omni's ``resource_exhausted``) is asked
    again until this long has passed, then the session fails with the server's own words.

    What one unit's output may hold (a server's flood cannot grow the client's memory or a row without end):
    ``max_unit_text_chars`` characters of text (text, transcript and function-call arguments) and
    ``max_unit_audio_s`` seconds of audio; past either the session fails, what it decided kept.
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
    modalities: tuple[str, ...] = ("audio",)
    ref_audio: str | None = None
    extra_body: Mapping[str, object] | None = None
    capacity_wait_s: float = 30.0
    max_unit_text_chars: int = 65_536
    max_unit_audio_s: float = 60.0
    name: str = "endpoint"

    def __post_init__(self) -> None:
        # Hydra hands lists and mappings over as OmegaConf containers: plain Python from here on (a bad type is
        # left as it came, for ``check`` to name)
        if not isinstance(self.modalities, (str, bytes)) and isinstance(self.modalities, Sequence):
            self.modalities = tuple(self.modalities)
        if isinstance(self.extra_body, Mapping):
            self.extra_body = plain(self.extra_body)

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
        self.check_bounds()
        self.check_output()

    def check_bounds(self) -> None:
        """``max_unit_text_chars`` (a whole number from 1 to 10^8) and ``max_unit_audio_s`` (0.1 to 3600 s):

        >>> Endpoint(url="ws://h:1/v1/realtime", max_unit_text_chars=0).check_bounds()
        Traceback (most recent call last):
        ...
        ticktock.endpoints.endpoint.EndpointOptionError: model.max_unit_text_chars: must be a whole number of characters from 1 to 100000000, got 0
        """
        chars = self.max_unit_text_chars
        if isinstance(chars, bool) or not isinstance(chars, int) or not 1 <= chars <= 10**8:
            raise EndpointOptionError(f"model.max_unit_text_chars: must be a whole number of characters from 1 to "
                                      f"{10**8}, got {chars!r}")
        audio_s = self.max_unit_audio_s
        if isinstance(audio_s, bool) or not isinstance(audio_s, (int, float)) or not (
                math.isfinite(audio_s) and 0.1 <= audio_s <= 3600):
            raise EndpointOptionError(f"model.max_unit_audio_s: must be a number of seconds from 0.1 to 3600, got "
                                      f"{audio_s!r}")

    def check_output(self) -> None:
        """``modalities``, ``ref_audio`` (read now, when audio is asked for) and ``extra_body``, each bad one in one
        line:

        >>> Endpoint(url="ws://h:1/v1/realtime", modalities=("video",)).check_output()
        Traceback (most recent call last):
        ...
        ticktock.endpoints.endpoint.EndpointOptionError: model.modalities: must be a non-empty list of 'audio' and 'text', got ('video',)
        """
        if not (isinstance(self.modalities, tuple) and self.modalities
                and all(m in ("audio", "text") for m in self.modalities) and len(set(self.modalities)) == len(
                    self.modalities)):
            raise EndpointOptionError(f"model.modalities: must be a non-empty list of 'audio' and 'text', got "
                                      f"{self.modalities!r}")
        if self.extra_body is not None:
            try:
                json.dumps(self.extra_body, allow_nan=False)
            except (TypeError, ValueError) as err:
                raise EndpointOptionError(f"model.extra_body: must be a mapping of JSON values, got "
                                          f"{self.extra_body!r} ({err})") from None
            if not isinstance(self.extra_body, dict):
                raise EndpointOptionError(f"model.extra_body: must be a mapping, e.g. "
                                          f"model.extra_body={{force_listen_count:8}}, got {self.extra_body!r}")
        if self.ref_audio is not None and not isinstance(self.ref_audio, str):
            raise EndpointOptionError(f"model.ref_audio: must be a sound file's path, got {self.ref_audio!r}")
        if "audio" in self.modalities:
            self.voice_uri  # read now: a bad file is refused before any work

    @property
    def voice_path(self) -> Path:
        """The reference voice's file: ``ref_audio`` (``~`` expanded), else ``SHIPPED_VOICE``."""
        return Path(self.ref_audio).expanduser() if self.ref_audio else SHIPPED_VOICE

    @cached_property
    def voice_uri(self) -> str:
        """The reference voice as ``data:audio/wav;base64,...`` (16-bit PCM at the file's own rate, channels mixed to
        mono): ``EndpointOptionError`` naming ``model.ref_audio`` when the file cannot be read as sound, is silent,
        or lasts more than ``MAX_VOICE_S``."""
        import numpy as np
        import soundfile

        path = self.voice_path
        try:
            samples, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
        except (OSError, RuntimeError, soundfile.LibsndfileError) as err:
            raise EndpointOptionError(f"model.ref_audio: {path}: cannot be read as sound "
                                      f"({' '.join(str(err).split())[:200]})") from None
        mono = samples.mean(axis=1)
        if not len(mono) or not np.abs(mono).max() > 0:
            raise EndpointOptionError(f"model.ref_audio: {path}: holds no sound (a reference voice must be speech)")
        if len(mono) / rate > MAX_VOICE_S:
            raise EndpointOptionError(f"model.ref_audio: {path}: lasts {len(mono) / rate:.1f} s, more than "
                                      f"{MAX_VOICE_S:g} s (a reference voice is a few seconds of speech)")
        wav = io.BytesIO()
        soundfile.write(wav, mono, rate, format="WAV", subtype="PCM_16")
        return "data:audio/wav;base64," + base64.b64encode(wav.getvalue()).decode("ascii")

    def session_output(self) -> SessionOutput:
        """What every session asks the server to produce (``ticktock.endpoints.protocol.SessionOutput``).

        >>> output = Endpoint(url="ws://h:1/v1/realtime", extra_body={"force_listen_count": 3}).session_output()
        >>> output.modalities, output.ref_audio[:22], output.extra_body
        (('audio',), 'data:audio/wav;base64,', {'force_listen_count': 3})
        """
        voice = self.voice_uri if "audio" in self.modalities else None
        return SessionOutput(self.modalities, voice, dict(self.extra_body or {}))

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
                **{key: getattr(self, key) for key, _, _ in TIMING_BOUNDS},
                "max_unit_text_chars": self.max_unit_text_chars, "max_unit_audio_s": self.max_unit_audio_s,
                **self.describe_output()}

    def describe_output(self) -> dict:
        """run.json's record of what sessions ask for: the modalities, the reference voice (its file's name and
        the SHA-256 of what is sent, with audio output) and ``extra_body``."""
        import hashlib

        voice = None
        if "audio" in self.modalities:
            voice = {"file": self.voice_path.name,
                     "shipped": self.ref_audio is None,
                     "sha256": hashlib.sha256(self.voice_uri.encode("ascii")).hexdigest()}
        return {"modalities": list(self.modalities), "ref_audio": voice, "extra_body": dict(self.extra_body or {})}


def plain(value):
    """An OmegaConf container (or any mapping/sequence) as plain dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or (isinstance(value, Sequence) and not isinstance(value, (str, bytes))):
        return [plain(v) for v in value]
    return value
