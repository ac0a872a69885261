"""A class on one server: N students at once on a real hub (``mha-workbook hub up``).

The students are simulated, not browsers (40 browsers do not fit 2 cores): each is an
asyncio task that speaks what JupyterLab speaks, the hub's REST API, its Jupyter server's
REST API and the kernel websocket (jupyter_server's JSON protocol; a frame with buffers,
such as a widget's PNG, is its binary form). Each student:

1. gets a token of their own (POST /hub/api/users/<name>/tokens, as ``course-admin``);
2. spawn: POST /hub/api/users/<name>/server, until the hub says ready and their server
   answers through the proxy;
3. opens level 2: GET of its contents (the practice edition with every answer filled in,
   copied into each home before the run) and POST /api/sessions (a kernel), until the
   kernel's kernel_info_reply ("kernel");
4. Run All: every code cell's execute_request sent at once, in order (as Lab queues them),
   until each one's execute_reply and its IOPub "idle" (its displays come after);
5. moves a slider MOVES times: the first score of Problem 2.3's softmax playground, a
   ``comm_msg`` ``{"method": "update", "state": {"value": v}, "buffer_paths": []}`` as the
   browser sends it (ipywidgets' protocol 2, packages/schema/messages.md), each until the
   playground's Image sends its new PNG (a comm_msg "update" with buffer path ["value"],
   the child of that message).

A kernel connection that fails or closes is opened again with the same session, as JupyterLab does
(the server keeps its messages meanwhile); each row counts those reconnects.

The students go in step (a barrier between spawn, open + Run All and the slider): the
hardest moment of a lesson, everyone told "Run All" at once. One student alone first, three
times (a server started anew each time); the median of the three is the reference Run All
(a round of N fails at p95 > 3x its time, or slider p95 > 400 ms).
Memory: each student's processes (their server and its kernel) summed by uid, sampled every
second, the peak kept (RSS; PSS at the end beside it). The hub's own CPU: CPU seconds of
the hub, the proxy and the services over the round, per second of wall time.

    python -m benchmarks hub                   # N = 5, 10, 20, 40; writes deploy/capacity.json
    BENCH_HUB_N=5,10 python -m benchmarks hub  # other sizes (capacity.json untouched)
    BENCH_HUB_KEEP=1 ...                       # keep the hub's state and logs (/tmp/mha-hub-bench-*)

Needs root: it brings up a hub of its own (environments in /opt/mha-workbook-bench, kept;
state in /tmp) with accounts ``mhab...``, all removed at the end, also on failure.
"""

import asyncio
import contextlib
import datetime
import json
import math
import os
import shutil
import signal
import socket
import struct
import tempfile
import threading
import time
import traceback
import uuid
from pathlib import Path

import nbformat
import numpy as np
import psutil
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from autograders.common.inputs import InputError, read_json
from autograders.editions.editions import SOURCE, practice_text
from autograders.hub import accounts, hub
from autograders.hub.settings import HubSettings

ROOT = Path(__file__).resolve().parents[1]
PREFIX, PEOPLE, INSTRUCTOR = "/opt/mha-workbook-bench", "mhab", "mhabteach"
SIZES, MOVES, SLIDER_MS, RUN_ALL_FACTOR = (5, 10, 20, 40), 5, 400.0, 3.0
RETRIES = 7  # a lost kernel connection is opened again, as JupyterLab does, waits doubling from 1 s
LONE_ROUNDS = 3  # a lone student runs level 2 this many times; their median Run All is the reference
NOTEBOOK = "level2_application.ipynb"
TIMEOUT = 600  # seconds: the longest any one step may take


def load():
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def pct(values, q):
    return float(np.percentile(values, q)) if values else float("nan")


