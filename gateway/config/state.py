"""`state:` in the gateway config: which store, where, and how long tasks are kept."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, Field, model_validator

from gateway.config.strict import STRICT

REDIS_SCHEMES = ("redis", "rediss", "unix")


class _Model(BaseModel):
    model_config = STRICT


class RetentionConfig(_Model):
    max_age: float = Field(7 * 24 * 3600.0, ge=0, description="Seconds a task stays in the "
                           "index after its last status change (0: no age limit)")
    max_tasks: int = Field(100_000, ge=0, description="Tasks kept at most, all tenants; the "
                           "least recently updated go first (0: no limit)")
    interval: float = Field(300.0, gt=0, description="Seconds between two prunings")


class TaskIndexConfig(_Model):
    """The task index (docs/state.md): what the gateway records of the tasks it sees."""

    record: bool = Field(True, description="Record every task answers, stream events and "
                         "relayed webhooks show (off: no index, so no ListTasks for v0.3 "
                         "backends and no ownership)")
    ownership: bool = Field(True, description="With authentication on, a principal sees "
                            "and acts on only the tasks it created (tenants may override: "
                            "`task_ownership`)")
    queue: int = Field(10_000, gt=0, description="Observations waiting to be written at "
                       "most; past it they are dropped and counted, never waited for")
    batch: int = Field(500, gt=0, description="Records written to the store in one round "
                       "trip at most")
    # 50 ms: under load one write then carries ~100 tasks; a SQLite transaction costs
    # about as much as a few dozen rows (bench/README.md "Task index"). Readers in this
    # process never wait for it (they flush); other workers and replicas may.
    linger: float = Field(0.05, ge=0, description="Seconds an observation may wait for "
                          "others to be written with it (a full batch goes at once)")
    # A creating call (SendMessage, SendStreamingMessage) waits for its task's record;
    # past this it is refused as unavailable (docs/state.md, "A store outage").
    write_timeout: float = Field(5.0, gt=0, description="Seconds a call that creates a "
                                 "task waits for its record to be written before it is "
                                 "answered; past it the call is refused (unavailable, "
                                 "retry)")
    # auto: a creating call waits when other processes (workers, replicas) read the store;
    # one process alone on SQLite flushes before its own reads instead (docs/state.md).
    wait_for_writes: Literal["auto", "always"] = Field(
        "auto", description="When a call that creates a task waits for its record: `auto`, "
        "when other workers or replicas read the store (one process alone on SQLite keeps "
        "the record, written within `linger`, and flushes before its own reads); `always`, "
        "also alone (a crash of the process then loses no record it acknowledged)")
    refresh_concurrency: int = Field(8, gt=0, description="ListTasks from the index: "
                                     "GetTask calls to the backend at once")
    refresh_limit: int = Field(100, ge=0, le=100, description="ListTasks from the index: "
                               "unfinished tasks in the call's scope refreshed with GetTask "
                               "before the page is read, most recently updated first")


class JournalConfig(_Model):
    """The stream journal (docs/streams.md, "Resuming a stream"): the events of each task's
    streams, kept in the store so that a client that lost its stream can resume it."""

    enabled: bool = Field(False, description="Journal every stream event so a client can "
                          "resume (ids, Last-Event-ID); off by default until it meets its "
                          "performance targets (docs/performance.md)")
    max_events: int = Field(10_000, gt=0, description="Events kept per task at most; the "
                            "oldest go first")
    max_bytes: int = Field(8 * 1024 * 1024, gt=0, description="Bytes of events kept per "
                           "task at most; the oldest go first")
    ttl: float = Field(3600.0, gt=0, description="Seconds a task's journal is kept after "
                       "the task is terminal")
    idle_ttl: float = Field(86400.0, gt=0, description="Seconds a task's journal is kept "
                            "after its last append while the task never ended")
    retry: float = Field(1.0, gt=0, description="The SSE `retry:` hint sent to clients, in "
                         "seconds")
    hold: float = Field(60.0, ge=0, description="Seconds the gateway keeps reading a "
                        "backend stream whose client went away, so that what it sends is "
                        "journaled for the client's return (0: no hold)")
    replay_batch: int = Field(500, gt=0, description="Entries read from the journal per "
                              "round trip when a client resumes")
    reattach_attempts: int = Field(3, ge=0, description="Times in a row the gateway "
                                   "subscribes again to a task whose backend stream broke "
                                   "mid-task before it ends the client's stream cleanly (the "
                                   "client resumes with its last id; 0: no re-attach)")
    reattach_backoff: float = Field(0.25, ge=0, description="Seconds before the second "
                                    "attempt to re-attach (the first is at once), doubled "
                                    "for each next one")
    reattach_max_backoff: float = Field(2.0, ge=0, description="Seconds between two "
                                        "attempts to re-attach at most")

    @property
    def holds(self) -> bool:
        """Whether a journaled stream is read on without its client (it left, or the
        drain ended it for its client): one rule for both ingresses and the driver."""
        return self.enabled and self.hold > 0


def _host_port(value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected host:port, got {value!r}")
    return value


class SentinelConfig(_Model):
    """Redis behind Sentinel (docs/state.md, "Redis Sentinel and failover"): the gateway
    asks the sentinels for the service's primary and follows it through a failover."""

    hosts: list[Annotated[str, AfterValidator(_host_port)]] = Field(min_length=1, description="The sentinels, host:port each "
                             "(three or more in production: a failover needs a quorum)")
    service: str = Field(min_length=1, description="The name the sentinels monitor the "
                         "primary under (`sentinel monitor <service> ...`)")
    db: int = Field(0, ge=0, description="Database number on the primary")
    username: str | None = Field(None, description="ACL user on the Redis servers "
                                 "(its password: `state.password_env`)")
    sentinel_username: str | None = Field(None, description="ACL user on the sentinels, "
                                          "when they require one")
    sentinel_password_env: str | None = Field(None, description="Environment variable "
                                              "holding the sentinels' own password "
                                              "(`requirepass` in sentinel.conf)")
    tls: bool = Field(False, description="TLS to the sentinels and the Redis servers")
    ssl_ca_certs: str | None = Field(None, description="With tls: the CA file that "
                                     "signed their certificates (default: the system's)")
    # WAIT after an acknowledged write: Redis replicates asynchronously, so a write the
    # primary acknowledged and had not yet sent on is lost when a replica is promoted.
    replica_acks: int = Field(1, ge=0, description="Replicas that must have a write "
                              "before the gateway acknowledges what it stored (Redis "
                              "WAIT); 0: the primary's word is enough, and a failover "
                              "may lose the last writes")
    ack_timeout: float = Field(1.0, gt=0, description="Seconds a write waits for "
                               "`replica_acks` replicas; past it the write counts as "
                               "failed (the caller is refused as unavailable)")
    failover_wait: float = Field(10.0, ge=0, description="Seconds a store call keeps "
                                 "retrying, with back-off, while no primary answers (a "
                                 "failover in progress; also a store down altogether); "
                                 "past it the call fails. Cover the sentinels' "
                                 "`down-after-milliseconds` plus a few seconds")

    @model_validator(mode="after")
    def _check(self) -> SentinelConfig:
        if self.ssl_ca_certs is not None and not self.tls:
            raise ValueError("state.sentinel.ssl_ca_certs needs state.sentinel.tls: true")
        return self

    def addresses(self) -> list[tuple[str, int]]:
        out = []
        for host in self.hosts:
            name, _, port = host.rpartition(":")
            out.append((name.strip("[]"), int(port)))
        return out


