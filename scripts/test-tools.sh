#!/usr/bin/env bash
# The programs the export tests drive, from Debian's packages.
#
#   scripts/test-tools.sh install   install what is missing of: chromium and a Japanese font; the
#                                   ZIP readers (Info-ZIP unzip, bsdtar, 7-Zip, a JDK for Java's
#                                   ZipFile and ZipInputStream)
#   scripts/test-tools.sh install-bench   install what the photo and export benchmarks need: ImageMagick
#                                   (their JPEGs) and jq
#   scripts/test-tools.sh path      print the browser the tests use ($CHROMIUM, else chromium on PATH)
#
# The tests open an export's index.html in headless Chromium, offline, to check that the book
# renders with its photos. The book names no web font and uses the system's, so without a CJK
# font Japanese text comes out as boxes in the screenshot: fonts-noto-cjk gives the machine one.
# Every export is opened by each ZIP reader (Tests/DiaryServerTests/Zip/ZipReaders.swift):
# people open exports with all of them, and a streaming reader needs what the others do not.
set -euo pipefail

log() { echo "test-tools.sh: $*" >&2; }

# Installs Debian packages "$@", through sudo when not root. The package lists are refreshed
# only when the install fails on them, so a machine with fresh lists does not wait for apt-get update.
apt_install() {
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    local install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@")
    if ! $sudo "${install[@]}" >&2; then
        log "install failed; updating the package lists and trying again"
        $sudo apt-get update -qq >&2
        $sudo "${install[@]}" >&2
    fi
}

browser() {
    if [ -n "${CHROMIUM:-}" ]; then [ -x "$CHROMIUM" ] && echo "$CHROMIUM"
    else command -v chromium
    fi
}

install() {
    local missing=()
    browser >/dev/null || missing+=(chromium)
    # fc-list comes with fontconfig, which chromium depends on; before chromium is there, no fonts either.
    if ! command -v fc-list >/dev/null || [ -z "$(fc-list :lang=ja family 2>/dev/null)" ]; then
        missing+=(fonts-noto-cjk)
    fi
    command -v unzip >/dev/null || missing+=(unzip)
    command -v bsdtar >/dev/null || missing+=(libarchive-tools)
    command -v 7zz >/dev/null || missing+=(7zip)
    command -v javac >/dev/null || missing+=(default-jdk-headless)
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    apt_install "${missing[@]}"
    browser >/dev/null || { log "chromium is still not on PATH"; exit 1; }
}

install_bench() {
    local missing=()
    # /usr/bin/convert, not whatever `convert` is on PATH: some machines put a stand-in first.
    [ -x /usr/bin/convert ] || missing+=(imagemagick)
    command -v jq >/dev/null || missing+=(jq)
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    apt_install "${missing[@]}"
}

case "${1:-}" in
    install) install ;;
    install-bench) install_bench ;;
    path) browser ;;
    *) echo "usage: $0 install|install-bench|path" >&2; exit 2 ;;
esac
