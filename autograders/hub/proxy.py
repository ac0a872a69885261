"""The hub's proxy: PyPI's pure-Python ``configurable-http-proxy`` (0.4.0), with room for a class.

It forwards every HTTP request through one tornado ``AsyncHTTPClient``, whose default allows
10 requests in flight and queues the rest for at most 20 s ("Timeout in request queue", a
503). It also buffers each response whole, so a spawning student's progress stream holds its
slot until the server is up: a dozen students signing in at once filled the queue and the hub
refused the others (the hub benchmark at N = 40). Here the client allows MAX_CLIENTS at once;
everything else is the package's own command line (read in configurable-http-proxy 0.4.0's
``handlers.py`` and ``cli.py``).
"""

from tornado.httpclient import AsyncHTTPClient

MAX_CLIENTS = 1000


def main():
    from configurable_http_proxy.cli import main as proxy

    AsyncHTTPClient.configure(None, max_clients=MAX_CLIENTS)
    proxy()


if __name__ == "__main__":
    main()
