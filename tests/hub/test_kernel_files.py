"""A student's kernel started by hand, with its connection file in /tmp: nobody else takes it over.

Bob opens a terminal in his own Lab (through the hub, as his browser would: the server's terminal API
and its websocket) and starts a TCP kernel from the hub's environment with its connection file in
``/tmp``, each way one does: a file he writes himself with the ports and key he chose, the same file
made readable to all on purpose, a file the kernel writes itself. Mallory then does what an attacker
does: reads the file, signs an ``execute_request`` with its key and sends it to the kernel's shell
port, asking it to write a file into Bob's home. She cannot read the file, and a kernel never uses a
file others could read; the control (the key handed to her by root) shows that the attack works
when the key leaks.
"""

import asyncio
import json
import os
import pwd
import secrets
import socket
import time
from pathlib import Path

import pytest

from autograders.hub.hubconfig import umask_of

from ..browser.servers import run_async
from .conftest import INSTRUCTOR, PEOPLE, ok
from .test_exchange import hub_class_home
from .test_lifecycle import start

BOB, MALLORY = PEOPLE + "bob", PEOPLE + "mallory"

# Mallory's attack: read the connection file, or be given its contents on stdin; then run code in the
# kernel. She reads the JSON herself (a client of the hub's environment would refuse a shared file).
TAKE_OVER = r'''
import json, os, sys
from jupyter_client import BlockingKernelClient
path, marker = sys.argv[1], sys.argv[2]
try:
    info = json.load(open(path))
except PermissionError as error:
    given = sys.stdin.read()
    if not given:
        print(json.dumps({"read": f"refused: {error.strerror}", "ran": False}))
        sys.exit(0)
    info = json.loads(given)
read = "read"
client = BlockingKernelClient()
client.load_connection_info(info)
client.start_channels()
try:
    client.execute_interactive(f"_ = open({marker!r}, 'w').write('mallory was here')", timeout=15,
                               output_hook=lambda message: None)
    ran = True
except Exception as error:  # TimeoutError: no kernel answered (not there, or a bad signature)
    ran = f"no answer: {type(error).__name__}"
client.stop_channels()
print(json.dumps({"read": read, "ran": ran}))
'''


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def hand_made_file(key):
    """A connection file as one writes it by hand: every port and the key chosen."""
    names = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
    return json.dumps({**dict(zip(names, free_ports(5))), "ip": "127.0.0.1", "key": key, "transport": "tcp",
                       "signature_scheme": "hmac-sha256", "kernel_name": "python3"})


