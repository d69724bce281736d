"""The prefix-routing door (issue #44) in a real HAProxy (Debian's 2.6, with its Lua): the key door/prefix_key.lua
takes from each body (tests/cases/door/prefix_key.json), and the door tritonops renders around it, with three small
HTTP replicas on 127.0.0.1: the same prompt reaches the same replica every time and on every balancer, keys spread
over the replicas, a request without a key is spread, the log names each request's key by its hash, a drained
replica's keys move and come back, and the balance factor bounds a hot key's replica."""

from __future__ import annotations

import http.client
import http.server
import json
import shutil
import signal
import subprocess
import threading
import time
import zlib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.door_program import stream_events
from tests.support.haproxy_harness import Replicas, ask
from tests.support.network import server_port
from tests.support.paths import CASES
from tritonops.door.program import PREFIX_KEY
from tritonops.door.request_log import parse_request_log, show_events
from tritonops.render.door_config import (
    PREFIX, BalancedReplica, BalancerConfig, BalancerGlobals, http_backend, render_balancer_files,
)

KEY_CASES = json.loads((CASES / "door" / "prefix_key.json").read_text())["cases"]
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
GENERATE = "/v2/models/m/generate"


def post(port: int, body: bytes, path: str = GENERATE) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


def start(config_dir: Path, socket_path: str) -> subprocess.Popen:
    process = subprocess.Popen([HAPROXY, "-W", "-f", str(config_dir)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"haproxy exited: {process.stderr.read().decode()[-2000:]}")
        try:
            if ask(socket_path, "show info").startswith("Name: HAProxy"):
                return process
        except OSError:
            pass
        time.sleep(0.05)
    process.kill()
    raise TimeoutError("haproxy's stats socket did not answer")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


# --- the key itself --------------------------------------------------------------------------------------

ECHO = """\
global
    stats socket {folder}/admin.sock mode 600 level admin
    lua-load {script}
defaults
    mode http
    timeout connect 2s
    timeout client 5s
    timeout server 5s
"""
ECHO_FRONTEND = """
frontend echo{bytes}
    bind 127.0.0.1:{port}
    http-request wait-for-body time 2s
    http-request set-var(txn.key,ifnotempty) lua.tritonops_prefix_key({bytes})
    http-request return status 200 content-type text/plain lf-string "%[var(txn.key),hex]" if {{ var(txn.key) -m found }}
    http-request return status 204
"""


@pytest.fixture(scope="module")
def script(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("lua") / PREFIX_KEY.name
    path.write_text(PREFIX_KEY.text)
    return path


@pytest.fixture(scope="module")
def echo(tmp_path_factory, script) -> dict[int, int]:
    """One HAProxy answering with the key of a body, in hex, a frontend per prefix length: {bytes: port}."""
    folder = tmp_path_factory.mktemp("echo")
    ports = {n: server_port() for n in sorted({case["bytes"] for case in KEY_CASES})}
    (folder / "echo.cfg").write_text(ECHO.format(folder=folder, script=script) + "".join(
        ECHO_FRONTEND.format(bytes=n, port=port) for n, port in ports.items()))
    process = start(folder / "echo.cfg", f"{folder}/admin.sock")
    yield ports
    stop(process)


@pytest.mark.parametrize("case", KEY_CASES, ids=[case["name"] for case in KEY_CASES])
def test_the_key_is_the_prompts_first_bytes_as_they_stand_or_none(echo, case):
    status, text = post(echo[case["bytes"]], case["body"].encode())
    key = bytes.fromhex(text).decode() if status == 200 else None
    assert (status, key) == ((200, case["key"]) if case["key"] is not None else (204, None))


def test_a_body_beyond_haproxys_buffer_still_gives_the_key_or_none_when_the_field_comes_too_late(echo):
    long = "x" * 40_000
    assert post(echo[8], json.dumps({"text_input": "abcdefgh" + long}).encode()) == (200, b"abcdefgh".hex())
    assert post(echo[8], json.dumps({"tools": long, "text_input": "abcdefgh"}).encode())[0] == 204


# --- the door around it ----------------------------------------------------------------------------------

class Replica(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self._answer(200, b"{}")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            wait = float(json.loads(body).get("parameters", {}).get("sleep_s", 0))
        except (ValueError, AttributeError):
            wait = 0.0
        if self.path.endswith("/generate_stream"):  # 5 events, `wait` apart
            stream_events(self, [{"text_output": f"w{i}", "replica": self.server.name} for i in range(5)],
                          min(wait, 1.0))
            return
        time.sleep(min(wait, 5.0))
        self._answer(200, json.dumps({"replica": self.server.name}).encode())

    def _answer(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@dataclass
class Balancer:
    socket: str
    ports: dict[str, int]  # deployment -> its HTTP door
    process: subprocess.Popen | None = None

    def send(self, prompt: str | None, deployment: str = "bounded", sleep_s: float = 0.0) -> str:
        body = {"parameters": {"sleep_s": sleep_s}} if prompt is None else {"text_input": prompt,
                                                                             "parameters": {"sleep_s": sleep_s}}
        status, text = post(self.ports[deployment], json.dumps(body).encode())
        assert status == 200, text
        return json.loads(text)["replica"]


@dataclass
class Fleet:
    replicas: dict[str, Replicas] = field(default_factory=dict)
    balancers: list[Balancer] = field(default_factory=list)


NAMES = ("node-a-r0", "node-a-r1", "node-b-r0")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, script) -> Fleet:
    """Three replicas behind two balancers, each with the same two doors (deployments "bounded": balance factor
    150, and "unbounded": 0) rendered by tritonops, as two balancer hosts of one inventory would be."""
    fleet = Fleet()
    for name in NAMES:
        server = Replicas(("127.0.0.1", 0), Replica)
        server.name = name
        threading.Thread(target=server.serve_forever, daemon=True).start()
        fleet.replicas[name] = server
    replicas = tuple(BalancedReplica(name, "127.0.0.1", server.server_address[1], server_port(), 64)
                     for name, server in fleet.replicas.items())
    try:
        for index in range(2):
            folder = tmp_path_factory.mktemp(f"balancer{index}")
            ports = {"bounded": server_port(), "unbounded": server_port()}
            configs = [BalancerConfig(deployment, replicas, http_port=port, grpc_port=None, bind_address="127.0.0.1",
                                      check_interval_ms=100, routing=PREFIX, prefix_bytes=64,
                                      balance_factor=150 if deployment == "bounded" else 0)
                       for deployment, port in ports.items()]
            globals_ = BalancerGlobals(stats_socket=f"{folder}/admin.sock", metrics_port=server_port(),
                                       lua_scripts=(str(script),))
            conf = folder / "conf"
            conf.mkdir()
            for name, text in render_balancer_files(globals_, configs).items():
                (conf / name).write_text(text)
            balancer = Balancer(globals_.stats_socket, ports)
            balancer.process = start(conf, balancer.socket)
            fleet.balancers.append(balancer)
        yield fleet
    finally:
        for balancer in fleet.balancers:
            stop(balancer.process)
        for server in fleet.replicas.values():
            server.shutdown()
            server.server_close()


PROMPTS = [f"tenant {i:02d}: you are the assistant of a shop that sells {i * 7} kinds of tea. " + "context " * 20
           for i in range(30)]


def test_the_same_prompt_reaches_the_same_replica_every_time_and_on_every_balancer(fleet):
    """On the door without a balance factor: with one, a request HAProxy still counts as served on a replica (its
    stream not yet released as the next one arrives) can make that replica ineligible for the next by the bound
    ((served + 1) x 1.5 slots shared by three), and the key rightly goes on to the next replica."""
    first, second = fleet.balancers
    chosen = {prompt: first.send(prompt + " question one", "unbounded") for prompt in PROMPTS}
    for prompt in PROMPTS:  # another question after the same 64 bytes, on the same balancer and the other
        assert first.send(prompt + " question two", "unbounded") == chosen[prompt]
        assert second.send(prompt + " question three", "unbounded") == chosen[prompt]
    spread = Counter(chosen.values())
    assert set(spread) == set(NAMES) and max(spread.values()) <= 2 * min(spread.values()) + 2, spread


def test_a_request_without_a_key_is_spread_not_refused(fleet):
    balancer = fleet.balancers[0]
    reached = Counter(balancer.send(None) for _ in range(30))
    assert len(reached) >= 2, reached


def test_the_log_names_each_requests_key_by_its_hash(fleet):
    balancer = fleet.balancers[1]
    balancer.send(PROMPTS[3] + " logged")
    balancer.send(None)
    logged = [r for r in parse_request_log(ask(balancer.socket, show_events()))
              if r.backend == http_backend("bounded") and r.request.startswith("POST")]
    key = (PROMPTS[3] + " logged")[:64].encode()
    assert logged[-2].key_hash == str(zlib.crc32(key)) and logged[-1].key_hash is None, logged[-2:]


def test_a_drained_replicas_keys_move_and_come_back_when_it_returns(fleet):
    """On the door without a balance factor (as above: the bound may move a key on its own)."""
    balancer = fleet.balancers[0]
    chosen = {prompt: balancer.send(prompt, "unbounded") for prompt in PROMPTS}
    drained = Counter(chosen.values()).most_common(1)[0][0]
    server = f"{http_backend('unbounded')}/{drained}"
    assert ask(balancer.socket, f"set server {server} state drain").strip() == ""
    try:
        moved = {prompt: balancer.send(prompt, "unbounded") for prompt in PROMPTS}
        assert drained not in moved.values()
        # only the drained replica's keys moved: consistent hashing
        assert all(moved[p] == chosen[p] for p in PROMPTS if chosen[p] != drained)
    finally:
        assert ask(balancer.socket, f"set server {server} state ready").strip() == ""
    assert {prompt: balancer.send(prompt, "unbounded") for prompt in PROMPTS} == chosen


@pytest.mark.parametrize("deployment, most", [("bounded", 6), ("unbounded", 12)])
def test_the_balance_factor_bounds_a_hot_keys_replica(fleet, deployment, most):
    """12 slow requests of one prompt at once: with the factor 150 its replica takes at most about half
    ((served + 1) x 1.5 / 3 each); with 0, all of them."""
    balancer = fleet.balancers[0]
    with ThreadPoolExecutor(12) as pool:
        futures = []
        for _ in range(12):
            futures.append(pool.submit(balancer.send, PROMPTS[5], deployment, 0.6))
            time.sleep(0.02)  # one after the other, as HAProxy counts each served request before the next
        reached = Counter(future.result() for future in futures)
    assert max(reached.values()) <= most and (len(reached) > 1) == (deployment == "bounded"), reached


def test_a_reload_under_load_fails_nothing_and_keeps_every_keys_replica(fleet):
    """HAProxy reloads (SIGUSR2 to its master: a new worker) while keyed requests flow: none fails, and the new
    worker sends each prompt where the old one did (the ring is the configuration's, not the process's). The door
    without a balance factor: with 3 clients at once the bound would rightly send some elsewhere."""
    balancer = fleet.balancers[1]
    chosen = {prompt: balancer.send(prompt, "unbounded") for prompt in PROMPTS[:10]}
    stop = threading.Event()
    seen: list = []

    def load():
        while not stop.is_set():
            for prompt in PROMPTS[:10]:
                seen.append((prompt, balancer.send(prompt, "unbounded", sleep_s=0.05)))

    threads = [threading.Thread(target=load) for _ in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    old = ask(balancer.socket, "show info")
    balancer.process.send_signal(signal.SIGUSR2)
    deadline = time.monotonic() + 10
    while ask(balancer.socket, "show info") == old and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    stop.set()
    for thread in threads:
        thread.join(timeout=20)
    assert len(seen) > 30 and all(replica == chosen[prompt] for prompt, replica in seen), seen[:5]


def test_server_sent_events_keep_their_spacing_through_a_prefix_door(fleet):
    """generate_stream through the door: 5 events 0.2 s apart arrive 0.2 s apart (http-no-delay), not in a burst;
    the stream's replica is its prompt's."""
    balancer = fleet.balancers[0]
    prompt = PROMPTS[7]
    expected = balancer.send(prompt)
    connection = http.client.HTTPConnection("127.0.0.1", balancer.ports["bounded"], timeout=10)
    connection.request("POST", GENERATE + "_stream", body=json.dumps(
        {"text_input": prompt, "parameters": {"sleep_s": 0.2}}).encode(), headers={"Content-Type": "application/json"})
    answer = connection.getresponse()
    arrived, replicas = [], set()
    while len(arrived) < 5:
        line = answer.fp.readline()
        if line.startswith(b"data:"):
            arrived.append(time.monotonic())
            replicas.add(json.loads(line[5:])["replica"])
    connection.close()
    gaps = [b - a for a, b in zip(arrived, arrived[1:])]
    assert all(0.15 < gap < 0.35 for gap in gaps) and replicas == {expected}, (gaps, replicas)


def test_the_grpc_door_is_the_same_whatever_the_http_door_routes_by():
    """gRPC streams stay on leastconn: routing by prefix changes the HTTP door only."""
    from tritonops.render.door_config import LEASTCONN, render_deployment

    replicas = (BalancedReplica("a-r0", "10.0.0.1", 8000, 8001, 8), BalancedReplica("a-r1", "10.0.0.1", 8010, 8011, 8))
    texts = {routing: render_deployment(BalancerConfig("chat", replicas, routing=routing))
             for routing in (LEASTCONN, PREFIX)}
    grpc = {routing: text[text.index("frontend tritonops_chat_grpc_door"):] for routing, text in texts.items()}
    assert grpc[LEASTCONN] == grpc[PREFIX] and "balance leastconn" in grpc[PREFIX]
    assert texts[LEASTCONN] != texts[PREFIX]


def test_metrics_reads_stickiness_and_the_split_from_the_doors_log_and_show_stat(fleet):
    """`tritonops metrics`' door figures for a door routing by prefix: of the requests the log holds, the share that
    reached their key's replica and the requests per replica (door.figures with request_log.routing), on what a
    real HAProxy logged; a request without a key counts in the split only."""
    from tritonops.door.figures import door_figures
    from tritonops.door.request_log import routing
    from tritonops.door.runtime import parse_stat, show_stat

    balancer = fleet.balancers[0]
    backend = http_backend("unbounded")
    earlier = len(parse_request_log(ask(balancer.socket, show_events())))  # the other tests' (a drain moved keys)
    chosen = Counter(balancer.send(prompt, "unbounded") for prompt in PROMPTS[:12] * 2)
    keyless = balancer.send(None, "unbounded")
    logged = parse_request_log(ask(balancer.socket, show_events()))
    these = routing(logged[earlier:], backend)
    assert these.keyed == 24 and these.stickiness == 1.0, these
    assert Counter(dict(these.split)) == chosen + Counter({keyless: 1}), (these.split, chosen)
    figures = {(d.deployment, d.door): d for d in door_figures(parse_stat(ask(balancer.socket, show_stat())),
                                                               None, logged).doors}
    assert figures[("unbounded", "http")].routing == routing(logged, backend)
    assert these.said() == ("24 keyed requests, 100% to their key's replica; split "
                            + " / ".join(f"{server} {count:,}" for server, count in these.split))


def test_a_replica_drained_and_made_ready_again_mid_load_fails_no_request(fleet):
    """Keyed requests from 3 clients while a replica is drained (its keys go to the next replica on the ring) and
    made ready again (they come back): every request answered 200, and both moves seen."""
    balancer = fleet.balancers[1]
    server = f"{http_backend('unbounded')}/{NAMES[0]}"
    stop = threading.Event()
    seen: list = []
    errors: list = []

    def load():
        while not stop.is_set():
            for prompt in PROMPTS:
                try:
                    seen.append((time.monotonic(), balancer.send(prompt, "unbounded", sleep_s=0.02)))
                except Exception as err:  # noqa: BLE001 - every client exception is recorded
                    errors.append(repr(err))

    threads = [threading.Thread(target=load) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(0.4)
        drained_at = time.monotonic()
        assert ask(balancer.socket, f"set server {server} state drain").strip() == ""
        time.sleep(0.6)
        ready_at = time.monotonic()
        assert ask(balancer.socket, f"set server {server} state ready").strip() == ""
        time.sleep(0.6)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=20)
    during = [replica for at, replica in seen if drained_at + 0.1 < at < ready_at]
    after = [replica for at, replica in seen if at > ready_at + 0.1]
    assert not errors and during and NAMES[0] not in during and NAMES[0] in after, (errors[:3], len(during))
