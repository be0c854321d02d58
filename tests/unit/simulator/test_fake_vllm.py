# -*- coding: utf-8 -*-
# Copyright: contributors to the kunpeng_ascend.vllm collection
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of tests/simulator/fake-vllm (the stand-in for ``vllm serve``).

The server runs as a real subprocess on a free port of 127.0.0.1, with a scratch ASCEND_SIM_ROOT whose ascend-sim
state (910b-8) shows, through the simulated npu-smi, the NPUs the server holds.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ansible_collections.kunpeng_ascend.vllm.tests.helpers import HANG_SECONDS, load_fixture, simulator_module

SIMULATOR = Path(__file__).resolve().parents[2] / "simulator"
FAKE_VLLM = SIMULATOR / "fake-vllm"
ASCEND_SIM = SIMULATOR / "ascend-sim"
KEY = "test-key-123"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(port, path, key=None, body=None, timeout=5):
    """(status, parsed JSON or text) of one request."""
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = "Bearer " + key
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, text = resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        status, text = exc.code, exc.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def wait_health(port, proc, timeout=HANG_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError("the server exited with rc %s: %s" % (proc.returncode, proc.stderr.read()))
        try:
            if request(port, "/health", timeout=1)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("/health did not answer within %d seconds" % timeout)


def wait_closed(port, proc):
    """Wait until nothing listens on ``port`` any more: the server has closed its socket."""
    deadline = time.monotonic() + HANG_SECONDS
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=HANG_SECONDS).close()
        except ConnectionRefusedError:
            return
        except ConnectionResetError:
            pass  # closed while this connection waited to be accepted: the next one is refused
        assert proc.poll() is None, "the server exited with rc %s" % proc.returncode
        assert time.monotonic() < deadline, "the server still listens %d s after the signal" % HANG_SECONDS
        time.sleep(0.05)


