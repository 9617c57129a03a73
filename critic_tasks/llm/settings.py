"""Settings of a model that the package itself calls, for any role: judge, reviser (actor).

Each role reads its own environment variables, ``CRITIC_<ROLE>_*`` (``CRITIC_JUDGE_MODEL``, ``CRITIC_REVISER_MODEL``,
...): BACKEND (``openai`` = any OpenAI-compatible endpoint, ``vllm``, ``hf``, or a plugin's name), MODEL, BASE_URL,
API_KEY (falls back to ``OPENAI_API_KEY``), CONCURRENCY, CACHE (a file, or a directory to keep ``<role>.sqlite`` in;
``off`` disables), MAX_TOKENS and ENGINE_ARGS (the ``vllm`` backend's engine arguments, ``key=value,...`` as
lm-eval's ``--model_args``: ``kv_cache_memory_bytes=4294967296,max_model_len=4096``). Keyword overrides
(command-line flags) win over the environment. Every problem is a ``ConfigError`` naming the variable, raised when
the settings are built, before any model is called.

A role may have a pool of models (the revision protocols' revisers): ``CRITIC_REVISERS=strong,weak`` names the
members, and each reads ``CRITIC_REVISER_<MEMBER>_*`` first, then the role's ``CRITIC_REVISER_*`` (a shared
BASE_URL, CACHE, ...); see ``pool_from_env``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from critic_tasks.core.errors import ConfigError
from critic_tasks.core.paths import cache_dir, is_off
from critic_tasks.core.settings import read_setting, role_setting

OPENAI_BASE_URL = "https://api.openai.com/v1"
ROLES = ("judge", "reviser")


def default_cache_path(role: str = "judge") -> str:
    return str(cache_dir(f"{role}.sqlite"))


def env_prefix(role: str) -> str:
    return f"CRITIC_{role.upper()}_"


@dataclass(frozen=True)
class LLMSettings:
    backend: str = "openai"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never logged, never part of the identity
    concurrency: int = 16
    cache: str | None = field(default_factory=default_cache_path)  # None: no cache
    temperature: float = 0.0  # greedy: judgments and revisions must be reproducible
    max_tokens: int = 1024
    # Seconds per HTTP request, queueing at the server included: a server with fewer slots than ``concurrency``
    # holds the surplus requests before it starts them, so keep this generous (the OpenAI client's default).
    timeout: float = 600.0
    max_tries: int = 6  # per item, first try included; then the item is a recorded failure
    backoff_base: float = 1.0  # seconds before the 2nd try; doubles each time, with jitter
    backoff_max: float = 60.0
    batch_size: int = 8  # hf backend
    device: str | None = None  # hf backend; None: cuda if available, else cpu
    # vllm backend: engine arguments, ((name, value), ...). Those that can change a reply (dtype, quantization, ...)
    # join the identity; memory and scheduling ones (ENGINE_RESOURCE_ARGS) do not, so resizing keeps the cache.
    engine_args: tuple = ()
    role: str = "judge"
    member: str = ""  # a pool member's name (CRITIC_REVISERS=...); not part of the identity
    # where ``model`` was set (the variable it came from, or a command's flag such as --model), for the error lines
    # that name it; '' when unknown (then the role's variable is named); not part of the identity
    model_from: str = field(default="", compare=False)

    @property
    def prefix(self) -> str:
        return env_prefix(self.role) + (f"{self.member.upper()}_" if self.member else "")

    def __post_init__(self):
        base_url = self.base_url or (OPENAI_BASE_URL if self.backend == "openai" else None)
        if base_url:
            urls = parse_endpoints(base_url, f"{self.prefix}BASE_URL")
            object.__setattr__(self, "base_url", ",".join(urls))
        prefix = self.prefix
        for name in ("concurrency", "max_tries", "batch_size", "max_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{prefix}{name.upper()} must be >= 1, got {getattr(self, name)}")
        if self.temperature < 0:
            raise ConfigError(f"{self.role} temperature must be >= 0, got {self.temperature}")
        if self.cache is not None:
            object.__setattr__(self, "cache", _cache_file(self.cache, self.role))

    @classmethod
    def from_env(cls, role: str = "judge", member: str = "", **overrides) -> "LLMSettings":
        """Settings for ``role`` from its ``CRITIC_<ROLE>_*`` variables; keyword overrides win. A pool ``member``
        reads ``CRITIC_<ROLE>_<MEMBER>_*`` first, then the role's variables."""

        def get(name: str) -> str:
            return role_setting(role, name, member)[0]

        def where(name: str) -> str:
            return role_setting(role, name, member)[1]

        cache = get("CACHE").strip()
        values: dict = {
            "role": role,
            "member": member,
            "backend": get("BACKEND") or "openai",
            "model": get("MODEL") or None,
            "model_from": where("MODEL") if get("MODEL") else "",
            "base_url": get("BASE_URL") or None,
            "api_key": get("API_KEY") or os.environ.get("OPENAI_API_KEY") or None,  # OpenAI's own variable
            "cache": None if is_off(cache) else os.path.expanduser(cache or default_cache_path(role)),
        }
        raw_engine = get("ENGINE_ARGS").strip()
        if raw_engine:
            values["engine_args"] = parse_engine_args(raw_engine, where("ENGINE_ARGS"))
        for name in ("max_tokens", "concurrency"):  # MAX_TOKENS: our extension of the judge contract
            raw = get(name.upper())
            if raw:
                try:
                    values[name] = int(raw)
                except ValueError:
                    raise ConfigError(f"{where(name.upper())} must be an integer, got {raw!r}") from None
        if "model" in overrides and "model_from" not in overrides:
            values["model_from"] = ""  # the caller's value, from a place the caller names (``model_from``)
        values.update(overrides)
        return cls(**values)

    @property
    def endpoints(self) -> tuple[str, ...]:
        """Every endpoint serving this model (``BASE_URL=url1,url2,...`` or a file of URLs); requests are spread
        over them and fail over between them. The first names the model in the identity (the cache key)."""
        return tuple(self.base_url.split(",")) if self.base_url else ()

    def identity(self) -> dict:
        """What determines a reply; recorded in results and hashed into cache keys. Never includes the key. With
        several endpoints, only the first is part of it: the others serve the same model, so which one answered
        does not matter, and adding or removing the others keeps the cache."""
        ident = {"backend": self.backend, "model": self.model, "base_url": self.endpoints[0] if self.endpoints else None,
                 "temperature": self.temperature, "max_tokens": self.max_tokens}
        engine = {k: v for k, v in self.engine_args if k not in ENGINE_RESOURCE_ARGS}
        if engine:  # only when set: identities (cache keys) without engine arguments stay as they were
            ident["engine_args"] = engine
        return ident

    @property
    def model_setting(self) -> str:
        """The setting ``model`` came from, as an error line names it."""
        return self.model_from or f"{self.prefix}MODEL"

    def require_model(self) -> str:
        if not self.model:
            raise ConfigError(f"the {self.backend!r} {self.role} backend needs a model: set "
                              f"{self.prefix}MODEL")
        return self.model


