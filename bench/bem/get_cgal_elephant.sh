#!/usr/bin/env bash
# Fetches CGAL's elephant (data/meshes/elephant.off, CGAL 5.5) from the Debian package
# libcgal-demo (apt-get download: no installation, no root needed) and writes it to $1
# (default /tmp/elephant.off). Used by bench/bem/elephant_vs_bempp.py.
set -euo pipefail
out=${1:-/tmp/elephant.off}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download libcgal-demo >/dev/null)
dpkg-deb -x "$tmp"/libcgal-demo_*.deb "$tmp/x"
tar -xzf "$tmp/x/usr/share/doc/libcgal-dev/data.tar.gz" -C "$tmp" data/meshes/elephant.off
cp "$tmp/data/meshes/elephant.off" "$out"
echo "written: $out ($(head -2 "$out" | tail -1))"
