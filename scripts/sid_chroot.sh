#!/usr/bin/env bash
# CPython 3.14 and 3.15 from Debian unstable (sid), in a chroot.
#
#   scripts/sid_chroot.sh                    # make the chroot if needed; print its path
#   scripts/sid_chroot.sh run 3.14 CMD...    # run CMD in this checkout, inside the chroot,
#                                            # with python3.14 first on PATH as `python`
#
# Why a chroot: Debian unstable ships python3.14 (3.14.x) and python3.15 (3.15.x) with their -dev,
# -venv and -testsuite packages (test/test_copy.py), but their binaries need a newer glibc than this
# machine's, and Debian's source pools answer 404 for them, so they can be neither run here nor
# built from source (hence no free-threaded 3.14t/3.15t either).
#
# The chroot: `debootstrap --variant=minbase sid` with the machine's own archive URI (read from the
# apt configuration, as scripts/cpython_source.sh does), about 3 minutes, cached at
# ${FASTCOPY_CACHE:-~/.cache/fastcopy}/sid-chroot and made again only when its marker file is
# missing (an interrupted debootstrap leaves none).  pip inside reaches the package index through
# the host's resolv.conf, CA bundle and pip configuration, copied in at every `run`.
#
# `run` works in a private mount namespace (unshare): /proc, /dev and this checkout (at /work/src,
# and the cwd) are bind-mounted there, and the mounts vanish with the command, however it ends.
# Each Python gets its own venv inside the chroot (/opt/venv-3.14, /opt/venv-3.15, made on first
# use with --system-site-packages off) so that pip never touches Debian's own site-packages:
# `run 3.14 ...` puts that venv's bin first on PATH.  Builds in the checkout name their .so by ABI
# tag (cpython-314-x86_64-linux-gnu), so they sit beside the host's own.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${FASTCOPY_CACHE:-$HOME/.cache/fastcopy}
root=$cache/sid-chroot
marker=$root/.fastcopy-ready
pkgs=python3.14-dev,python3.15-dev,python3.14-venv,python3.15-venv,libpython3.14-testsuite
pkgs=$pkgs,libpython3.15-testsuite,gcc,libc6-dev,ca-certificates,valgrind

make_chroot() {
    command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }
    local uris main
    uris=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' || true)
    if [ -z "$uris" ]; then
        uris=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
               | awk '{for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}' || true)
    fi
    main=$(echo "$uris" | grep -v -- '-security' | head -1)
    main=${main:-http://deb.debian.org/debian}
    rm -rf "$root"
    mkdir -p "$root"
    local start; start=$(date +%s)
    echo "sid_chroot: debootstrap sid from $main into $root" >&2
    debootstrap --variant=minbase --include="$pkgs" sid "$root" "$main" >&2
    touch "$marker"
    echo "sid_chroot: made in $(( $(date +%s) - start ))s" >&2
}

[ -f "$marker" ] || make_chroot

if [ "${1:-}" != run ]; then
    echo "$root"
    exit 0
fi
shift
ver=${1:?usage: sid_chroot.sh run 3.14|3.15 CMD...}
shift
[ -x "$root/usr/bin/python$ver" ] || { echo "sid_chroot: no python$ver in $root" >&2; exit 2; }

# the network settings pip needs, fresh at every run
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
mkdir -p "$root/etc/ssl/certs"
[ -f /etc/ssl/certs/ca-certificates.crt ] \
    && cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
[ -f /etc/pip.conf ] && cp -L /etc/pip.conf "$root/etc/pip.conf"
mkdir -p "$root/proc" "$root/dev" "$root/work/src"

inner='set -e
venv=/opt/venv-$FC_VER
if [ ! -x "$venv/bin/python" ]; then
    "python$FC_VER" -m venv "$venv" >&2
fi
export PATH="$venv/bin:$PATH" HOME=/root
cd /work/src
exec "$@"'
# shellcheck disable=SC2016
FC_VER=$ver exec unshare --mount --propagation private -- sh -c '
    set -e
    root=$1; src=$2; shift 2
    mount --rbind /proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount --bind "$src" "$root/work/src"
    exec chroot "$root" /usr/bin/env -i FC_VER="$FC_VER" PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin TERM=dumb LANG=C.UTF-8 \
        ${FASTCOPY_WERROR:+FASTCOPY_WERROR=$FASTCOPY_WERROR} ${CI:+CI=$CI} \
        /bin/sh -c "$0" sh "$@"
' "$inner" "$root" "$here" "$@"