def parse_endpoints(value: str, name: str) -> tuple[str, ...]:
    """``url`` / ``url1,url2,...`` / a file with one URL a line (``#`` comments) -> the URLs, each checked."""
    raw = value.strip()
    if raw and not raw.startswith(("http://", "https://")) and "," not in raw and os.path.isfile(os.path.expanduser(raw)):
        try:
            with open(os.path.expanduser(raw), encoding="utf-8") as f:
                lines = [line.split("#", 1)[0].strip() for line in f]
        except (OSError, UnicodeDecodeError) as err:
            raise ConfigError(f"{name}={raw}: cannot read the endpoint list ({err})") from None
        urls = [line for line in lines if line]
        if not urls:
            raise ConfigError(f"{name}={raw}: the endpoint file lists no URL (one http(s):// URL a line)")
    else:
        urls = [u.strip() for u in raw.split(",") if u.strip()]
    out = []
    for url in urls:
        if not url.startswith(("http://", "https://")):
            # caught here, before any model loads: the HTTP client would retry it as a transient error
            raise ConfigError(f"{name}={url}: expected an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1"
                              + (" (or several, comma-separated, or a file listing them)" if len(urls) > 1 else ""))
        url = url.rstrip("/")
        if url in out:
            raise ConfigError(f"{name}: {url} is listed twice")
        out.append(url)
    return tuple(out)


def pool_env(role: str) -> str:
    return f"CRITIC_{role.upper()}S"


def pool_from_env(role: str = "reviser", **overrides) -> list[LLMSettings]:
    """The models of a role's pool, in order: ``CRITIC_<ROLE>S=a,b`` names them (each ``CRITIC_<ROLE>_<A>_*``,
    falling back to ``CRITIC_<ROLE>_*``); unset, the one model of ``CRITIC_<ROLE>_*``, or none when its MODEL is
    unset. A name that is not a plain word, a repeated name or a member without a model is a ConfigError."""
    raw = read_setting(pool_env(role))
    if not raw:
        single = LLMSettings.from_env(role, **overrides)
        return [single] if single.model else []
    names = [n.strip() for n in raw.split(",")]
    for name in names:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", name):
            raise ConfigError(f"{pool_env(role)}={raw}: member {name!r} must be letters and digits (it names the "
                              f"variables {env_prefix(role)}<MEMBER>_*)")
    if len({n.upper() for n in names}) != len(names):
        raise ConfigError(f"{pool_env(role)}={raw}: a member is named twice")
    pool = [LLMSettings.from_env(role, member=n, **overrides) for n in names]
    for s in pool:
        if not s.model:
            raise ConfigError(f"{pool_env(role)} names {s.member!r} but neither {s.prefix}MODEL nor "
                              f"{env_prefix(role)}MODEL is set")
    return pool


# vLLM engine arguments that size or schedule the engine without changing what it replies (greedy).
ENGINE_RESOURCE_ARGS = frozenset({
    "kv_cache_memory_bytes", "gpu_memory_utilization", "swap_space", "cpu_offload_gb", "enforce_eager",
    "max_model_len", "max_num_seqs", "max_num_batched_tokens", "tensor_parallel_size", "pipeline_parallel_size",
    "block_size", "enable_prefix_caching", "disable_log_stats", "seed",
})


def parse_engine_args(raw: str, name: str) -> tuple:
    """``key=value,...`` to ((key, value), ...): ints, floats and True/False/None as such, the rest as strings."""
    out = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not key.strip().isidentifier():
            raise ConfigError(f"{name}: expected key=value[,key=value...], got {item!r}")
        out.append((key.strip(), _engine_value(value.strip())))
    return tuple(out)


def _engine_value(value: str):
    literal = {"true": True, "false": False, "none": None}
    if value.lower() in literal:
        return literal[value.lower()]
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def _cache_file(path: str, role: str) -> str:
    """A directory holds ``<role>.sqlite``; a path whose folder cannot be made or written is refused here."""
    path = os.path.expanduser(path)
    if os.path.isdir(path):
        path = os.path.join(path, f"{role}.sqlite")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"{env_prefix(role)}CACHE={path}: cannot create its folder ({err.strerror})") from None
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ConfigError(f"{env_prefix(role)}CACHE={path}: not writable (set it to a writable file, or 'off')")
    return path
