# -*- coding: utf-8 -*-
# Copyright: contributors to the kunpeng_ascend.vllm collection
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of tests/simulator/fake-engine (the docker / podman / dockerd / containerd stand-ins).

The program runs as real subprocesses through symlinks named docker, podman, dockerd, containerd and ctr, with a
scratch ASCEND_SIM_ROOT; image archives are real docker-archive and OCI tars built here; ``run`` starts the real
fake vLLM server (tests/simulator/fake-vllm) on a free port, whose NPUs the simulated npu-smi shows.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ansible_collections.kunpeng_ascend.vllm.tests.helpers import HANG_SECONDS, simulator_module

SIMULATOR = Path(__file__).resolve().parents[2] / "simulator"
ENGINE = SIMULATOR / "fake-engine"
ASCEND_SIM = SIMULATOR / "ascend-sim"
IMAGE = "quay.io/ascend/vllm-ascend:v0.9.1"
ASCEND_PATH = "/usr/local/Ascend/Ascend-Docker-Runtime/ascend-docker-runtime"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(port, path, key=None, body=None):
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = "Bearer " + key
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), headers=headers,
                                 data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def image_config(cmd=None):
    return json.dumps({"architecture": "arm64", "os": "linux", "created": "2025-06-01T00:00:00Z",
                       "config": {"Cmd": cmd or ["bash"], "Env": ["PATH=/usr/bin"]}}).encode()


def docker_archive(path, tags, config=None):
    """A docker-archive tar (as `docker save` writes it); returns the image ID."""
    config = config or image_config()
    digest = hashlib.sha256(config).hexdigest()
    layer = b"layer"
    with tarfile.open(path, "w") as tar:
        add(tar, "blobs/sha256/%s" % digest, config)
        add(tar, "blobs/sha256/%s" % hashlib.sha256(layer).hexdigest(), layer)
        add(tar, "manifest.json", json.dumps([{"Config": "blobs/sha256/%s" % digest, "RepoTags": tags,
                                               "Layers": ["blobs/sha256/%s" % hashlib.sha256(layer).hexdigest()]}]
                                             ).encode())
    return "sha256:" + digest


def oci_archive(path, ref, config=None):
    """An OCI image-layout tar (index.json, no manifest.json); returns the config digest."""
    config = config or image_config(["vllm", "serve", "/models/m"])
    cdigest = "sha256:" + hashlib.sha256(config).hexdigest()
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cdigest,
                                      "size": len(config)}, "layers": []}).encode()
    mdigest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    with tarfile.open(path, "w") as tar:
        add(tar, "oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        add(tar, "blobs/sha256/" + cdigest[7:], config)
        add(tar, "blobs/sha256/" + mdigest[7:], manifest)
        add(tar, "index.json", json.dumps({"schemaVersion": 2, "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": mdigest, "size": len(manifest),
             "annotations": {"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": "v1"}}]}).encode())
    return cdigest


