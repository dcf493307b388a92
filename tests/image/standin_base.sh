#!/usr/bin/env bash
# A stand-in for python:3.11-slim where no image registry is reachable (docs/deployment.md,
# "Building where no registry answers"): Debian bookworm's own Python 3.11 in a minimal root
# file system, imported as an image. Built once per machine: an image of that name is reused.
#
#   tests/image/standin_base.sh [IMAGE]      (default a2a-gateway-test/python-standin:3.11-bookworm)
#
# It trusts the CA certificates this host adds to Debian's (/usr/local/share/ca-certificates),
# so pip inside a build passes a TLS-intercepting proxy: an image built on it is for tests on
# this machine only, never to publish.
set -euo pipefail
image=${1:-a2a-gateway-test/python-standin:3.11-bookworm}
docker=${DOCKER:-docker}
if [ -n "$($docker images -q "$image")" ]; then echo "stand-in base: $image (cached)"; exit 0; fi
command -v debootstrap >/dev/null || { echo "debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }
rootfs=$(mktemp -d /tmp/a2a-standin-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
# python3-venv: the Dockerfile builds a virtualenv (the official image has venv built in).
debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,python-is-python3,ca-certificates \
  bookworm "$rootfs" http://deb.debian.org/debian >/dev/null
# Debian marks its Python as externally managed (PEP 668); the official image does not.
rm -f "$rootfs"/usr/lib/python3*/EXTERNALLY-MANAGED
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
  chroot "$rootfs" update-ca-certificates >/dev/null
fi
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
tar -C "$rootfs" -c . | $docker import \
  --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' - "$image" >/dev/null
echo "stand-in base: $image (built)"
