"""A real `switchboard gateway` on a temporary state dir, for the bench's Python scripts: started
on a free loopback port with the given config, connected through the bench kit's client, and
stopped with its state dir removed.

    with LocalGateway(binary, kit, prefix="sb-large-") as gw:
        gw.turn("hello")          # chat.send, then agent.wait until the run ended ok
        rss_kb(gw.proc.pid)
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def bench_args(ap):
    """The options every script over a local gateway takes: the binary, the kit, the messages."""
    ap.add_argument("--bin", required=True)
    ap.add_argument("--kit", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "bench"))
    ap.add_argument("--n", type=int, default=100, help="messages")
    ap.add_argument("--size", type=int, default=1_000_000, help="bytes a message")


def builds_args(ap, rounds=3):
    """The options of the scripts that compare builds in alternated rounds: each --bin as
    NAME=BINARY, the kit, the rounds."""
    ap.add_argument("--bin", action="append", required=True, help="NAME=BINARY")
    ap.add_argument("--kit", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "bench"))
    ap.add_argument("--rounds", type=int, default=rounds)


def send_args(ap, n, rounds):
    """The options of the scripts over agent_load.py's send workload: the kit, the samples a
    round, the rounds and the settle wait between samples; answers the parsed arguments."""
    ap.add_argument("--kit", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "bench"))
    ap.add_argument("--n", type=int, default=n, help="samples a round")
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--settle-s", type=float, default=0.5)
    args = ap.parse_args()
    args.kit = os.path.abspath(args.kit)
    return args


def send_load(kit, gw, n, settle_s, *extra):
    """The command line of bench/agent_load.py's send workload: `n` samples against `gw` (a
    LocalGateway), `settle_s` seconds between them, then any `extra` options."""
    return [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "agent_load.py"),
            "--kit", kit, "--url", gw.url, "--token", gw.token, "send", "--n", str(n),
            "--settle-s", str(settle_s), *extra]


def rss_kb(pid):
    """The process's VmRSS in kB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def callgrind_dump(pid, out_dir, prefix="callgrind.out"):
    """Asks the gateway running under callgrind (`pid`) to dump its counts into `out_dir` and
    waits for the new file (names starting with `prefix`); answers its path and the
    instructions it counted (its `totals:` line: `summary:` reads 0 in a dump of a run whose
    instrumentation was turned on and off)."""
    def listed():
        return {p for p in os.listdir(out_dir) if p.startswith(prefix)}

    before = listed()
    subprocess.run(["callgrind_control", "--dump", str(pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        new = listed() - before
        if new:
            time.sleep(0.5)  # written whole
            path = os.path.join(out_dir, sorted(new)[-1])
            with open(path) as f:
                for line in f:
                    if line.startswith("totals:"):
                        return path, int(line.split()[1])
            raise RuntimeError("no totals in %s" % path)
        time.sleep(0.1)
    raise RuntimeError("callgrind wrote no dump")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tool_mock(kit, *flags):
    """bench/tool_mock.py on a free loopback port with `flags` (e.g. "--keep-alive"), once it
    accepts connections: (process, port). The caller terminates it."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tool_mock.py"),
                             "--kit", kit, "--port", str(port), *flags],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("bench/tool_mock.py did not start on port %d" % port)
            time.sleep(0.05)


def mock_config(port):
    """The config fragment that makes tool_mock.py on `port` (OpenAI's format) every agent's model."""
    return ('models: { providers: { mock: { api: "openai-completions", '
            'baseUrl: "http://127.0.0.1:%d/v1", models: [{ id: "mock-model" }] } } }, '
            'agents: { defaults: { model: "mock/mock-model" } },' % port)


class LocalGateway:
    def __init__(self, binary, kit, prefix="sb-bench-", config="", env=None, keep_log=None, seed=None,
                 wrapper=()):
        sys.path.insert(0, os.path.join(kit, "client"))
        from gw_client import Gw  # noqa: E402

        self.Gw = Gw
        self.home = tempfile.mkdtemp(prefix=prefix)
        self.url = "ws://127.0.0.1:%d" % free_port()
        with open(os.path.join(self.home, "config.json5"), "w") as f:
            f.write("{ gateway: { port: %s }, %s }\n" % (self.url.rsplit(":", 1)[1], config))
        self.keep_log = keep_log
        if seed:  # e.g. ["dev", "seed", "--sessions", "10000"], before the gateway starts
            subprocess.run([binary, "--state-dir", self.home] + seed, check=True, stdout=subprocess.DEVNULL)
        self.log = open(os.path.join(self.home, "gateway.log"), "w")
        self.proc = subprocess.Popen(list(wrapper) + [binary, "--state-dir", self.home, "gateway"], stdout=self.log,
                                     stderr=self.log, env=env)
        self.gw = self.connect(deadline=time.monotonic() + 60)

    def connect(self, deadline=None):
        """A new connection to the gateway (waiting for its token when `deadline` is given)."""
        while True:
            try:
                with open(os.path.join(self.home, "gateway-token")) as f:
                    self.token = f.read().strip()
                return self.Gw(self.url, self.token, timeout=120)
            except (OSError, ValueError, ConnectionError):
                if deadline is None or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def turn(self, message, session="agent:main:large"):
        sent = self.gw.call("chat.send", {"sessionKey": session, "message": message})
        done = self.gw.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 120000}, timeout_ms=130000)
        if done.get("status") != "ok":
            raise RuntimeError("run ended %s" % json.dumps(done)[:300])

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.log.close()
        if self.keep_log:
            shutil.copy(os.path.join(self.home, "gateway.log"), self.keep_log)
        shutil.rmtree(self.home, ignore_errors=True)  # large runs leave about 1 GB of transcripts
