"""Every Jupyter app of the hub's environment (this is its ``sys.prefix/etc/jupyter``):
kernels speak over Unix sockets in their user's runtime folder, not TCP ports on 127.0.0.1
that every account can reach. ``ConnectionFileMixin`` is the class of every kernel manager,
client and console app (JupyterLab's and Voila's kernels, ``nbgrader validate`` and
``autograde``, ``jupyter console``, ``run``, ``execute``, ``nbconvert --execute``). Kernels
started from Python without configuration get the same default from ``mha_workbook_ipc``."""

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
c.ConnectionFileMixin.transport = "ipc"