class StateConfig(_Model):
    """What the gateway remembers across calls and replicas (docs/state.md): the task
    index, relay replay protection, rate-limit counters."""

    backend: Literal["sqlite", "redis"] = Field(
        "sqlite", description="`sqlite`: one file on this host, shared by its workers; "
        "`redis`: shared by replicas")
    path: str = Field("a2a-gateway-state.db", description="SQLite file (`:memory:`: nothing "
                      "kept, one process only)")
    url: str | None = Field(None, description="Redis URL: redis://[user:password@]host:port"
                            "/db, rediss:// for TLS (?ssl_ca_certs=/path/ca.pem), or "
                            "unix:///path/redis.sock")
    sentinel: SentinelConfig | None = Field(None, description="Redis behind Sentinel, "
                                            "instead of `url`: failover followed")
    password_env: str | None = Field(None, description="Environment variable holding the "
                                     "Redis password (instead of putting it in the URL)")
    key_prefix: str = Field("a2a-gateway:", description="Prefix of every Redis key (several "
                            "gateways may share one Redis)")
    timeout: float = Field(2.0, gt=0, description="Seconds one Redis command may take")
    max_connections: int = Field(64, ge=1, le=10_000, description="Redis connections one "
                                 "gateway process opens at most; when all are busy a "
                                 "call waits for one, up to `timeout`")
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    tasks: TaskIndexConfig = Field(default_factory=TaskIndexConfig)
    journal: JournalConfig = Field(default_factory=JournalConfig)

    @model_validator(mode="after")
    def _check(self) -> StateConfig:
        if self.backend == "redis":
            if self.url and self.sentinel is not None:
                raise ValueError("state.url and state.sentinel: name one (a URL for one "
                                 "Redis, sentinel for a primary Sentinel fails over)")
            if self.sentinel is not None:
                if self.sentinel.replica_acks and self.sentinel.ack_timeout >= self.timeout:
                    raise ValueError("state.sentinel.ack_timeout must be shorter than "
                                     "state.timeout (a write and its WAIT are one command "
                                     "round trip)")
                return self
            if not self.url:
                raise ValueError("state.backend redis needs state.url (redis://host:6379/0) "
                                 "or state.sentinel (hosts, service)")
            check_redis_url(self.url)
        elif self.sentinel is not None:
            raise ValueError("state.sentinel needs state.backend: redis")
        elif not self.path:
            raise ValueError("state.path may not be empty (`:memory:` keeps nothing)")
        return self


def check_redis_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in REDIS_SCHEMES:
        raise ValueError(f"state.url must start with redis://, rediss:// or unix://, "
                         f"got {url!r}")
    if parts.scheme == "unix":
        if not parts.path:
            raise ValueError(f"state.url {url!r} names no socket path")
        return
    if not parts.hostname:
        raise ValueError(f"state.url {url!r} names no host")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"state.url {url!r} has a bad port") from None
    if port == 0:
        raise ValueError(f"state.url {url!r} has a bad port")
    db = parts.path.strip("/")
    if db and not db.isdigit():
        raise ValueError(f"state.url path must be a database number, got {parts.path!r}")


def describe_store(state: StateConfig) -> str:
    """Where the store is, for logs and check-config: never a password."""
    if state.backend == "sqlite":
        return state.path
    if state.sentinel is not None:
        return (f"sentinel service {state.sentinel.service} via "
                f"{','.join(state.sentinel.hosts)}")
    return redact_url(state.url or "")


def redact_url(url: str) -> str:
    """``url`` without its user and password, for logs."""
    scheme, sep, rest = url.partition("://")
    _creds, at, host = rest.rpartition("@")
    return f"{scheme}{sep}***@{host}" if at else url
