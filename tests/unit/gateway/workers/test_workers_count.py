"""How many workers `workers:` means (gateway/workers/count.py), and what the workers of
one supervisor share without a config for it (the generated relay key)."""

from __future__ import annotations

import base64
import os
import subprocess
import sys

import pytest

from gateway.config.models import ConfigError, parse_config
from gateway.relay.seals import GENERATED_KEY_ENV
from gateway.workers.count import available_cpus, quota_cpus, quota_cpus_v1, worker_count

TENANTS = {"t": {"backend": {"url": "http://127.0.0.1:9/", "version": "0.3"}}}


def test_cgroup_quotas() -> None:
    assert quota_cpus("max 100000\n") is None
    assert quota_cpus("250000 100000\n") == 2.5
    assert quota_cpus("50000 100000") == 0.5
    assert quota_cpus_v1("-1\n", "100000\n") is None
    assert quota_cpus_v1("200000\n", "100000\n") == 2.0


def test_worker_count() -> None:
    assert worker_count(parse_config({"tenants": TENANTS, "workers": 3})) == (3, "workers")
    auto = worker_count(parse_config({"tenants": TENANTS}))
    assert auto == (available_cpus(), "one per available CPU")
    assert 1 <= auto[0] <= len(os.sched_getaffinity(0))
    # `:memory:` cannot be shared: one process, or a refusal when workers are asked for.
    memory = {"tenants": TENANTS, "state": {"path": ":memory:"}}
    assert worker_count(parse_config(memory)) == (1, "state.path :memory: serves one process")
    assert worker_count(parse_config({**memory, "workers": 1}))[0] == 1
    with pytest.raises(ConfigError, match=r"state\.path `:memory:` serves one process"):
        parse_config({**memory, "workers": 2})
    with pytest.raises(ConfigError, match="workers"):
        parse_config({"tenants": TENANTS, "workers": 0})


def test_taskset_pins_the_default_to_the_allowed_cpus() -> None:
    code = ("from gateway.workers.count import available_cpus; print(available_cpus())")
    done = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=30, check=True)
    assert done.stdout.strip() == "1"


def test_a_worker_seals_with_its_supervisors_generated_key() -> None:
    key, configured = (base64.urlsafe_b64encode(os.urandom(32)).decode() for _ in "12")
    code = ("import base64; from gateway.config.models import PushRelayConfig; "
            "from gateway.relay.seals import load_keys; keys, source = "
            "load_keys(PushRelayConfig()); "
            "print(source, base64.urlsafe_b64encode(keys[0]).decode())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30, check=True, env={**os.environ, GENERATED_KEY_ENV: key,
                                                       "A2A_GATEWAY_RELAY_KEYS": ""})
    assert done.stdout.split() == ["generated", key]
    # A configured key still wins over the inherited one.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30, check=True, env={**os.environ, GENERATED_KEY_ENV: key,
                                                       "A2A_GATEWAY_RELAY_KEYS": configured})
    assert done.stdout.split() == ["env", "A2A_GATEWAY_RELAY_KEYS", configured]
