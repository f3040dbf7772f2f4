#!/usr/bin/env bash
# Make a Debian bookworm + python3 base image without any image registry.
#
# Why: air-gapped hosts (and our CI) cannot pull python:3.11-slim. debootstrap builds the
# same kind of rootfs from Debian's package mirror (which such hosts usually mirror), and
# `docker import` turns it into an image that the Dockerfiles take as BASE_IMAGE.
# bookworm's python3 is 3.11, the Python the locks are compiled for.
#
# Usage: scripts/make-base-image.sh [IMAGE_TAG]   (default ecocompute-base:bookworm)
# Env:   DEBIAN_MIRROR (default http://deb.debian.org/debian)
#        ECOCOMPUTE_CACHE (default /var/cache/ecocompute-ci): the rootfs tarball is kept
#        there, so a later run (or a docker storage reset) re-imports it in seconds.
#        FORCE=1 rebuilds even when the image or the tarball exists.
set -euo pipefail

tag="${1:-ecocompute-base:bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
cache="${ECOCOMPUTE_CACHE:-/var/cache/ecocompute-ci}"
tarball="$cache/bookworm-python3-rootfs.tar"

if [[ "${FORCE:-0}" != 1 ]] && docker image inspect "$tag" >/dev/null 2>&1; then
  echo "base image $tag exists; FORCE=1 to rebuild"
  exit 0
fi

mkdir -p "$cache"
if [[ "${FORCE:-0}" == 1 || ! -s "$tarball" ]]; then
  command -v debootstrap >/dev/null || { echo "debootstrap not installed (apt-get install debootstrap)" >&2; exit 1; }
  rootfs="$(mktemp -d "$cache/rootfs.XXXXXX")"
  trap 'rm -rf "$rootfs"' EXIT
  # minbase: essential packages + apt only. python3-venv brings ensurepip, so the
  # Dockerfiles can make a venv (bookworm's system Python is externally managed, PEP 668).
  log="$cache/debootstrap.log"
  echo "debootstrap bookworm (minbase + python3) from $mirror, log in $log"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$rootfs" "$mirror" >"$log" 2>&1 || { tail -n 30 "$log" >&2; exit 1; }
  # Nothing in the images needs apt's lists, caches or docs; they are ~100 MB.
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin \
         "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/usr/share/doc/* \
         "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
  tar -C "$rootfs" --numeric-owner -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
fi

docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["python3"]' \
  "$tarball" "$tag"
docker image ls "$tag"
