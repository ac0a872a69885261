"""The hub's proxy relays a response as it comes (the spawn page's progress events), keeps the
target's status, headers and cookies, and lets a long request or a slow websocket handshake finish."""

import asyncio

import pytest
from tornado import web, websocket
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from autograders.hub import proxy

pytest.importorskip("configurable_http_proxy", reason="the hub extra (make test installs it)")

FIRST, SECOND = b"data: 50%\n\n", b"data: ready\n\n"


class Events(web.RequestHandler):
    """A progress stream: the first event, then the second only once the client has the first."""

    async def get(self):
        self.set_header("Content-Type", "text/event-stream")
        self.set_cookie("seen", "1")
        self.set_cookie("also", "2")
        self.write(FIRST)
        await self.flush()
        await asyncio.wait_for(self.application.settings["received"].wait(), timeout=20)
        self.write(SECOND)


class Echo(web.RequestHandler):
    """The forwarded headers the target received."""

    def get(self):
        self.write({key: self.request.headers.get(f"X-Forwarded-{key}") for key in ("Proto", "Host", "For")})


class Slow(web.RequestHandler):
    async def get(self):
        await asyncio.sleep(self.application.settings["delay"])
        self.set_status(201)
        self.write("done")


class SlowEcho(websocket.WebSocketHandler):
    """A websocket whose handshake takes ``delay`` s (a busy server opening a kernel's channels)."""

    async def prepare(self):
        await asyncio.sleep(self.application.settings["delay"])

    def on_message(self, message):
        self.write_message(message)


def in_thread(main):
    """``asyncio.run(main())`` in a thread of its own: in a full run Playwright's sync API holds the main
    thread's event loop, and asyncio.run refuses to start another there."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, main()).result()


def listen(app):
    sockets = bind_sockets(0, "127.0.0.1")
    server = HTTPServer(app)
    server.add_sockets(sockets)
    return server, sockets[0].getsockname()[1]


@pytest.fixture(autouse=True)
def streaming(monkeypatch):
    """The proxy as ``main`` runs it: the package's PythonProxy with the streaming handler."""
    from configurable_http_proxy import configproxy

    monkeypatch.setattr(configproxy, "ProxyHandler", proxy.streaming_handler())


@pytest.fixture
def relay():
    from configurable_http_proxy.configproxy import PythonProxy

    async def start(proxy_timeout=None, delay=0.0):
        received = asyncio.Event()
        target, target_port = listen(web.Application([(r"/user/ann/events", Events), (r"/user/ann/slow", Slow), (r"/user/ann/echo", Echo),
                                                      (r"/user/ann/channels", SlowEcho)],
                                                     received=received, delay=delay))
        chp = PythonProxy({"proxy_timeout": proxy_timeout})
        chp.add_route("/user/ann", {"target": f"http://127.0.0.1:{target_port}"})
        front, front_port = listen(chp.proxy_app)
        return received, f"http://127.0.0.1:{front_port}", (target, front)

    return start


def test_events_reach_the_client_before_the_response_ends(relay):
    async def run():
        received, base, servers = await relay()
        chunks, headers = [], []

        def on_chunk(chunk):
            chunks.append(chunk)
            received.set()  # the target sends its second event only now: a buffering proxy never gets it

        request = HTTPRequest(f"{base}/user/ann/events", streaming_callback=on_chunk,
                              header_callback=headers.append, request_timeout=30)
        response = await AsyncHTTPClient(force_instance=True).fetch(request)
        for server in servers:
            server.stop()
        return response, b"".join(chunks), headers

    response, body, headers = in_thread(run)
    assert response.code == 200
    assert body == FIRST + SECOND
    assert response.headers["Content-Type"] == "text/event-stream"
    cookies = sorted(line.split(":", 1)[1].split(";")[0].strip() for line in headers if line.lower().startswith("set-cookie"))
    assert cookies == ["also=2", "seen=1"], "a cookie of the target was lost or merged"


def test_a_request_longer_than_tornados_default_timeout_is_not_cut(relay, monkeypatch):
    """Tornado's default request timeout (20 s) stands in here as 0.5 s: the target answers after 1 s."""
    from tornado import httpclient

    monkeypatch.setitem(httpclient.HTTPRequest._DEFAULTS, "request_timeout", 0.5)

    async def run():
        _, base, servers = await relay(delay=1.0)
        response = await AsyncHTTPClient(force_instance=True).fetch(f"{base}/user/ann/slow", request_timeout=30)
        for server in servers:
            server.stop()
        return response

    response = in_thread(run)
    assert (response.code, response.body) == (201, b"done")


def test_a_websocket_handshake_longer_than_tornados_default_timeout_is_not_cut(relay, monkeypatch):
    """The same for a kernel's channels: the target's handshake takes 1 s, the default stands at 0.5 s."""
    from tornado import httpclient

    monkeypatch.setitem(httpclient.HTTPRequest._DEFAULTS, "request_timeout", 0.5)

    async def run():
        _, base, servers = await relay(delay=1.0)
        request = HTTPRequest(f"{base.replace('http', 'ws')}/user/ann/channels", request_timeout=30)
        connection = await websocket.websocket_connect(request)
        connection.write_message("ping")
        echoed = await connection.read_message()
        connection.close()
        for server in servers:
            server.stop()
        return echoed

    assert in_thread(run) == "ping"


def test_an_unreachable_target_is_a_503(relay):
    from configurable_http_proxy.configproxy import PythonProxy

    async def run():
        chp = PythonProxy({})
        dead = bind_sockets(0, "127.0.0.1")[0]
        port = dead.getsockname()[1]
        dead.close()
        chp.add_route("/user/ann", {"target": f"http://127.0.0.1:{port}"})
        front, front_port = listen(chp.proxy_app)
        response = await AsyncHTTPClient(force_instance=True).fetch(f"http://127.0.0.1:{front_port}/user/ann/x",
                                                                    raise_error=False)
        front.stop()
        return response

    assert in_thread(run).code == 503


def test_what_a_tls_proxy_in_front_forwarded_reaches_the_hub(relay):
    """Behind nginx or Caddy (TLS): the browser's scheme and host come first, then this proxy's hop."""
    import json

    async def run():
        _, base, servers = await relay()
        seen = []
        for headers in ({"X-Forwarded-Proto": "https", "X-Forwarded-Host": "hub.example.edu",
                         "X-Forwarded-For": "203.0.113.7"}, {}):
            response = await AsyncHTTPClient(force_instance=True).fetch(f"{base}/user/ann/echo", headers=headers)
            seen.append(json.loads(response.body))
        for server in servers:
            server.stop()
        return seen

    behind_tls, direct = in_thread(run)
    assert behind_tls == {"Proto": "https,http", "Host": "hub.example.edu", "For": "203.0.113.7,127.0.0.1"}
    assert direct["Proto"] == "http" and direct["For"] == "127.0.0.1" and direct["Host"].startswith("127.0.0.1:")
