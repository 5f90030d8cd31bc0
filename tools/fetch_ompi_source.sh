#!/bin/sh
# fetch_ompi_source.sh - fetch the Debian/Ubuntu source package of the
# installed Open MPI and extract from it the header directories its devel
# package lacks. configure runs it when Open MPI's coll headers do not
# compile for that reason and no --with-ompi-source is given.
#
#   tools/fetch_ompi_source.sh OPAL_CONFIG_H DESTDIR HDRDIR...
#
# OPAL_CONFIG_H  the installed opal_config.h (its package says which
#                source package and version to fetch)
# DESTDIR        made (must not exist) and filled with VERSION and the *.h
#                of each HDRDIR (paths relative to Open MPI's source top,
#                e.g. opal/mca/threads/pthreads), as in an Open MPI source tree
#
# The package manager's settings are left alone: apt-get runs with a
# sources list, lists directory and cache made in a temporary directory
# (the machine's own sources, classic sources.list lines and deb822
# .sources files, with deb-src added), removed on exit with everything
# downloaded. Needs dpkg-query and apt-get (Debian, Ubuntu), the
# archive's decompressor (xz for Open MPI 5.0.7's) and the network; exit status 0 on success, else 1 with the reason on stderr.
set -eu
me=fetch_ompi_source.sh
die() { echo "$me: $*" >&2; exit 1; }
[ $# -ge 3 ] || die "usage: $me OPAL_CONFIG_H DESTDIR HDRDIR..."
opal_config=$1 dest=$2
shift 2
[ -r "$opal_config" ] || die "no file $opal_config"
[ ! -e "$dest" ] || die "$dest exists"
command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 ||
    die "no dpkg-query/apt-get: not a Debian or Ubuntu system"

# the package that installed opal_config.h (through symlinked directories too)
pkg=""
for f in "$opal_config" "$(readlink -f "$opal_config")"; do
    pkg=$(dpkg-query -S "$f" 2>/dev/null | sed -n '1s/: .*//p' | sed 's/,.*//') || true
    [ -n "$pkg" ] && break
done
[ -n "$pkg" ] || die "no installed package owns $opal_config"
srcinfo=$(dpkg-query -W -f '${source:Package} ${source:Version}' "$pkg") ||
    die "dpkg-query cannot tell the source package of $pkg"
srcpkg=${srcinfo% *} srcver=${srcinfo#* }
[ -n "$srcpkg" ] && [ -n "$srcver" ] || die "no source package for $pkg ($srcinfo)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/braid-ompi-src.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$tmp/sources.list.d" "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/src"
# the machine's sources, each deb line also as deb-src
if [ -r /etc/apt/sources.list ]; then
    sed -n 's/^[[:space:]]*deb[[:space:]]/&/p' /etc/apt/sources.list >"$tmp/sources.list"
    sed -n 's/^[[:space:]]*deb\([[:space:]]\)/deb-src\1/p' /etc/apt/sources.list >>"$tmp/sources.list"
else
    : >"$tmp/sources.list"
fi
for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    case $f in
    *.list)
        { sed -n 's/^[[:space:]]*deb[[:space:]]/&/p' "$f"
          sed -n 's/^[[:space:]]*deb\([[:space:]]\)/deb-src\1/p' "$f"; } >"$tmp/sources.list.d/${f##*/}" ;;
    *.sources)
        # deb822: a stanza whose Types has deb gets deb-src as well
        sed 's/^\([Tt]ypes:.*[[:space:]]deb\)\([[:space:]].*\)\{0,1\}$/\1 deb-src\2/' "$f" |
            sed 's/deb-src\(.*\)deb-src/deb-src\1/' >"$tmp/sources.list.d/${f##*/}" ;;
    esac
done
grep -rqs '^[[:space:]]*deb-src[[:space:]]\|^[Tt]ypes:.*deb-src' "$tmp/sources.list" "$tmp/sources.list.d" ||
    die "no apt sources in /etc/apt/sources.list or /etc/apt/sources.list.d to fetch $srcpkg from"

apt_opts="-o Dir::Etc::SourceList=$tmp/sources.list -o Dir::Etc::SourceParts=$tmp/sources.list.d
 -o Dir::State::Lists=$tmp/lists -o Dir::Cache=$tmp/cache -o Debug::NoLocking=1"
# root: apt would download as _apt, who cannot write into the directory
[ "$(id -u)" -eq 0 ] && apt_opts="$apt_opts -o APT::Sandbox::User=root"
echo "$me: fetching the source of $srcpkg $srcver (the installed $pkg's) with apt-get" >&2
# shellcheck disable=SC2086
apt-get $apt_opts -qq update >"$tmp/apt.log" 2>&1 ||
    { tail -n 5 "$tmp/apt.log" >&2; die "apt-get update failed (no network?)"; }
# (apt-get update succeeds when it could download nothing)
ls "$tmp/lists/"*Sources* >/dev/null 2>&1 ||
    { tail -n 5 "$tmp/apt.log" >&2; die "apt-get update fetched no source index (no network, or no mirror reachable)"; }
# shellcheck disable=SC2086
(cd "$tmp/src" && apt-get $apt_opts -qq source --download-only "$srcpkg=$srcver") >"$tmp/apt.log" 2>&1 ||
    { tail -n 5 "$tmp/apt.log" >&2; die "apt-get source $srcpkg=$srcver failed (is that version still in the archive?)"; }
orig=""
for f in "$tmp/src/${srcpkg}_"*.orig.tar.*; do [ -r "$f" ] && orig=$f; done
[ -n "$orig" ] || die "apt-get source $srcpkg=$srcver brought no .orig.tar archive"
# tar reads a compressed archive through the compressor's own program:
# name the one that is missing (Debian 13's minimal systems lack xz)
case $orig in
*.xz) unz=xz pkgz=xz-utils ;; *.bz2) unz=bzip2 pkgz=bzip2 ;;
*.zst) unz=zstd pkgz=zstd ;; *.gz) unz=gzip pkgz=gzip ;; *) unz="" pkgz="" ;;
esac
[ -z "$unz" ] || command -v "$unz" >/dev/null 2>&1 ||
    die "reading ${orig##*/} needs $unz, which is not installed (Debian/Ubuntu: apt-get install $pkgz)"
top=$(tar -tf "$orig" 2>/dev/null | sed -n '1{s,^\./,,;s,/.*,,;p;}')
[ -n "$top" ] || die "cannot read $orig"
members="$top/VERSION"
for d in "$@"; do members="$members $top/$d/*.h"; done
mkdir -p "$tmp/x"
# shellcheck disable=SC2086
tar -C "$tmp/x" -xf "$orig" --wildcards --no-wildcards-match-slash $members ||
    die "$orig lacks some of: $*"
mkdir -p "$(dirname "$dest")"
mv "$tmp/x/$top" "$dest"
echo "$me: Open MPI $(sed -n 's/^major=//p;s/^minor=//p;s/^release=//p' "$dest/VERSION" | tr '\n' . | sed 's/\.$//') headers from $srcpkg $srcver in $dest" >&2
