"""The hub's proxy: PyPI's pure-Python ``configurable-http-proxy`` (0.4.0), with room for a class.

Four changes to the package's forwarding, read in its 0.4.0 ``handlers.py``, ``configproxy.py``
and ``cli.py`` (pinned in hub/requirements.txt and pyproject's ``hub`` extra):

- it forwards every request through one tornado ``AsyncHTTPClient``, whose default allows 10
  requests in flight and queues the rest for at most 20 s ("Timeout in request queue", a 503):
  a dozen students signing in at once filled the queue (the hub benchmark at N = 40). Here the
  client allows MAX_CLIENTS at once;
- it buffers each response whole before sending any of it, so the spawn page's progress stream
  (server-sent events) showed nothing until the server was up. :class:`StreamingProxyHandler`
  sends the headers and each chunk as they arrive;
- with no ``--proxy-timeout`` a forwarded request inherits tornado's 20 s request timeout, which
  cuts a progress stream, a long Validate or a Formgrader request, and a websocket's handshake: a
  kernel's channels, when the server is busy (1 of 20 students running level 2 at once on 2 cores
  lost their kernel's connection, a 599, in the hub benchmark). Here a request and a handshake may
  take as long as they need once connected (connecting still times out, after CONNECT_TIMEOUT s).
- it looks the incoming ``X-Forwarded-*`` headers up in a case-sensitive copy under lower-case
  names, so it never finds them: behind a TLS proxy (nginx, Caddy) the hub received
  ``X-Forwarded-Proto: ,http`` instead of ``https,http`` and took itself for plain HTTP (the LMS
  sign-in's redirect URL and cookies, docs/lms.md). Here each hop is appended to what came in.

The package has no hook for its handler: :func:`main` puts the subclass where ``PythonProxy``
looks it up (``configproxy.ProxyHandler``), then runs the package's own command line.
"""

from tornado import httputil
from tornado.httpclient import AsyncHTTPClient

MAX_CLIENTS = 1000
CONNECT_TIMEOUT = 20  # seconds
HOP_BY_HOP = {"content-length", "transfer-encoding", "content-encoding", "connection"}  # the package's own list


def streaming_handler():
    """The package's ProxyHandler with responses streamed (a function: the package is imported late)."""
    from configurable_http_proxy.handlers import ProxyHandler

    class StreamingProxyHandler(ProxyHandler):
        def _get_proxy_request(self, url):
            # The one place (0.4.0) where both a forwarded request (call_proxy) and a websocket's
            # handshake (start_ws_client) get their HTTPRequest: no public hook sets its timeouts.
            request = super()._get_proxy_request(url)
            if self.proxy.x_forward:
                _forwarded_headers(request, self.request.headers)
            request.connect_timeout = CONNECT_TIMEOUT
            request.request_timeout = self.proxy.proxy_timeout or 0  # 0: no limit once connected
            return request

        async def call_proxy(self, path=None):
            url = await self.get_target_url(path)
            if url is None:
                return
            request = self._get_proxy_request(url)
            response = _Relay(self)
            request.header_callback, request.streaming_callback = response.header_line, response.chunk
            try:
                result = await AsyncHTTPClient().fetch(request, raise_error=False)
            except Exception as error:
                result, failure = None, error
            else:
                failure = result.error if result.code == 599 else None
            if failure is not None and not response.started:
                await self.handle_proxy_error(503, failure)
                return
            response.start()
            self.finish()

    return StreamingProxyHandler


def _forwarded_headers(request, incoming):
    """``X-Forwarded-For``, ``-Port`` and ``-Proto``: what came in, then this hop (the package's own
    value, after its stray leading comma); ``X-Forwarded-Host``: what came in, else the Host. The
    package's headers are a plain dict holding both spellings of each name: they are rebuilt."""
    given = request.headers.get_all() if hasattr(request.headers, "get_all") else request.headers.items()
    given = list(given)
    own = {name.lower(): value for name, value in given if name.startswith("x-forwarded-")}  # the package's
    headers = httputil.HTTPHeaders()
    for name, value in given:
        if not name.lower().startswith("x-forwarded-"):
            headers.add(name, value)
    for key in ("For", "Port", "Proto"):
        hop = own.get(f"x-forwarded-{key.lower()}", "").rsplit(",", 1)[-1]
        came = incoming.get(f"X-Forwarded-{key}")
        headers[f"X-Forwarded-{key}"] = f"{came},{hop}" if came else hop
    headers["X-Forwarded-Host"] = incoming.get("X-Forwarded-Host") or incoming.get("Host") or ""
    request.headers = headers


class _Relay:
    """The target's response, relayed to the client as it comes: its status and headers at the
    first chunk (or at the end, for a response without a body), then every chunk flushed."""

    def __init__(self, handler):
        self.handler = handler
        self.code, self.headers = 502, httputil.HTTPHeaders()
        self.started = False

    def header_line(self, line):
        if line.startswith("HTTP/"):  # a status line: a new response (after a 100 Continue, say)
            self.code = int(line.split()[1])
            self.headers = httputil.HTTPHeaders()
        elif line.strip():
            self.headers.parse_line(line)

    def start(self):
        if self.started:
            return
        self.started = True
        handler = self.handler
        handler.set_status(self.code)
        existing = {name.lower() for name in handler._headers}  # the proxy's own (Server, Content-Type, Date)
        for name, value in self.headers.get_all():
            if name.lower() in HOP_BY_HOP:
                continue
            if name.lower() in existing:
                handler.set_header(name, value)
                existing.discard(name.lower())
            else:
                handler.add_header(name, value)

    def chunk(self, data):
        self.start()
        if self.handler.request.connection.stream.closed():
            return  # the client went away: the rest is dropped, as the package drops it
        self.handler.write(data)
        self.handler.flush().add_done_callback(_ignore_closed)


def _ignore_closed(future):
    if not future.cancelled():
        future.exception()  # retrieved: a client that left mid-stream is not an error of the proxy


def main():
    from configurable_http_proxy import configproxy
    from configurable_http_proxy.cli import main as proxy

    AsyncHTTPClient.configure(None, max_clients=MAX_CLIENTS)
    configproxy.ProxyHandler = streaming_handler()
    proxy()


if __name__ == "__main__":
    main()
