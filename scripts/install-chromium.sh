#!/usr/bin/env bash
# Installs Debian's Chromium at a pinned version for the Web Explorer's
# browser tests (internal/web). Idempotent: nothing happens when that
# version is installed. When Debian's security archive has moved on (it
# keeps only its newest build), the install fails and names the version
# to pin instead: `apt-cache policy chromium`.
set -euo pipefail

CHROMIUM_VERSION=156.0.8078.114-1~deb12u1

installed() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }

if [ "$(installed chromium)" = "$CHROMIUM_VERSION" ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-chromium: installing chromium $CHROMIUM_VERSION needs root (apt-get)" >&2
  exit 1
fi
echo "install-chromium: chromium $CHROMIUM_VERSION" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if ! apt-get install -y -qq --no-install-recommends \
    "chromium=$CHROMIUM_VERSION" "chromium-common=$CHROMIUM_VERSION" fonts-dejavu-core >/dev/null; then
  echo "install-chromium: chromium $CHROMIUM_VERSION is not available; available:" >&2
  apt-cache policy chromium >&2
  echo "install-chromium: update CHROMIUM_VERSION in scripts/install-chromium.sh" >&2
  exit 1
fi
