"""Every kernel started from the hub's environment speaks over Unix sockets in its user's
runtime folder (``$JUPYTER_RUNTIME_DIR``, 0700), never over TCP ports on 127.0.0.1.

A kernel uses the transport of the ``KernelManager`` that starts it, and jupyter_client's
default is TCP: on a shared machine any account can connect to those ports and subscribe
to the kernel's IOPub (every output of its owner). Jupyter's apps read the environment's
``etc/jupyter/jupyter_config.py`` (``c.ConnectionFileMixin.transport = "ipc"``), but a
kernel started from Python (``nbclient.NotebookClient``, ``jupyter_client.KernelManager``)
reads no configuration at all. ``mha-workbook hub up`` therefore installs this module into
the environment's site-packages with a ``.pth`` line that imports it at every start of
Python there. When ``jupyter_client.connect`` is first imported, it:

- makes ``ipc`` the default transport of ``ConnectionFileMixin`` (hence of every kernel
  manager, client and console app; a transport set by configuration still wins);
- gives a manager that has no connection file one in the runtime folder, so that its
  sockets (``<connection file>-ipc-<n>``) are there too, not in the current folder;
- refuses to load a connection file that another account may read (its key lets whoever reads
  it run code in the kernel): a kernel started by hand with such a file (``ipykernel_launcher
  -f /tmp/k.json``, a file written with a umask of 0022) exits with the reason instead.

It imports nothing until jupyter_client is imported.
"""

import importlib.abc
import importlib.machinery
import os
import sys
import tempfile
import uuid

MODULE = "jupyter_client.connect"
SOCKET_PATH_MAX = 107  # bytes in a Unix socket's path (Linux)


def patch(connect):
    mixin = connect.ConnectionFileMixin
    mixin.class_traits()["transport"].default_value = "ipc"
    mixin._static_immutable_initial_values["transport"] = "ipc"  # classes made later copy these
    write = mixin.write_connection_file

    def write_connection_file(self, **kwargs):
        if self.transport == "ipc" and not self.connection_file:
            self.connection_file = private_connection_file()
            if self.ip == "kernel-ipc":  # computed before the file was named: a path in the current folder
                self.ip = self._ip_default()
        return write(self, **kwargs)

    mixin.write_connection_file = write_connection_file
    load = mixin.load_connection_file

    def load_connection_file(self, connection_file=None):
        refuse_if_shared(connection_file or self.connection_file)
        return load(self, connection_file)

    mixin.load_connection_file = load_connection_file


def refuse_if_shared(path):
    """Raise PermissionError when the connection file ``path`` can be read by its group or others."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, TypeError, ValueError):
        return  # no such file: jupyter_client says so itself
    if mode & 0o077:
        raise PermissionError(f"the connection file {path} can be read by other accounts (mode {mode & 0o777:04o}): "
                              f"whoever reads its key can run code as you. Not used: make it private "
                              f"(chmod 600 {path}) and start again, or let the kernel write its own")


def private_connection_file():
    """A new connection file's path in the user's runtime folder (or a private temporary folder
    when a socket's path there would be longer than a Unix socket's limit)."""
    from jupyter_core.paths import jupyter_runtime_dir

    name = f"kernel-{uuid.uuid4()}"
    folder = jupyter_runtime_dir()
    if len(os.path.join(folder, name + "-ipc-5").encode()) > SOCKET_PATH_MAX:
        folder = tempfile.mkdtemp(prefix="jupyter-")  # 0700
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return os.path.join(folder, name + ".json")


class _Loader(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def install():
    if MODULE in sys.modules:
        patch(sys.modules[MODULE])
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


install()
