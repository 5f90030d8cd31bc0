#!/bin/sh
# Regenerate the Autotools build (configure, Makefile.in).
set -e
cd "$(dirname "$0")"
mkdir -p m4 config
autoreconf --force --install --verbose
