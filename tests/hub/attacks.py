"""A hostile student's notebook cell: every attack on another student, tried from their own kernel.

``cell(...)`` is the source of that cell. Run in the student's Lab, it prints one JSON object,
each attack's name mapped to ``"refused: ..."`` or ``"ALLOWED: ..."``.
"""

import json

SOURCE = r'''
import json, os, pwd, signal, subprocess, urllib.error, urllib.parse, urllib.request

COURSE, ASSIGNMENT, VICTIM, INSTRUCTOR = {course!r}, {assignment!r}, {victim!r}, {instructor!r}
EXCHANGE, TOKEN = os.environ["MHA_EXCHANGE_URL"], os.environ["JUPYTERHUB_API_TOKEN"]
HUB = os.environ["JUPYTERHUB_API_URL"]
results = {{}}

def http(url, method="GET", data=None):
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, method=method, headers={{"Authorization": "token " + TOKEN}})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code

def api(name, url, method="GET", data=None):
    status = http(url, method, data)
    results[name] = f"refused: HTTP {{status}}" if status in (401, 403, 404) else f"ALLOWED: HTTP {{status}}"

def denied(name, action):
    try:
        action()
        results[name] = "ALLOWED"
    except PermissionError as error:
        results[name] = f"refused: {{error.strerror}}"

api("read the victim's submission", f"{{EXCHANGE}}/submission/{{COURSE}}/{{ASSIGNMENT}}/{{VICTIM}}")
api("list every submission", f"{{EXCHANGE}}/submissions/{{COURSE}}/{{ASSIGNMENT}}")
api("read the victim's feedback", f"{{EXCHANGE}}/feedback/{{COURSE}}/{{ASSIGNMENT}}/{{VICTIM}}?timestamp=x")
api("write the victim's feedback", f"{{EXCHANGE}}/feedback/{{COURSE}}/{{ASSIGNMENT}}/{{VICTIM}}", "POST",
    {{"timestamp": "x", "files": "[]"}})
api("replace the released assignment", f"{{EXCHANGE}}/assignment/{{COURSE}}/{{ASSIGNMENT}}", "POST", {{"files": "[]"}})
api("the victim's hub account", f"{{HUB}}/users/{{VICTIM}}")
api("a token of the victim's", f"{{HUB}}/users/{{VICTIM}}/tokens", "POST", {{}})

done = subprocess.run(["nbgrader", "submit", ASSIGNMENT, f"--student={{VICTIM}}"], capture_output=True, text=True)
results["submit in the victim's name"] = ("refused: " + done.stderr.strip().splitlines()[-1]) if done.returncode \
    else "ALLOWED"

home = pwd.getpwnam(VICTIM).pw_dir
denied("list the victim's home", lambda: os.listdir(home))
denied("read the victim's notebook", lambda: open(f"{{home}}/{{ASSIGNMENT}}/{{ASSIGNMENT}}.ipynb").read())
denied("the instructor's course", lambda: os.listdir(pwd.getpwnam(INSTRUCTOR).pw_dir + "/course"))

uid = pwd.getpwnam(VICTIM).pw_uid
runtime = os.path.join(os.path.dirname(os.environ["JUPYTER_RUNTIME_DIR"]), str(uid))
denied("list the victim's kernel sockets", lambda: os.listdir(runtime))

# A kernel on TCP has its five channels on ports of 127.0.0.1 that any account may connect to
# (its IOPub publishes every output to whoever subscribes). This cell runs in a kernel when run
# in Lab, and reads how that kernel was started. (ipykernel also binds one TCP port for its
# forked subprocesses' output, a PULL socket: nobody reads from it, and what it takes must carry
# a secret of the kernel's.)
try:
    import ipykernel
    info = json.load(open(ipykernel.get_connection_file()))
    results["a kernel's channels open to every account"] = (
        f"refused: transport {{info['transport']}}" if info["transport"] == "ipc"
        else f"ALLOWED: {{info['transport']}} ports {{[info[k] for k in info if k.endswith('_port')]}}")
except (ImportError, RuntimeError):  # not in a kernel (a terminal's python)
    pass
pids = [p for p in os.listdir("/proc") if p.isdigit() and os.stat(f"/proc/{{p}}").st_uid == uid]
results["the victim's processes seen"] = f"{{len(pids)}}"
for pid in pids[:1]:
    denied("the victim's server's tokens", lambda: open(f"/proc/{{pid}}/environ").read())
    denied("stop the victim's server", lambda: os.kill(int(pid), signal.SIGTERM))
print(json.dumps(results))
'''


def cell(course, assignment, victim, instructor):
    return SOURCE.format(course=course, assignment=assignment, victim=victim, instructor=instructor)


def verdicts(printed):
    """The attacks' results from the cell's printed output."""
    line = next(line for line in printed.splitlines() if line.startswith("{"))
    return json.loads(line)


# Another account listening in on a person's kernels: every TCP port that person's processes listen
# on (/proc/net/tcp names each socket's owner) is subscribed to as a kernel's IOPub would be, until
# this script's stdin closes. Prints what it found and what it received, as one JSON object.
LISTEN = r'''
import json, os, select, sys, zmq
uid = int(sys.argv[1])

def listeners():
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.read().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[7]) == uid:  # LISTEN, owned by uid
                    found.add(int(fields[1].rsplit(":", 1)[1], 16))
    return found

context, poller, subscribed, received = zmq.Context(), zmq.Poller(), {}, []
print("listening", flush=True)
while True:
    for port in listeners() - subscribed.keys():
        socket = context.socket(zmq.SUB)
        socket.setsockopt(zmq.SUBSCRIBE, b"")
        socket.setsockopt(zmq.LINGER, 0)
        socket.connect(f"tcp://127.0.0.1:{port}")
        subscribed[port] = socket
        poller.register(socket, zmq.POLLIN)
    for socket, _ in poller.poll(100):
        received.append(b" ".join(socket.recv_multipart()).decode(errors="replace"))
    if select.select([0], [], [], 0)[0] and not os.read(0, 1):
        break
secrets = [m for m in received if "SECRET of" in m]
print(json.dumps({"ports": sorted(subscribed), "received": len(received), "secrets": len(secrets), "sample": secrets[:1]}))
context.destroy(linger=0)
'''