class Node:
    """A scratch root with an ascend-sim state, and fake-vllm servers started in it."""

    def __init__(self, tmp_path):
        self.root = tmp_path / "root"
        self.root.mkdir()
        self.env = dict(os.environ, ASCEND_SIM_ROOT=str(self.root), FAKE_VLLM_START_DELAY="0",
                        FAKE_VLLM_RELEASE_DELAY="0.2")
        for name in ("VLLM_API_KEY", "ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES", "ASCEND_SIM_CONTAINER",
                     "ASCEND_SIM_STATE", "FAKE_VLLM_MOUNTS", "FAKE_VLLM_RUN_DIR", "FAKE_VLLM_MEMORY_MB"):
            self.env.pop(name, None)
        self.model = tmp_path / "model"
        self.model.mkdir()
        self.procs = []
        self.sim("init", "--profile", "910b-8")
        self.sim("set", "driver_version=24.1.rc1")

    def sim(self, *args):
        proc = subprocess.run([sys.executable, str(ASCEND_SIM)] + list(args), env=self.env, capture_output=True,
                              text=True, timeout=30, check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def state(self):
        return json.loads(self.sim("show"))

    def npu_smi(self):
        return self.sim("npu-smi", "info")

    def start(self, *args, port=None, model=None, **env):
        """Start a server (the model directory mounted at its own path in a container); (Popen, port)."""
        port = port or free_port()
        if "ASCEND_SIM_CONTAINER" in env:
            env.setdefault("FAKE_VLLM_MOUNTS", json.dumps({str(self.model): str(self.model)}))
        proc = subprocess.Popen(  # pylint: disable=consider-using-with
            [sys.executable, str(FAKE_VLLM), "serve", model or str(self.model), "--host", "127.0.0.1", "--port",
             str(port)]
            + list(args), env=dict(self.env, **env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(proc)
        return proc, port

    def run(self, *args, **env):
        """Run a server that is expected to fail at start: the CompletedProcess."""
        if "ASCEND_SIM_CONTAINER" in env:
            env.setdefault("FAKE_VLLM_MOUNTS", json.dumps({str(self.model): str(self.model)}))
        return subprocess.run([sys.executable, str(FAKE_VLLM), "serve", str(self.model), "--port", str(free_port())]
                              + list(args), env=dict(self.env, **env), capture_output=True, text=True, timeout=30,
                              check=False)

    def record(self, port):
        return json.loads((self.root / "run" / "fake-vllm" / ("%d.json" % port)).read_text())

    def record_or_none(self, port):
        path = self.root / "run" / "fake-vllm" / ("%d.json" % port)
        return json.loads(path.read_text()) if path.exists() else None

    def cleanup(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()


@pytest.fixture
def node(tmp_path):
    made = Node(tmp_path)
    yield made
    made.cleanup()


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=20)


def test_endpoints_and_the_api_key(node):
    proc, port = node.start("--served-model-name", "qwen", "tiny", "--api-key", KEY, "--dtype", "float16",
                            "--enforce-eager")
    wait_health(port, proc)
    assert request(port, "/v1/models") == (401, {"error": "Unauthorized"})
    assert request(port, "/v1/models", key="wrong")[0] == 401
    assert request(port, "/v1/completions", body={"model": "qwen", "prompt": "hi"})[0] == 401
    status, models = request(port, "/v1/models", key=KEY)
    assert status == 200
    assert [m["id"] for m in models["data"]] == ["qwen", "tiny"]
    assert models["data"][0]["root"] == str(node.model)
    status, metrics = request(port, "/metrics")
    assert status == 200 and 'vllm:num_requests_running{model_name="qwen"}' in metrics
    assert request(port, "/nowhere")[0] == 404
    record = node.record(port)
    assert record["state"] == "serving" and record["api_key_source"] == "argument"
    assert KEY not in json.dumps(record)
    assert record["other_options"] == {"--dtype": "float16", "--enforce-eager": True}
    assert stop(proc) == 0
    assert node.record(port)["state"] == "stopped"


def test_key_from_the_environment_and_no_key(node):
    proc, port = node.start(VLLM_API_KEY=KEY)
    wait_health(port, proc)
    assert request(port, "/v1/models")[0] == 401
    status, models = request(port, "/v1/models", key=KEY)
    assert status == 200 and models["data"][0]["id"] == str(node.model)  # no served name: the model as given
    record = node.record(port)
    assert record["api_key_source"] == "env" and record["env"]["VLLM_API_KEY"] == "********"
    stop(proc)
    proc, port = node.start()
    wait_health(port, proc)
    assert request(port, "/v1/models")[0] == 200


def test_completions_are_deterministic_and_honour_max_tokens(node):
    proc, port = node.start("--served-model-name", "m")
    wait_health(port, proc)

    def complete(prompt, max_tokens=None):
        body = {"model": "m", "prompt": prompt}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        status, answer = request(port, "/v1/completions", body=body)
        assert status == 200, answer
        return answer

    first, again, other = complete("The capital of France is"), complete("The capital of France is"), complete("x")
    assert first["choices"][0]["text"] == again["choices"][0]["text"]
    assert first["choices"][0]["text"] != other["choices"][0]["text"]
    words = first["choices"][0]["text"].split()
    assert 1 <= len(words) <= 16 and first["usage"]["completion_tokens"] == len(words)
    assert first["usage"]["total_tokens"] == first["usage"]["prompt_tokens"] + len(words)
    short = complete("The capital of France is", 3)
    assert short["choices"][0]["text"].split() == words[:3]
    assert short["choices"][0]["finish_reason"] == "length"
    status, chat = request(port, "/v1/chat/completions",
                           body={"model": "m", "messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 4})
    assert status == 200 and chat["object"] == "chat.completion"
    assert len(chat["choices"][0]["message"]["content"].split()) <= 4
    assert chat["choices"][0]["message"]["role"] == "assistant"
    status, error = request(port, "/v1/completions", body={"model": "other", "prompt": "x"})
    assert status == 404 and error["error"]["type"] == "NotFoundError"
    assert request(port, "/v1/completions", body={"model": "m", "prompt": "x", "max_tokens": 0})[0] == 400


def test_streaming_chat(node):
    proc, port = node.start()
    wait_health(port, proc)
    req = urllib.request.Request("http://127.0.0.1:%d/v1/chat/completions" % port, headers={
        "Content-Type": "application/json"}, data=json.dumps({"messages": [{"role": "user", "content": "hi"}],
                                                             "max_tokens": 5, "stream": True}).encode())
    with urllib.request.urlopen(req, timeout=5) as resp:
        events = [line[len("data: "):] for line in resp.read().decode().splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert 1 <= len(text.split()) <= 5
    assert chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length")


def test_npus_are_held_while_serving_and_released_after_stop(node):
    before = node.state()
    # The release waits for a gate the test opens, instead of a delay a loaded machine could overrun.
    gate = node.root / "release-gate"
    proc, port = node.start("--tensor-parallel-size", "2", FAKE_VLLM_RELEASE_GATE=str(gate))
    wait_health(port, proc)
    held = [p for p in node.state()["processes"] if p["pid"] == proc.pid]
    assert [(p["npu_id"], p["chip_id"]) for p in held] == [(0, 0), (1, 0)]
    assert node.state()["chips"][0]["hbm_used"] == before["chips"][0]["hbm_used"] + held[0]["memory_mb"]
    table = node.npu_smi()
    assert "%d" % proc.pid in table and "No running processes found in NPU 0" not in table
    assert "No running processes found in NPU 2" in table
    proc.send_signal(signal.SIGTERM)
    # Stopped serving, it still holds its NPUs until the release.
    wait_closed(port, proc)
    assert proc.poll() is None, "ended before its NPUs were released"
    assert any(p["pid"] == proc.pid for p in node.state()["processes"])
    gate.touch()
    assert proc.wait(timeout=HANG_SECONDS) == 0
    assert node.state()["processes"] == [] and node.state()["chips"] == before["chips"]
    assert "No running processes found in NPU 0" in node.npu_smi()


def test_container_devices_pick_the_npus(node):
    proc, port = node.start("-tp", "2", model="/models/model", ASCEND_SIM_CONTAINER="vllm", ASCEND_VISIBLE_DEVICES="4-6",
                            ASCEND_RT_VISIBLE_DEVICES="1,2",
                            FAKE_VLLM_MOUNTS=json.dumps({"/models": str(node.model.parent)}))
    wait_health(port, proc)
    assert sorted(p["npu_id"] for p in node.state()["processes"]) == [5, 6]
    assert node.record(port)["container"] == "vllm"


def test_concurrent_servers_all_register(node):
    procs = [node.start(ASCEND_SIM_CONTAINER="c%d" % i, ASCEND_VISIBLE_DEVICES=str(i)) for i in range(4)]
    for proc, port in procs:
        wait_health(port, proc)
    assert sorted(p["npu_id"] for p in node.state()["processes"]) == [0, 1, 2, 3]
    threads = [threading.Thread(target=stop, args=(proc,)) for proc, _port in procs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert node.state()["processes"] == []


@pytest.mark.parametrize("setup, args, env, message", [
    (None, ["-tp", "9"], {}, "exceeds the number of available NPUs (8"),
    (None, [], {"ASCEND_SIM_CONTAINER": "c", "ASCEND_VISIBLE_DEVICES": ""}, "available NPUs (0"),
    ("busy", [], {}, "Free memory on device 0"),
    ("dcmi-8020", [], {}, "dcmi-8020"),
    ("no-model", [], {}, "the model directory"),
    ("unmounted", [], {"ASCEND_SIM_CONTAINER": "c", "ASCEND_VISIBLE_DEVICES": "0", "FAKE_VLLM_MOUNTS": "{}"},
     "not under any mount"),
    (None, ["--port", "x"], {}, "invalid value"),
    (None, ["-tp", "4", "--data-parallel-size", "4", "--data-parallel-size-local", "3"], {},
     "(12 = tensor 4 x pipeline 1 x data 3)"),
    (None, ["--data-parallel-size", "2", "--data-parallel-size-local", "3"], {}, "must be between 1 and"),
    (None, ["--headless"], {}, "--headless needs --data-parallel-address"),
])
def test_start_failures(node, setup, args, env, message):
    if setup in ("busy", "dcmi-8020"):
        node.sim("preset", setup)
    if setup == "no-model":
        node.model.rmdir()
    proc = node.run(*args, **env)
    assert proc.returncode == 1, proc.stderr
    assert message in proc.stderr
    assert all(p["name"] != "VLLM::Worker" for p in node.state()["processes"])


def elided(text):
    """vLLM's ValidationError lines with what varies run to run (the architectures named, the supported list, the
    arguments' repr) replaced by '...'."""
    text = re.sub(r"Model architectures \[[^]]*\]", "Model architectures [...]", text)
    text = re.sub(r"dict_keys\(\[[^]]*\]\)", "dict_keys([...])", text)
    return re.sub(r"input_value=ArgsKwargs\(.*\), input_type", "input_value=ArgsKwargs(...), input_type", text)


@pytest.mark.parametrize("container", [False, True])
def test_an_unsupported_architecture_fails_the_start_as_vllm_does(node, container):
    (node.model / "config.json").write_text(json.dumps({"architectures": ["ExoticForCausalLM"], "model_type": "x"}))
    env = {"ASCEND_SIM_CONTAINER": "c", "ASCEND_VISIBLE_DEVICES": "0-7"} if container else {}
    port = free_port()
    proc = node.run("--port", str(port), **env)
    assert proc.returncode == 1, proc.stderr
    real = load_fixture("vllm-start-error_cpu-0.32.0_unsupported-architecture.txt")
    assert elided(proc.stderr).endswith(elided(real))
    assert "Model architectures ['ExoticForCausalLM'] are not supported for now. Supported architectures: " \
        "dict_keys(['DeepseekForCausalLM', " in proc.stderr
    assert node.record(port)["state"] == "failed"
    assert node.state()["processes"] == []


@pytest.mark.parametrize("config", [
    {"architectures": ["ExoticForCausalLM", "DeepseekV3ForCausalLM"]},  # one supported is enough, as in vLLM
    {"model_type": "deepseek_v3"},  # none named: vLLM fails elsewhere, or not; the stand-in serves
    "not JSON",
])
def test_a_supported_or_unnamed_architecture_serves(node, config):
    (node.model / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    proc, port = node.start()
    wait_health(port, proc)
    assert stop(proc) == 0


def test_multi_node_data_parallel_takes_the_local_ranks_and_headless_serves_no_api(node):
    """The recipe's second A2 node: DP 4 over two nodes, 2 local ranks x TP 4 = all 8 NPUs, no API."""
    proc, port = node.start("-tp", "4", "--data-parallel-size", "4", "--data-parallel-size-local", "2",
                            "--data-parallel-address", "10.0.0.11", "--data-parallel-rpc-port", "13389",
                            "--headless", "--data-parallel-start-rank", "2")
    deadline = time.monotonic() + HANG_SECONDS
    while node.record_or_none(port) is None or node.record(port)["state"] != "headless":
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "not headless after %d s" % HANG_SECONDS
        time.sleep(0.05)
    assert sorted(p["npu_id"] for p in node.state()["processes"]) == list(range(8))
    with pytest.raises(OSError):
        request(port, "/health", timeout=1)
    assert node.record(port)["other_options"]["--data-parallel-start-rank"] == "2"
    assert stop(proc) == 0
    assert node.state()["processes"] == []


def test_the_head_of_a_multi_node_launch_listens_on_its_rpc_port_until_it_stops(node):
    """The other nodes wait for the head's RPC port before they start (vllm_cluster): the head opens it."""
    rpc_port = free_port()
    proc, port = node.start("-tp", "4", "--data-parallel-size", "4", "--data-parallel-size-local", "2",
                            "--data-parallel-address", "127.0.0.1", "--data-parallel-rpc-port", str(rpc_port))
    wait_health(port, proc)
    for attempt in range(3):  # answered each time, not only while a backlog lasts
        with socket.create_connection(("127.0.0.1", rpc_port), timeout=HANG_SECONDS) as conn:
            assert conn.getpeername()[1] == rpc_port, attempt
    assert stop(proc) == 0
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", rpc_port), timeout=HANG_SECONDS).close()


def test_a_single_node_or_headless_launch_opens_no_rpc_port(node):
    rpc_port = free_port()
    proc, port = node.start("--data-parallel-size", "2", "--data-parallel-rpc-port", str(rpc_port),
                            "--data-parallel-address", "127.0.0.1")
    wait_health(port, proc)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", rpc_port), timeout=HANG_SECONDS).close()
    assert stop(proc) == 0


def test_an_rpc_port_in_use_fails_the_head_and_releases(node):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        rpc_port = sock.getsockname()[1]
        proc = node.start("-tp", "4", "--data-parallel-size", "4", "--data-parallel-size-local", "2",
                          "--data-parallel-address", "127.0.0.1", "--data-parallel-rpc-port", str(rpc_port))[0]
        assert proc.wait(timeout=20) == 1
        assert "error while attempting to bind the data parallel RPC port" in proc.stderr.read()
    assert node.state()["processes"] == []


def test_ray_backend_takes_what_the_node_has(node):
    proc, port = node.start("-tp", "8", "-pp", "2", "--distributed-executor-backend", "ray")
    wait_health(port, proc)
    assert len(node.state()["processes"]) == 8


def test_port_in_use_fails_and_releases(node):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        proc = node.start(port=port)[0]
        assert proc.wait(timeout=20) == 1
        assert "error while attempting to bind" in proc.stderr.read()
    assert node.state()["processes"] == []


def test_start_delay(node):
    # The start waits for a gate the test opens, instead of a delay a loaded machine could overrun.
    gate = node.root / "start-gate"
    proc, port = node.start(FAKE_VLLM_START_GATE=str(gate))
    deadline = time.monotonic() + HANG_SECONDS
    while node.record_or_none(port) is None:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "no run record after %d s" % HANG_SECONDS
        time.sleep(0.05)
    # Starting: its NPUs taken (the record is written after that), not bound yet.
    assert node.record(port)["state"] == "starting"
    assert any(p["pid"] == proc.pid for p in node.state()["processes"])
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=HANG_SECONDS).close()
    gate.touch()
    wait_health(port, proc)


def test_release_command_and_parsers(node):
    node.sim("set", 'processes=[{"npu_id": 0, "chip_id": 0, "pid": 4242, "name": "x", "memory_mb": 1}]')
    proc = subprocess.run([sys.executable, str(FAKE_VLLM), "release", "4242"], env=node.env, capture_output=True,
                          text=True, timeout=30, check=False)
    assert proc.returncode == 0 and "released 1 NPU entry" in proc.stdout
    assert node.state()["processes"] == []
    mod = simulator_module("fake_vllm", "fake-vllm")
    assert mod.parse_npu_list("0-2,5") == [0, 1, 2, 5]
    opts = mod.parse_serve(["--model=/m", "--served-model-name", "a", "--trust-remote-code", "--max-num-seqs", "8",
                            "--api-key", "k"])
    assert (opts["model"], opts["served"], opts["api_key"]) == ("/m", ["a"], "k")
    assert opts["other"] == {"--trust-remote-code": True, "--max-num-seqs": "8"}
    assert mod.redacted_argv(["--api-key", "k", "--api-key=k"]) == ["--api-key", "********", "--api-key=********"]
    assert mod.words_for("p", 100) == mod.words_for("p", 100)