class Node:
    """A scratch root: engine programs in bin/, an ascend-sim state, daemons and containers started here."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.root = tmp_path / "root"
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        for name in ("docker", "podman", "dockerd", "containerd", "ctr"):
            (self.bin / name).symlink_to(ENGINE)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("ASCEND_", "FAKE_VLLM", "VLLM_", "NOTIFY_SOCKET"))}
        self.env.update(ASCEND_SIM_ROOT=str(self.root), FAKE_VLLM_START_DELAY="0", FAKE_VLLM_RELEASE_DELAY="0.2")
        self.model = tmp_path / "models" / "tiny"
        self.model.mkdir(parents=True)
        self.procs = []
        self.sim("init", "--profile", "910b-8")
        self.sim("set", "driver_version=24.1.rc1")

    def sim(self, *args):
        proc = subprocess.run([sys.executable, str(ASCEND_SIM)] + list(args), env=self.env, capture_output=True,
                              text=True, timeout=30, check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def processes(self):
        return json.loads(self.sim("show"))["processes"]

    def run(self, tool, *args, **env):
        return subprocess.run([sys.executable, str(self.bin / tool)] + [str(a) for a in args],
                              env=dict(self.env, **env), capture_output=True, text=True, timeout=60, check=False)

    def ok(self, tool, *args, **env):
        proc = self.run(tool, *args, **env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def popen(self, tool, *args, **env):
        proc = subprocess.Popen([sys.executable, str(self.bin / tool)] + [str(a) for a in args],  # pylint: disable=consider-using-with
                                env=dict(self.env, **env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(proc)
        return proc

    def write(self, path, text):
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def daemon(self, name="dockerd", **env):
        proc = self.popen(name, **env)
        record = self.root / "run" / "ascend-sim" / (name + ".json")
        deadline = time.monotonic() + HANG_SECONDS
        while time.monotonic() < deadline:
            if record.exists():
                return proc
            if proc.poll() is not None:
                return proc
            time.sleep(0.05)
        raise AssertionError("%s did not start" % name)

    def calls(self):
        path = self.root / "var" / "log" / "ascend-sim" / "engine.log"
        return [json.loads(line) for line in path.read_text().splitlines()]

    def wait_health(self, port, proc, timeout=HANG_SECONDS):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError("run exited with rc %s: %s" % (proc.returncode, proc.stderr.read()))
            try:
                if get(port, "/health")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("/health did not answer")

    def cleanup(self):
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        state = json.loads((self.root / "var/lib/ascend-sim/engine.json").read_text()) if (
            self.root / "var/lib/ascend-sim/engine.json").exists() else {}
        for section in state.values():
            for container in section.get("containers", {}).values():
                pid = container.get("pid")
                if pid and container.get("status") == "running":
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass


@pytest.fixture
def node(tmp_path):
    made = Node(tmp_path)
    yield made
    made.cleanup()


@pytest.fixture
def docker(node):
    """The node with dockerd running and the image loaded."""
    node.daemon()
    docker_archive(node.tmp / "image.tar", [IMAGE])
    node.ok("docker", "load", "-i", node.tmp / "image.tar")
    return node


def test_docker_needs_its_daemon(node):
    proc = node.run("docker", "info")
    assert proc.returncode == 1 and "Cannot connect to the Docker daemon" in proc.stderr
    assert node.run("docker", "run", IMAGE).returncode == 125
    assert node.ok("docker", "--version").startswith("Docker version ")
    node.daemon()
    assert node.ok("docker", "version", "--format", "{{.Server.Version}}").strip()
    assert node.calls()[0] == {**node.calls()[0], "tool": "docker", "argv": ["info"], "rc": 1}


def test_info_reports_the_configuration_the_daemon_read(node):
    node.write("/etc/docker/daemon.json", json.dumps({"runtimes": {"ascend": {"path": ASCEND_PATH,
                                                                              "runtimeArgs": []}},
                                                      "default-runtime": "ascend", "log-driver": "json-file"}))
    daemon = node.daemon()
    info = json.loads(node.ok("docker", "info", "--format", "{{json .}}"))
    assert info["Runtimes"]["ascend"]["path"] == ASCEND_PATH and "runc" in info["Runtimes"]
    assert info["DefaultRuntime"] == "ascend" and info["ServerVersion"]
    assert node.ok("docker", "info", "--format", "{{.DefaultRuntime}}") == "ascend\n"
    node.write("/etc/docker/daemon.json", "{}")
    assert node.ok("docker", "info", "--format", "{{.DefaultRuntime}}") == "ascend\n"  # not reloaded yet
    daemon.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + HANG_SECONDS
    while node.ok("docker", "info", "--format", "{{.DefaultRuntime}}") != "runc\n":
        assert time.monotonic() < deadline, "SIGHUP did not reload daemon.json"
        time.sleep(0.1)
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=10) == 0
    assert node.run("docker", "info").returncode == 1


def test_a_bad_daemon_json_stops_dockerd(node):
    node.write("/etc/docker/daemon.json", '{"runtimes": ')
    proc = node.popen("dockerd")
    assert proc.wait(timeout=15) == 1
    assert "daemon.json" in proc.stderr.read()


def test_dockerd_tells_systemd_it_is_ready(node):
    address = str(node.tmp / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(address)
        sock.settimeout(HANG_SECONDS)
        node.daemon(NOTIFY_SOCKET=address)
        assert sock.recv(100) == b"READY=1"


def test_load_docker_archive_and_inspect(node):
    node.daemon()
    first = docker_archive(node.tmp / "a.tar", [IMAGE])
    assert node.ok("docker", "load", "-i", node.tmp / "a.tar") == "Loaded image: %s\n" % IMAGE
    assert node.ok("docker", "image", "inspect", "--format", "{{.Id}}", IMAGE) == first + "\n"
    assert json.loads(node.ok("docker", "image", "inspect", first[7:19]))[0]["RepoTags"] == [IMAGE]
    proc = node.run("docker", "image", "inspect", "--format", "{{.Id}}", "vllm:none")
    assert proc.returncode == 1 and "No such image: vllm:none" in proc.stderr
    # a newer image under the same tag takes the tag; the old one stays, untagged
    second = docker_archive(node.tmp / "b.tar", [IMAGE, "local/vllm"], image_config(["sh"]))
    node.ok("docker", "load", "-i", node.tmp / "b.tar")
    assert node.ok("docker", "image", "inspect", "--format", "{{.Id}}", IMAGE) == second + "\n"
    assert node.ok("docker", "image", "inspect", "--format", "{{.Id}}", "docker.io/local/vllm:latest") == second + "\n"
    assert node.ok("docker", "images", "-q").split() == sorted([first[7:19], second[7:19]])
    assert node.ok("docker", "tag", "sha256:" + first[7:], "old:1") == ""
    assert node.ok("docker", "image", "inspect", "--format", "{{.RepoTags}}", "old:1") == "[old:1]\n"
    assert node.run("docker", "tag", "ghost", "x").returncode == 1
    assert "quay.io/ascend/vllm-ascend v0.9.1" in node.ok("docker", "images", "--format", "{{.Repository}} {{.Tag}}")
    assert node.run("docker", "load", "-i", node.tmp / "missing.tar").returncode == 1
    (node.tmp / "bad.tar").write_bytes(b"not a tar")
    assert node.run("docker", "load", "-i", node.tmp / "bad.tar").returncode == 1


def test_load_oci_archive_with_podman(node):
    digest = oci_archive(node.tmp / "oci.tar", "quay.io/ascend/vllm-ascend:v1")
    assert node.ok("podman", "load", "-i", node.tmp / "oci.tar") == "Loaded image: quay.io/ascend/vllm-ascend:v1\n"
    assert node.ok("podman", "image", "inspect", "--format", "{{.Id}}", "quay.io/ascend/vllm-ascend:v1") == (
        digest[len("sha256:"):] + "\n")  # podman prints the bare hex
    node.ok("podman", "tag", digest[7:], "local/vllm:v2")
    assert json.loads(node.ok("podman", "image", "inspect", "local/vllm:v2"))[0]["RepoTags"] == [
        "docker.io/local/vllm:v2", "quay.io/ascend/vllm-ascend:v1"]
    assert node.run("podman", "tag", "ghost", "x").returncode == 125
    proc = node.run("podman", "image", "inspect", "nope")
    assert proc.returncode == 125 and "image not known" in proc.stderr
    # podman and docker keep separate image stores
    node.daemon()
    assert node.run("docker", "image", "inspect", "quay.io/ascend/vllm-ascend:v1").returncode == 1


def test_podman_info_names_its_runtime(node):
    assert json.loads(node.ok("podman", "info", "--format", "json"))["host"]["ociRuntime"]["name"] == "crun"
    node.write("/etc/containers/containers.conf", '[engine]\nruntime = "ascend"\n\n[engine.runtimes]\n'
               'ascend = ["%s"]\n' % ASCEND_PATH)
    runtime = json.loads(node.ok("podman", "info", "--format", "json"))["host"]["ociRuntime"]
    assert runtime == {**runtime, "name": "ascend", "path": ASCEND_PATH}


def test_run_serves_holds_the_npus_and_stops(docker):
    node = docker
    port = free_port()
    (node.tmp / "vllm.env").write_text("# serving env\nVLLM_API_KEY=secret-1\nHCCL_BUFFSIZE=200\n")
    run = node.popen("docker", "run", "--rm", "--name", "vllm", "--net=host", "--shm-size=1g",
                     "--device", "/dev/davinci2", "--device", "/dev/davinci3:/dev/davinci3:rwm",
                     "--device", "/dev/davinci_manager", "--env-file", node.tmp / "vllm.env", "-e", "EXTRA=1",
                     "-v", "%s:/models/tiny:ro" % node.model, IMAGE,
                     "vllm", "serve", "/models/tiny", "--host", "127.0.0.1", "--port", port,
                     "--served-model-name", "tiny", "--tensor-parallel-size", "2")
    node.wait_health(port, run)
    assert get(port, "/v1/models")[0] == 401
    status, body = get(port, "/v1/completions", "secret-1", {"model": "tiny", "prompt": "hello", "max_tokens": 4})
    assert status == 200 and get(port, "/v1/completions", "secret-1", {
        "model": "tiny", "prompt": "hello", "max_tokens": 4})[1].count(json.loads(body)["choices"][0]["text"]) == 1
    assert sorted(p["npu_id"] for p in node.processes()) == [2, 3]
    table = node.sim("npu-smi", "info")
    assert "No running processes found in NPU 2" not in table and "No running processes found in NPU 0" in table
    assert node.ok("docker", "ps", "--format", "{{.Names}} {{.State}}") == "vllm running\n"
    inspect = json.loads(node.ok("docker", "inspect", "vllm"))[0]
    assert inspect["State"]["Running"] and inspect["HostConfig"]["ShmSize"] == "1g"
    assert "VLLM_API_KEY=********" in inspect["Config"]["Env"] and "EXTRA=1" in inspect["Config"]["Env"]
    assert [c["rc"] for c in node.calls() if c["argv"][:1] == ["run"]] == [None]
    assert node.ok("docker", "stop", "vllm") == "vllm\n"
    assert run.wait(timeout=20) == 0
    assert node.processes() == []
    assert "No running processes found in NPU 2" in node.sim("npu-smi", "info")
    assert node.ok("docker", "ps", "-a", "-q") == ""  # --rm
    assert [c["rc"] for c in node.calls() if c["argv"][:1] == ["run"]] == [None, 0]


def test_env_file_values_are_taken_literally(docker):
    node = docker
    port = free_port()
    (node.tmp / "vllm.env").write_text('VLLM_API_KEY="quoted"\n')
    run = node.popen("docker", "run", "--name", "q", "--device", "/dev/davinci0", "--env-file", node.tmp / "vllm.env",
                     "-v", "%s:%s" % (node.model, node.model), IMAGE, "vllm", "serve", node.model, "--port", port)
    node.wait_health(port, run)
    assert get(port, "/v1/models", "quoted")[0] == 401
    assert get(port, "/v1/models", '"quoted"')[0] == 200
    node.ok("docker", "stop", "-t", "5", "q")
    assert run.wait(timeout=20) == 0
    assert node.ok("docker", "ps", "-a", "--format", "{{.Names}} {{.State}}") == "q exited\n"  # no --rm: kept
    proc = node.run("docker", "run", "--name", "q", IMAGE, "vllm", "serve", node.model)
    assert proc.returncode == 125 and 'The container name "/q" is already in use' in proc.stderr
    node.ok("docker", "rm", "q")
    assert node.ok("docker", "ps", "-a", "-q") == ""


@pytest.mark.parametrize("runtime_flag, npus", [(["--runtime", "ascend"], [0, 1]), ([], None)])
def test_ascend_visible_devices_need_the_ascend_runtime(node, runtime_flag, npus):
    node.write("/etc/docker/daemon.json", json.dumps({"runtimes": {"ascend": {"path": ASCEND_PATH}}}))
    node.daemon()
    docker_archive(node.tmp / "image.tar", [IMAGE])
    node.ok("docker", "load", "-i", node.tmp / "image.tar")
    port = free_port()
    run = node.popen("docker", "run", "--rm", "-e", "ASCEND_VISIBLE_DEVICES=0-1", *runtime_flag,
                     "-v", "%s:/m" % node.model, IMAGE, "python3", "-m", "vllm.entrypoints.openai.api_server",
                     "--model", "/m", "--port", port, "-tp", "2")
    if npus is None:  # runc ignores ASCEND_VISIBLE_DEVICES: the server finds no NPU and the run fails
        assert run.wait(timeout=20) == 1
        assert "available NPUs (0" in run.stderr.read()
        return
    node.wait_health(port, run)
    assert sorted(p["npu_id"] for p in node.processes()) == npus


def test_detached_run_and_rm_force_release_the_npus(docker):
    node = docker
    port = free_port()
    cid = node.ok("docker", "run", "-d", "--name", "bg", "--device", "/dev/davinci5", "-v",
                  "%s:/m" % node.model, IMAGE, "bash", "-c", "exec vllm serve /m --port %d" % port).strip()
    assert len(cid) == 64
    pid = json.loads(node.ok("docker", "inspect", "bg"))[0]["State"]["Pid"]
    deadline = time.monotonic() + HANG_SECONDS
    while not node.processes():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert node.processes()[0]["pid"] == pid and node.processes()[0]["npu_id"] == 5
    assert node.ok("docker", "rm", "-f", "bg") == "bg\n"
    assert node.processes() == []  # killed with SIGKILL: the engine gives the NPU back
    assert node.ok("docker", "ps", "-a", "-q") == ""
    assert node.run("docker", "rm", "-f", "bg").returncode == 0  # docker rm -f of nothing is not an error
    proc = node.run("docker", "rm", "bg")
    assert proc.returncode == 1 and "No such container: bg" in proc.stderr


@pytest.mark.parametrize("args, rc, message", [
    (["run", "--rm", "other/image:1", "vllm", "serve", "/m"], 125, "Unable to find image 'other/image:1' locally"),
    (["run", "--pull", "never", "nope"], 125, "No such image: nope:latest"),
    (["run", "--bogus", IMAGE], 125, "unknown flag: --bogus"),
    (["run", "--runtime", "ascend", IMAGE, "vllm", "serve", "/m"], 125, "unknown or invalid runtime name: ascend"),
    (["run", "--name", "s", IMAGE, "sleep", "1"], 127, "runs only `vllm serve"),
    (["run", "--env-file", "/nonexistent.env", IMAGE], 125, "no such file or directory"),
    (["frobnicate"], 125, "'frobnicate' is not a docker command"),
    (["stop", "ghost"], 1, "No such container: ghost"),
])
def test_errors(docker, args, rc, message):
    proc = docker.run("docker", *args)
    assert proc.returncode == rc, proc.stderr
    assert message in proc.stderr
    assert docker.calls()[-1]["rc"] == rc


def test_containerd_and_ctr(node):
    node.write("/etc/containerd/config.toml", 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
               '  default_runtime_name = "ascend"\n')
    assert 'default_runtime_name = "ascend"' in node.ok("containerd", "config", "dump")
    assert node.run("ctr", "version").returncode == 1
    daemon = node.daemon("containerd")
    assert "Server:" in node.ok("ctr", "version")
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=10) == 0
    pytest.importorskip("tomllib")
    node.write("/etc/containerd/config.toml", "version = = 2\n")
    proc = node.popen("containerd")
    assert proc.wait(timeout=15) == 1 and "config.toml" in proc.stderr.read()


def test_run_flag_parsing_and_templates():
    mod = simulator_module("fake_engine", "fake-engine")
    opts, image, command = mod.parse_run("docker", [
        "--rm", "-it", "--name=v", "-eA=1", "--env", "B", "--net", "host", "--device=/dev/davinci0",
        "--shm-size", "1g", "--privileged", "--ipc=host", "--entrypoint", "", "img:1", "vllm", "serve", "-x"])
    assert (image, command) == ("img:1", ["vllm", "serve", "-x"])
    assert opts["env"] == ["A=1", "B"] and opts["--network"] == "host" and opts["--entrypoint"] == ""
    assert opts["--rm"] and opts["-i"] and opts["-t"] and opts["--privileged"] and opts["--name"] == "v"
    assert mod.vllm_args(["/usr/local/bin/vllm", "serve", "/m"]) == ["serve", "/m"]
    assert mod.vllm_args(["python3.11", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]) == [
        "serve", "--model", "/m"]
    assert mod.vllm_args(["sh", "-c", "A=1 exec vllm serve '/m x'"]) == ["serve", "/m x"]
    assert mod.vllm_args(["sleep", "1"]) is None
    values = {"A": {"x": 1}, "B": {"C": True}, "D": "X", "E": ["a", "b"]}
    assert mod.render("{{json .A}} {{.B.C}} {{lower .D}}\\t{{.E}}", values) == '{"x":1} true x\t[a b]'
    assert mod.full_ref("ubuntu") == "docker.io/library/ubuntu:latest"
    assert mod.familiar("docker.io/library/ubuntu:22.04") == "ubuntu:22.04"
    assert mod.full_ref("localhost:5000/a/b") == "localhost:5000/a/b:latest"
    assert mod.parse_npu_list("0-3,6") == [0, 1, 2, 3, 6]


def test_podman_run_replace_stops_the_old_container(node):
    oci_archive(node.tmp / "oci.tar", IMAGE)
    node.ok("podman", "load", "-i", node.tmp / "oci.tar")
    pids = []
    for device in (0, 1):
        port = free_port()
        node.ok("podman", "run", "-d", "--replace", "--name", "p", "--device", "/dev/davinci%d" % device,
                "-v", "%s:/models/m" % node.model, IMAGE, "vllm", "serve", "/models/m", "--port", port)
        pids.append(json.loads(node.ok("podman", "inspect", "p"))[0]["State"]["Pid"])
        deadline = time.monotonic() + HANG_SECONDS
        while [p["npu_id"] for p in node.processes()] != [device]:
            assert time.monotonic() < deadline, node.processes()
            time.sleep(0.05)
    assert pids[0] != pids[1]
    assert node.ok("podman", "ps", "-a", "--format", "{{.Names}}") == "p\n"
    node.ok("podman", "stop", "p")
    assert node.processes() == []
    assert node.ok("podman", "ps", "-q") == ""
