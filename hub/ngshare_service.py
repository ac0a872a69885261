"""The exchange's service: ngshare, started by JupyterHub, with the class's limits.

Runs in ngshare's own environment (ngshare 0.6 needs SQLAlchemy 1.4), so it imports
nothing of the workbook. Beside ngshare's own options it takes ``--limit BYTES``:

- a submission (or feedback) whose files hold more than BYTES is refused with a message
  naming its size and the limit, before anything is stored;
- requests larger than that (base64 and form encoding included) are cut off by the HTTP
  server itself, so a huge upload cannot fill the service's memory;
- the service listens on the loopback only (ngshare listens on every interface for
  Kubernetes; here the proxy and the students' servers are on this machine).
"""

import json
import sys

from tornado.httpserver import HTTPServer


def decoded_size(files_json):
    """Bytes held by ngshare's JSON list of base64 files, without decoding them."""
    total = 0
    for entry in json.loads(files_json):
        content = entry.get("content", "").replace("\n", "")
        total += len(content) * 3 // 4 - content[-2:].count("=")
    return total


def with_limit(limit):
    """Limit ngshare's uploads to ``limit`` bytes and its server to the loopback; returns the service module."""
    from ngshare import ngshare as service

    unpack = service.MyHelpers.json_files_unpack

    def json_files_unpack(self, json_str, target):
        if json_str is not None:
            try:
                size = decoded_size(json_str)
            except (ValueError, TypeError, AttributeError):
                size = 0  # ngshare's own checks answer malformed input
            if size > limit:
                self.json_error(413, f"Submission refused: it holds {size / 2**20:.1f} MiB, "
                                     f"the limit is {limit / 2**20:.0f} MiB")
        return unpack(self, json_str, target)

    service.MyHelpers.json_files_unpack = json_files_unpack

    class LimitedServer(HTTPServer):
        def initialize(self, *args, **kwargs):
            # base64 (4/3) and percent-encoding of its '+' and '/' (at most 3x): 2x plus 1 MiB is ample
            kwargs.update(max_body_size=2 * limit + 2**20, max_buffer_size=2 * limit + 2**20)
            super().initialize(*args, **kwargs)

        def listen(self, port, address="", **kwargs):
            super().listen(port, "127.0.0.1", **kwargs)

    service.HTTPServer = LimitedServer
    return service


def main(argv):
    argv = list(argv)
    limit = 64 * 2**20
    if "--limit" in argv:
        at = argv.index("--limit")
        limit = int(argv[at + 1])
        del argv[at:at + 2]
    with_limit(limit).main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