def free_ports():
    """(p, e): p, p+1, p+2 free (proxy, hub API, proxy API), and e for the exchange."""
    for _ in range(50):
        with socket.socket() as a, socket.socket() as b:
            a.bind(("127.0.0.1", 0)), b.bind(("127.0.0.1", 0))
            p, e = a.getsockname()[1], b.getsockname()[1]
        if p < 65000 and e not in (p, p + 1, p + 2) and not any(map(hub.port_taken, (p, p + 1, p + 2))):
            return p, e
    raise RuntimeError("no three free ports in a row")


def answered_level2():
    """Level 2's practice edition with the source's answers in its solution cells and every prediction
    entered (right), so that the figures and the softmax playground they lock open, as for a student."""
    from autograders.checks.predictions import PREDICTIONS, TAG

    nb = nbformat.reads(practice_text(SOURCE / NOTEBOOK), as_version=4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(str(SOURCE / NOTEBOOK), 4).cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for cell in nb.cells:
        cell.source = answers.get(cell.metadata.get("nbgrader", {}).get("grade_id"), cell.source)
        if TAG in cell.metadata.get("tags", ()):
            name = cell.source.split("=", 1)[0].strip()
            cell.source = f"{name} = {PREDICTIONS[name].right!r}"
    return nb


def gone():
    """Leave out a process that ended meanwhile (or a pid file not there)."""
    return contextlib.suppress(psutil.Error, OSError, ValueError)


def user_processes(uids):
    for p in psutil.process_iter(["uids", "cmdline"]):
        if p.info["uids"] and p.info["uids"].real in uids:
            yield p


def remove_people():
    """Every mhab account: its processes (by pid), the account and its home."""
    for name in sorted(n for n in accounts.members() if n.startswith(PEOPLE)):
        uid = accounts.pwd.getpwnam(name).pw_uid
        for p in user_processes({uid}):
            with gone():
                p.kill()
        psutil.wait_procs(list(user_processes({uid})), timeout=5)
        accounts.remove_account(name)


class Memory(threading.Thread):
    """Each uid's peak RSS (server, kernel) in MiB, sampled every second until stopped."""

    def __init__(self, uids):
        super().__init__(daemon=True)
        self.uids, self.peak, self.done = uids, {u: (0.0, 0.0) for u in uids}, threading.Event()

    def run(self):
        while not self.done.wait(1.0):
            now = {u: [0.0, 0.0] for u in self.uids}
            for p in user_processes(set(self.uids)):
                with gone():
                    kernel = "ipykernel" in " ".join(p.info["cmdline"] or [])
                    now[p.info["uids"].real][kernel] += p.memory_info().rss / 2**20
            for u, (server, kernel) in now.items():
                if server + kernel > sum(self.peak[u]):
                    self.peak[u] = (server, kernel)


def cpu_seconds(processes):
    total = 0.0
    for p in processes:
        with gone():
            t = p.cpu_times()
            total += t.user + t.system
    return total


class Class:
    """The hub, and the REST calls a student's browser makes."""

    def __init__(self, settings):
        self.settings, self.base = settings, f"http://127.0.0.1:{settings.port}"
        self.admin = settings.path("secrets", "course_admin_token").read_text().strip()
        self.http = AsyncHTTPClient(max_clients=500)

    async def call(self, method, path, body=None, token=None, ok=(200, 201, 202, 204)):
        request = HTTPRequest(self.base + path, method=method, request_timeout=TIMEOUT,
                              headers={"Authorization": f"token {token or self.admin}"},
                              body=None if body is None and method == "GET" else json.dumps(body or {}),
                              allow_nonstandard_methods=True)
        response = await self.http.fetch(request, raise_error=False)
        if response.code not in ok:
            raise RuntimeError(f"{method} {path}: {response.code} {response.body[:300]!r}")
        return json.loads(response.body) if response.body else {}

    def hub_processes(self):
        """The hub and its root-owned children (the services), and the proxy."""
        top = [psutil.Process(hub.running_pid(self.settings)),
               psutil.Process(int(self.settings.path("proxy.pid").read_text()))]
        found = {p.pid: p for t in top for p in [t, *t.children(recursive=True)] if p.uids().real == 0}
        return list(found.values())


class Student:
    def __init__(self, school, name, cells):
        self.school, self.name, self.cells = school, name, cells
        self.session, self.states, self.roots, self.slider = uuid.uuid4().hex, {}, [], []
        self.reconnects = 0

    async def spawn(self):
        s, user = self.school, f"/hub/api/users/{self.name}"
        self.token = (await s.call("POST", f"{user}/tokens", {"note": "bench"}))["token"]
        start = time.monotonic()
        await s.call("POST", f"{user}/server")
        while not (server := (await s.call("GET", user)).get("servers", {}).get("", {})).get("ready"):
            if not server.get("pending"):
                raise RuntimeError(f"{self.name}: the spawn failed (the hub gave up: its start_timeout)")
            await self.later(start, "spawn")
        while (await s.http.fetch(self.url("/api/status"), raise_error=False)).code != 200:
            await self.later(start, "the server through the proxy")
        self.spawn_s = time.monotonic() - start

    async def later(self, start, what):
        if time.monotonic() - start > TIMEOUT:
            raise TimeoutError(f"{self.name}: {what} took over {TIMEOUT} s")
        await asyncio.sleep(0.25)

    def url(self, path, scheme="http"):
        return HTTPRequest(f"{scheme}://127.0.0.1:{self.school.settings.port}/user/{self.name}{path}",
                           headers={"Authorization": f"token {self.token}"}, request_timeout=TIMEOUT)

    async def open_and_run_all(self):
        start = time.monotonic()
        api = f"/user/{self.name}/api"
        await self.school.call("GET", f"{api}/contents/{NOTEBOOK}?content=1", token=self.token)
        session = await self.school.call("POST", f"{api}/sessions", {"path": NOTEBOOK, "type": "notebook",
                                         "name": NOTEBOOK, "kernel": {"name": "python3"}}, token=self.token)
        self.channels = f"/api/kernels/{session['kernel']['id']}/channels?session_id={self.session}"
        await self.connect()
        while True:  # a kernel just started may miss the first request: ask until it answers
            asked = self.send("kernel_info_request", {})
            try:
                await asyncio.wait_for(self.until(lambda m: m["parent_header"].get("msg_id") == asked
                                                  and m["msg_type"] == "kernel_info_reply"), 2)
                break
            except asyncio.TimeoutError:
                await self.later(start, "the kernel")
        self.kernel_s, start = time.monotonic() - start, time.monotonic()
        pending = {self.send("execute_request", {"code": code, "silent": False, "store_history": True,
                                                 "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
                   for code in self.cells}
        # A cell is done when its reply (shell) and its "idle" (IOPub) have both come: the two channels
        # are not ordered, and a cell's last display (the playground) may follow its reply.
        self.errors, replied, idle = 0, set(), set()
        while not pending <= replied & idle:
            m = await self.until(lambda m: m["msg_type"] == "execute_reply" or (
                m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"))
            (replied if m["msg_type"] == "execute_reply" else idle).add(m["parent_header"].get("msg_id"))
            self.errors += m["msg_type"] == "execute_reply" and m["content"]["status"] != "ok"
        self.run_all_s = time.monotonic() - start

    async def move_slider(self):
        slider, image = self.playground()
        for k in range(MOVES):
            start = time.monotonic()
            sent = self.send("comm_msg", {"comm_id": slider, "data": {"method": "update",
                             "state": {"value": 1.5 + 0.5 * k}, "buffer_paths": []}})
            await self.until(lambda m: m["msg_type"] == "comm_msg" and m["parent_header"].get("msg_id") == sent
                             and m["content"]["comm_id"] == image and ["value"] in m["content"]["data"].get("buffer_paths", []))
            self.slider.append(1000 * (time.monotonic() - start))
            await asyncio.sleep(0.3)  # a person's hand
        self.ws.close()

    def playground(self):
        """(slider, image) comm ids: the first FloatSlider "s1" and the Image under one displayed widget."""
        def below(model):
            state = self.states.get(model, {})
            children = [c.removeprefix("IPY_MODEL_") for c in state.get("children", [])]
            return [(model, state)] + [d for c in children for d in below(c)]

        for root in self.roots:
            found = below(root)
            sliders = [m for m, s in found if s.get("_model_name") == "FloatSliderModel"
                       and s.get("description", "").startswith("s1")]
            images = [m for m, s in found if s.get("_model_name") == "ImageModel"]
            if sliders and images:
                return sliders[0], images[0]
        raise RuntimeError(f"{self.name}: level 2 displayed no softmax playground")

    async def connect(self, again=False):
        """Open the kernel's channels; a connection that fails or closes is opened again, as JupyterLab's
        kernel connection does (RETRIES times, waits doubling from 1 s). The server keeps the session's
        messages meanwhile and sends them on the new connection (same session id)."""
        for attempt in range(RETRIES + 1):
            if attempt:
                await asyncio.sleep(2 ** (attempt - 1))  # 1, 2, 4 ... s
            if again or attempt:
                self.reconnects += 1
            try:
                self.ws = await websocket_connect(self.url(self.channels, "ws"), max_message_size=2**26)
                return
            except (HTTPClientError, OSError) as error:
                failure = error
        raise RuntimeError(f"{self.name}: the kernel's channels did not open after {RETRIES} retries: {failure}")

    def send(self, msg_type, content):
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": msg_type, "username": self.name, "session": self.session,
                  "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "version": "5.3"}
        self.ws.write_message(json.dumps({"header": header, "parent_header": {}, "metadata": {}, "content": content,
                                          "channel": "shell", "buffers": []}))
        return msg_id

    async def until(self, wanted):
        """The next message for which ``wanted`` holds; every message is noted on the way."""
        while True:
            frame = await self.ws.read_message()
            if frame is None:  # the connection was lost
                await self.connect(again=True)
                continue
            if isinstance(frame, bytes):  # [n, offsets...] (big-endian uint32), the JSON, the buffers
                n = struct.unpack("!I", frame[:4])[0]
                offsets = struct.unpack(f"!{n}I", frame[4:4 * (n + 1)])
                frame = frame[offsets[0]:offsets[1] if n > 1 else None]
            m = json.loads(frame)
            if m["msg_type"] == "comm_open" and m["content"].get("target_name") == "jupyter.widget":
                self.states[m["content"]["comm_id"]] = m["content"]["data"]["state"]
            if m["msg_type"] == "comm_msg" and m["content"]["data"].get("method") == "update":  # e.g. children
                self.states.get(m["content"]["comm_id"], {}).update(m["content"]["data"].get("state", {}))
            if m["msg_type"] in ("display_data", "execute_result"):
                view = m["content"]["data"].get("application/vnd.jupyter.widget-view+json")
                self.roots += [view["model_id"]] if view else []
            if wanted(m):
                return m


async def phase(students, step):
    """The students for whom ``step`` went through (a failure is printed and counted)."""
    results = await asyncio.gather(*(getattr(s, step)() for s in students), return_exceptions=True)
    for s, r in zip(students, results):
        if isinstance(r, BaseException):
            where = [f"line {f.lineno}" for f in traceback.extract_tb(r.__traceback__) if f.filename == __file__][-1:]
            print(f"   {step}: {s.name}: {type(r).__name__} ({', '.join(where)}): {r}", flush=True)
    return [s for s, r in zip(students, results) if not isinstance(r, BaseException)]


async def round_of(school, names, cells):
    students = everyone = [Student(school, n, cells) for n in names]
    uids = {accounts.pwd.getpwnam(n).pw_uid: n for n in names}
    memory, hub_procs = Memory(list(uids)), school.hub_processes()
    memory.start()
    loads, hub_cpu, wall = [load()], cpu_seconds(hub_procs), time.monotonic()
    cpu = {}
    for step in ("spawn", "open_and_run_all", "move_slider"):
        before, started = cpu_seconds(user_processes(set(uids))), len(students)
        students = await phase(students, step)
        cpu[step] = (cpu_seconds(user_processes(set(uids))) - before) / max(1, started)
        loads.append(load())
    hub_cores = (cpu_seconds(hub_procs) - hub_cpu) / (time.monotonic() - wall)
    pss = {}
    for p in user_processes(set(uids)):
        with gone():
            pss[p.info["uids"].real] = pss.get(p.info["uids"].real, 0) + p.memory_full_info().pss / 2**20
    memory.done.set(), memory.join()
    hub_mib = sum(p.memory_info().rss for p in hub_procs) / 2**20
    for n in names:
        await school.call("DELETE", f"/hub/api/users/{n}/server")
    for n in names:
        start = time.monotonic()
        while (await school.call("GET", f"/hub/api/users/{n}")).get("servers"):
            await everyone[0].later(start, "a server's stop")
    for p in user_processes(set(uids)):  # nothing of this round may count in the next
        with gone():
            p.kill()
    peaks = [sum(v) for v in memory.peak.values() if sum(v)]  # a student whose spawn failed has none
    return {
        "n": len(names), "failed": len(names) - len(students), **{k: [getattr(s, k) for s in everyone if hasattr(s, k)] for k in ("spawn_s", "kernel_s", "run_all_s")},
        "slider_ms": [t for s in everyone for t in s.slider], "errors": sum(getattr(s, "errors", 0) for s in everyone), "memory_mib": peaks,
        "reconnects": sum(s.reconnects for s in everyone),
        "server_mib": [v[0] for v in memory.peak.values() if v[0]], "kernel_mib": [v[1] for v in memory.peak.values() if v[1]],
        "pss_mib": list(pss.values()), "hub_cores": hub_cores, "hub_mib": hub_mib, "cpu_s": cpu, "load": loads,
    }


def summary(r, single):
    p = {k: (pct(r[k], 50), pct(r[k], 95)) for k in ("spawn_s", "kernel_s", "run_all_s", "slider_ms")}
    return {"n": r["n"], **{f"{k}_p50": round(v[0], 3) for k, v in p.items()},
            **{f"{k}_p95": round(v[1], 3) for k, v in p.items()},
            "run_all_p95_x_single": round(p["run_all_s"][1] / single, 2),
            "memory_mib_p50": round(pct(r["memory_mib"], 50)), "memory_mib_max": round(max(r["memory_mib"])),
            "server_mib_p50": round(pct(r["server_mib"], 50)), "kernel_mib_p50": round(pct(r["kernel_mib"], 50)),
            "pss_mib_p50": round(pct(r["pss_mib"], 50)), "pss_mib_max": round(max(r["pss_mib"])), "hub_cores": round(r["hub_cores"], 3),
            "hub_mib": round(r["hub_mib"]), "cpu_s_per_student": {k: round(v, 2) for k, v in r["cpu_s"].items()},
            "errors": r["errors"], "reconnects": r["reconnects"], "failed": r["failed"], "load": r["load"]}


def breaking_point(rows):
    """(N where a target is first passed, by linear interpolation of p95/target between the
    last N that met both and the first that did not; or None), and which target."""
    def worst(row):
        return max((row["slider_ms_p95"] / SLIDER_MS, "slider"), (row["run_all_p95_x_single"] / RUN_ALL_FACTOR, "Run All"),
                   (1 + row["failed"] / row["n"] if row["failed"] else 0, "a student's spawn or run"))

    for a, b in zip(rows, rows[1:]):
        (ra, _), (rb, what) = worst(a), worst(b)
        if rb > 1 >= ra:
            return a["n"] + (b["n"] - a["n"]) * (1 - ra) / (rb - ra), what
    return None, None


async def bench(sizes):
    state = Path(tempfile.mkdtemp(prefix="mha-hub-bench-"))
    names = [f"{PEOPLE}{i:02d}" for i in range(1, max(sizes) + 1)]
    roster = state / "roster.csv"
    roster.write_text("id,first_name,last_name,email\n" + "".join(f"{n},S,{n},{n}@example.org\n" for n in names))
    port, exchange = free_ports()
    settings = HubSettings(root=str(state / "hub"), prefix=PREFIX, ip="127.0.0.1", port=port,
                           exchange_port=exchange, instructor=INSTRUCTOR)
    nb = answered_level2()
    cells = [c.source for c in nb.cells if c.cell_type == "code"]
    try:
        remove_people()
        hub.up(settings, roster)
        for n in names:
            accounts.place_file(n, NOTEBOOK, nbformat.writes(nb), settings.venv_of(n) / "bin" / "python")
        school = Class(settings)
        for n in names:
            await school.call("POST", f"/hub/api/users/{n}", ok=(201, 409))
        rows, alone = [], []
        for index, size in enumerate((1,) * LONE_ROUNDS + tuple(sizes)):
            print(f"-- {size} student(s) at once, load average {load()}", flush=True)
            result = await round_of(school, names[:size], cells)
            if index < LONE_ROUNDS:
                alone += result["run_all_s"]
                if index < LONE_ROUNDS - 1:
                    continue
                if not alone:
                    raise RuntimeError("a lone student never finished Run All: no reference")
                single = float(np.median(alone))
                print(f"   a lone student's Run All: {', '.join(f'{t:.2f}' for t in alone)} s; the reference: "
                      f"their median, {single:.2f} s", flush=True)
            row = summary(result, single)
            rows.append(row)
            print(json.dumps(row), flush=True)
        return rows, single
    finally:
        with gone():
            hub.stop(settings)
        for pidfile in ("jupyterhub.pid", "proxy.pid"):
            with gone():
                psutil.Process(int(settings.path(pidfile).read_text())).kill()
        remove_people()
        if os.environ.get("BENCH_HUB_KEEP"):
            print(f"kept the hub's state and logs in {state}", flush=True)
        else:
            shutil.rmtree(state, ignore_errors=True)


def formula(rows, single):
    """(text, figures): students per server of C cores and M GiB, from the rows.

    On one server a student costs their PSS: the pages of the libraries that every student's server
    and kernel map (Python, numpy, matplotlib, JupyterLab) are in memory once, shared among them, and
    PSS counts each student their share; RSS counts them whole in each. The pod's limit on
    Kubernetes (deploy/, ``memory_per_student_mib``) stays the RSS: a pod may be alone on its node."""
    cores = os.cpu_count()
    per_student = max(r.get("pss_mib_max", r["memory_mib_max"]) for r in rows)
    rss = max(r["memory_mib_max"] for r in rows)
    overhead = max(r["hub_mib"] for r in rows)
    n_break, what = breaking_point(rows)
    if n_break is None:
        per_core, bound = max(r["n"] for r in rows) / cores, "at least (no N measured broke a target)"
    else:
        per_core, bound = n_break / cores, f"({what} p95 passed its target at N = {n_break:.1f} here)"
    text = (f"students = min(N_mem, N_cpu); N_mem = (M x 1024 - {overhead:.0f}) / {per_student:.0f} "
            f"(M in GiB; {overhead:.0f} MiB the hub, proxy and services; {per_student:.0f} MiB the largest "
            f"student's server + kernel by PSS, {rss:.0f} by RSS); N_cpu = {per_core:.1f} x C {bound}")
    return text, {"per_student_mib": rss, "per_student_pss_mib": per_student, "hub_overhead_mib": overhead,
                  "per_core": round(per_core, 2), "break_n": None if n_break is None else round(n_break, 1),
                  "break_target": what}


CAPACITY = ROOT / "deploy" / "capacity.json"
CAPACITY_NUMBERS = ("memory_per_student_mib", "cpu_per_student", "memory_limit_factor", "cpu_limit_factor")
CAPACITY_TODO = "restore it with `git checkout deploy/capacity.json` (the chart's resources follow its numbers)"


def read_capacity(path=CAPACITY):
    """deploy/capacity.json, or an InputError naming what is wrong with it."""
    capacity = read_json(path, CAPACITY_TODO)
    if not isinstance(capacity, dict):
        raise InputError(path, "not a JSON object", CAPACITY_TODO)
    missing = [key for key in CAPACITY_NUMBERS if key not in capacity]
    if missing:
        raise InputError(path, f"lacks {', '.join(missing)}", CAPACITY_TODO)
    wrong = [key for key in CAPACITY_NUMBERS
             if isinstance(capacity[key], bool) or not isinstance(capacity[key], (int, float)) or capacity[key] <= 0]
    if wrong:
        raise InputError(path, f"{', '.join(wrong)} must be positive numbers", CAPACITY_TODO)
    return capacity


def write_capacity(rows, single, text, figures):
    path = CAPACITY
    capacity = read_capacity(path)
    capacity["memory_per_student_mib"] = int(math.ceil(figures["per_student_mib"]))
    capacity["cpu_per_student"] = math.ceil(100 / figures["per_core"]) / 100
    capacity["measured"] = {"date": datetime.date.today().isoformat(), "cores": os.cpu_count(),
                            "single_run_all_s": single, "formula": text, **figures, "rows": rows}
    path.write_text(json.dumps(capacity, indent=2) + "\n")
    print(f"wrote {path.relative_to(ROOT)}: memory_per_student_mib {capacity['memory_per_student_mib']}, "
          f"cpu_per_student {capacity['cpu_per_student']}")


def table(rows):
    """The rows as the README's Markdown table."""
    lines = ["| N | spawn p50 / p95 (s) | kernel p50 / p95 (s) | Run All p50 / p95 (s), p95 / single | "
             "slider → image p50 / p95 (ms) | MiB per student p50 / max (server + kernel, RSS; PSS p50 / max) | "
             "hub CPU (cores) | failed (kernel reconnects) | load average (start .. end) |", "|" + " --- |" * 9]
    for r in rows:
        lines.append(f"| {r['n']} | {r['spawn_s_p50']:.1f} / {r['spawn_s_p95']:.1f} | {r['kernel_s_p50']:.1f} / "
                     f"{r['kernel_s_p95']:.1f} | {r['run_all_s_p50']:.1f} / {r['run_all_s_p95']:.1f}, "
                     f"{r['run_all_p95_x_single']:.2f}x | {r['slider_ms_p50']:.0f} / {r['slider_ms_p95']:.0f} | "
                     f"{r['memory_mib_p50']} / {r['memory_mib_max']} ({r['server_mib_p50']} + {r['kernel_mib_p50']}; "
                     f"{r['pss_mib_p50']} / {r.get('pss_mib_max', '?')}) | {r['hub_cores']:.2f} | {r['failed']} ({r.get('reconnects', 0)}) | {r['load'][0]} .. {r['load'][-1]} |")
    return "\n".join(lines)


def main(sizes=None):
    if os.geteuid() != 0:
        raise SystemExit("the hub benchmark needs root: it creates system users (mhab...) and runs a JupyterHub")
    chosen = sizes or tuple(int(n) for n in os.environ.get("BENCH_HUB_N", "").split(",") if n.strip()) or SIZES
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))  # clean up on kill
    if set(chosen) == set(SIZES):
        read_capacity()  # a broken file is named now, not after the measurements it would lose
    rows, single = asyncio.run(bench(sorted(chosen)))
    print(table(rows))
    text, figures = formula(rows, single)
    print(text)
    if set(chosen) == set(SIZES):
        write_capacity(rows, single, text, figures)


if __name__ == "__main__":
    import sys

    main(tuple(int(n) for n in sys.argv[1:]))
