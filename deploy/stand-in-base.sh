#!/bin/sh
# A stand-in for python:3.11-slim-bookworm made from Debian's own packages (no container
# registry needed), loaded into podman under that name so that deploy/Dockerfile builds
# unchanged: `make image` runs this, then `podman build --pull=never`.
#
# Debian's python3 (3.11 in bookworm) refuses `pip install` into the system (PEP 668) and has
# no `python` command; the official image's python lives in /usr/local with pip. So the stand-in
# makes /usr/local a virtual environment of Debian's python3: /usr/local/bin/python, python3
# and pip come first on PATH and install into /usr/local/lib/python3.11/site-packages, as in
# the official image. Debian's system python stays untouched (its EXTERNALLY-MANAGED kept).
#
# Where this machine reaches PyPI through a proxy of its own CA (the CAs in
# /usr/local/share/ca-certificates), the stand-in trusts them too and its pip uses the system's
# bundle (/usr/local/pip.conf, the venv's own pip configuration): the image built on it then
# holds them as well. An image built for a real class starts from the real python image.
#
# Usage: deploy/stand-in-base.sh [TAG]   (as root; needs mmdebstrap and podman)
set -eu
TAG=${1:-docker.io/library/python:3.11-slim-bookworm}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

mmdebstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    --customize-hook='mkdir -p "$1"/usr/local/share/ca-certificates' \
    --customize-hook='for ca in /usr/local/share/ca-certificates/*.crt; do [ -e "$ca" ] && cp "$ca" "$1"/usr/local/share/ca-certificates/; done; true' \
    --customize-hook='chroot "$1" update-ca-certificates' \
    --customize-hook='chroot "$1" python3 -m venv /usr/local' \
    --customize-hook='printf "[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n" > "$1"/usr/local/pip.conf' \
    --customize-hook='chroot "$1" /usr/local/bin/python -m pip --version' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    bookworm "$OUT/base.tar"

podman import \
    --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' \
    --change 'LABEL org.opencontainers.image.description="stand-in for python:3.11-slim-bookworm: Debian bookworm minbase, python3 with /usr/local a venv (deploy/stand-in-base.sh)"' \
    "$OUT/base.tar" "$TAG"
