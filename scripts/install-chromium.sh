#!/usr/bin/env bash
# Installs Debian's Chromium for the Web Explorer's browser tests
# (internal/web). Debian's security archive keeps only its newest Chromium
# build and replaces it at every security update, so a pinned build stops
# installing within weeks. What the tests depend on is the DevTools protocol
# that chromedp speaks, which every Chromium from CHROMIUM_MIN_MAJOR on has:
# so this takes the distribution's current build and checks its major
# version after install. Idempotent: nothing is installed when a Chromium of
# at least that major version is already there. It prints the version the
# tests will run against.
set -euo pipefail

# The oldest major version the tests were run against (chromedp v0.23's
# protocol, headless=new, Page.captureScreenshot with clip).
CHROMIUM_MIN_MAJOR=120

installed() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }
major() { local v=${1%%.*}; v=${v#*:}; echo "${v:-0}"; }

version=$(installed chromium)
if [ -z "$version" ] || [ "$(major "$version")" -lt "$CHROMIUM_MIN_MAJOR" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-chromium: installing chromium needs root (apt-get)" >&2
    exit 1
  fi
  echo "install-chromium: installing Debian's current chromium" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
  version=$(installed chromium)
fi
if [ -z "$version" ] || [ "$(major "$version")" -lt "$CHROMIUM_MIN_MAJOR" ]; then
  echo "install-chromium: chromium ${version:-(none)} is older than major $CHROMIUM_MIN_MAJOR, which the browser tests need" >&2
  apt-cache policy chromium >&2
  exit 1
fi
echo "install-chromium: browser tests run against chromium $version" >&2
