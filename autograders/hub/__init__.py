"""Hosting a class on one server: JupyterHub, the ngshare exchange, the roster's accounts."""