async def _terminal(base, name, token, lines, wait_for, timeout):
    """Type ``lines`` into a new terminal of ``name``'s Lab; its output once ``wait_for`` appears."""
    from tornado.httpclient import AsyncHTTPClient, HTTPRequest
    from tornado.websocket import websocket_connect

    headers = {"Authorization": f"token {token}"}
    created = await AsyncHTTPClient().fetch(HTTPRequest(f"{base}/user/{name}/api/terminals", method="POST",
                                                        body="{}", headers=headers))
    terminal = json.loads(created.body)["name"]
    ws_url = f"{base.replace('http', 'ws', 1)}/user/{name}/terminals/websocket/{terminal}"
    connection = await websocket_connect(HTTPRequest(ws_url, headers=headers))
    output, deadline = "", time.monotonic() + timeout
    for line in lines:
        await connection.write_message(json.dumps(["stdin", line + "\r"]))
    while wait_for not in output and time.monotonic() < deadline:
        try:
            message = await asyncio.wait_for(connection.read_message(), timeout=max(0.1, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            break
        if message is None:
            break
        kind, *rest = json.loads(message)
        if kind == "stdout":
            output += rest[0]
    connection.close()
    return output


def in_lab_terminal(hub_class, name, lines, wait_for, timeout=90):
    base = f"http://127.0.0.1:{hub_class.settings.port}"
    return run_async(_terminal(base, name, hub_class.token(name), lines, wait_for, timeout))


def attack(hub_class, path, given=""):
    marker = str(hub_class_home(BOB) / f"owned-{secrets.token_hex(4)}")
    done = ok(hub_class.run(MALLORY, str(hub_class.settings.student_venv / "bin" / "python"), "-c", TAKE_OVER, path, marker,
                            input=given))
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["owned"] = (hub_class_home(BOB) / marker.rsplit("/", 1)[1]).exists()
    return result


@pytest.fixture(scope="module")
def bob_in_lab(hub_class):
    start(hub_class, BOB)
    yield hub_class
    hub_class.run(BOB, "pkill", "-u", BOB, "-f", "ipykernel_launcher")
    for left in Path("/tmp").glob(f"{BOB}-*.json*"):
        left.unlink()


def start_kernel(hub_class, path, prepare=()):
    """In Bob's Lab terminal: ``prepare`` (shell lines), then a TCP kernel on ``path``, in the background.
    The terminal's output, once the kernel has said it started, or failed."""
    python = hub_class.settings.student_venv / "bin" / "python"
    token = secrets.token_hex(3)  # the end's marker, computed by the shell: the terminal echoes what is typed
    return in_lab_terminal(hub_class, BOB, [
        *prepare, f"stat -c 'mode %a' {path}; umask",
        f"({python} -m ipykernel_launcher --transport=tcp -f {path} > {path}.log 2>&1 &) ; sleep 6; "
        f"cat {path}.log; echo KERNEL-$((6*7))-{token}"], f"KERNEL-42-{token}")


def test_the_lab_of_a_student_runs_with_umask_0077_and_the_instructors_with_0022(bob_in_lab):
    output = in_lab_terminal(bob_in_lab, BOB, ["echo UMASK-$(umask)"], "UMASK-0")
    assert "UMASK-0077" in output, output[-500:]
    assert umask_of(bob_in_lab.settings, BOB) == 0o077 and umask_of(bob_in_lab.settings, INSTRUCTOR) == 0o022


def test_a_connection_file_bob_writes_in_tmp_is_his_alone(bob_in_lab):
    path = f"/tmp/{BOB}-kernel-{secrets.token_hex(3)}.json"
    key = secrets.token_hex(16)
    output = start_kernel(bob_in_lab, path, [f"echo '{hand_made_file(key)}' > {path}"])
    assert "mode 600" in output, output[-1500:]
    assert pwd.getpwuid(os.stat(path).st_uid).pw_name == BOB
    result = attack(bob_in_lab, path)
    assert result == {"read": "refused: Permission denied", "ran": False, "owned": False}, result
    # The control: the same attack, handed the key by root, runs code as Bob (the kernel is up).
    control = attack(bob_in_lab, path, given=open(path).read())
    assert control["ran"] is True and control["owned"], (control, output[-1500:])


@pytest.mark.parametrize("opened", ["chmod 644", "umask 022", "chmod 640"])
def test_a_kernel_never_uses_a_connection_file_others_may_read(bob_in_lab, opened):
    """Bob opens his file up (by chmod, or writing it with the old umask): the kernel refuses it and says
    why; Mallory reads the key, but no kernel listens to it."""
    path = f"/tmp/{BOB}-open-{secrets.token_hex(3)}.json"
    write = f"echo '{hand_made_file(secrets.token_hex(16))}' > {path}"
    prepare = [f"(umask 022; {write})"] if opened == "umask 022" else [write, f"{opened} {path}"]
    output = start_kernel(bob_in_lab, path, prepare)
    assert "can be read by other accounts" in output and "Not used" in output, output[-1500:]
    if opened != "chmod 640":  # 0640: only Bob's group (his own) may read; Mallory may not either
        result = attack(bob_in_lab, path)
        assert result["read"] == "read" and result["ran"] != True and not result["owned"], result  # noqa: E712


def test_a_connection_file_the_kernel_writes_in_tmp_is_its_owners_alone(bob_in_lab):
    path = f"/tmp/{BOB}-own-{secrets.token_hex(3)}.json"
    output = start_kernel(bob_in_lab, path)
    assert os.stat(path).st_mode & 0o777 == 0o600, output[-1500:]
    result = attack(bob_in_lab, path)
    assert result == {"read": "refused: Permission denied", "ran": False, "owned": False}, result
