#!/usr/bin/env bash
# Print the path of an unpacked CPython source tree, fetching it first when
# it is not cached yet.  The source comes from a Debian source package
# (apt-get source), the one place a CPython tarball is reachable from here.
#
#   scripts/cpython_source.sh [PACKAGE [DEBIAN_VERSION [SUITE]]]
#
# Defaults: python3.13 3.13.5-2+deb13u5 trixie -- CPython 3.13.5, whose
# Include/ and PC/pyconfig.h.in scripts/cross_check.sh compiles against.
# Another version (a 3.13t build, say) is the same call with other arguments.
#
# apt runs on a private configuration: its own sources list (deb-src only,
# the suite plus its -updates and -security), lists and cache under the cache
# directory, so the machine's apt state is neither read nor changed.  The
# archive URIs are the machine's own (the URIs: lines of
# /etc/apt/sources.list.d/*.sources, or the deb lines of sources.list), so a
# mirror or a snapshot configured there is used here too.
#
# Cache: ${FASTCOPY_CACHE:-~/.cache/fastcopy}/cpython-<upstream version>
# (the tree) and .../apt-<suite> (apt's lists and the downloaded files).
set -euo pipefail

pkg=${1:-python3.13}
debver=${2:-3.13.5-2+deb13u5}
suite=${3:-trixie}
upstream=${debver%%-*}
upstream=${upstream#*:}
cache=${FASTCOPY_CACHE:-$HOME/.cache/fastcopy}
dest=$cache/cpython-$upstream
if [ -f "$dest/Include/Python.h" ]; then
    echo "$dest"
    exit 0
fi

aptdir=$cache/apt-$suite
mkdir -p "$aptdir/lists/partial" "$aptdir/archives/partial" "$aptdir/dl" "$aptdir/parts"

# The archive URIs this machine uses (first match of each kind).
uris=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' || true)
if [ -z "$uris" ]; then
    uris=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
           | awk '{for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}' || true)
fi
main=$(echo "$uris" | grep -v -- '-security' | head -1)
security=$(echo "$uris" | grep -- '-security' | head -1)
main=${main:-http://deb.debian.org/debian}
security=${security:-${main%/debian}/debian-security}
# the archive keys: the general keyring plus the suite's own files, when there
keys=$(ls /usr/share/keyrings/debian-archive-keyring.gpg \
          /usr/share/keyrings/debian-archive-"$suite"-*.gpg 2>/dev/null | paste -sd, -)
opt=${keys:+ [signed-by=$keys]}
cat > "$aptdir/sources.list" <<EOF
deb-src$opt $main $suite main
deb-src$opt $main $suite-updates main
deb-src$opt $security $suite-security main
EOF

apt_opts=(-o "Dir::Etc::SourceList=$aptdir/sources.list"
          -o "Dir::Etc::SourceParts=$aptdir/parts"
          -o "Dir::State::Lists=$aptdir/lists"
          -o "Dir::Cache=$aptdir"
          -o "Dir::Cache::archives=$aptdir/archives"
          -o "Debug::NoLocking=1"
          -o "APT::Sandbox::User=root")
echo "cpython_source: fetching $pkg=$debver ($suite) from $main" >&2
apt-get -q "${apt_opts[@]}" update >&2
(cd "$aptdir/dl" && apt-get -q "${apt_opts[@]}" source --download-only "$pkg=$debver" >&2)

dsc=$(ls "$aptdir/dl/${pkg}_${debver#*:}.dsc")
tmp=$(mktemp -d "$cache/unpack.XXXXXX")
# The upstream tarball alone: Debian's patches are build-system and path
# changes; Include/ and PC/ are CPython's own.
orig=$(ls "$aptdir/dl/${pkg}_${upstream}"*.orig.tar.* | head -1)
tar -xf "$orig" -C "$tmp"
top=$(ls "$tmp" | head -1)
if [ ! -f "$tmp/$top/Include/Python.h" ]; then
    echo "cpython_source: $orig has no Include/Python.h (from $dsc)" >&2
    exit 1
fi
rm -rf "$dest"
mv "$tmp/$top" "$dest"
rmdir "$tmp"
echo "$dest"
