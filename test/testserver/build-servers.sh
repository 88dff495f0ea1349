#!/bin/sh
# build-servers.sh builds the server generations listed in servers.txt from their Debian
# source packages, once, into a cache that later runs reuse, so the tests can run the
# lock command paths and the compatibility rows against real Redis 6.0, Redis 8.6,
# Valkey 8.1 and Valkey 9.1 binaries (testserver.StartGeneration finds them there).
#
# The cache is $RESPIRE_SERVERS_DIR, or respire-servers under $XDG_CACHE_HOME (or
# ~/.cache): <package>-<version>/<binary> for each built generation. A generation
# whose binary is there is skipped. One that cannot be fetched or built gets a
# <package>-<version>.unavailable file saying why, which its tests quote when they
# skip, and the script goes on: the rest of the suite still runs on the installed
# Redis 7, so this script exits 0 unless its own arguments or cache are wrong.
#
# The builds run one at a time, niced, since they share the CPU with everything else
# (about 6 minutes for all four on 2 cores). As root, the deb-src entries they need are
# added once in their own file under /etc/apt/sources.list.d/.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
list="$here/servers.txt"
sources=/etc/apt/sources.list.d/respire-servers-src.sources
if [ -n "${RESPIRE_SERVERS_DIR:-}" ]; then
	cache=$RESPIRE_SERVERS_DIR
elif [ -n "${XDG_CACHE_HOME:-}" ]; then
	cache=$XDG_CACHE_HOME/respire-servers
elif [ -n "${HOME:-}" ]; then
	cache=$HOME/.cache/respire-servers
else
	echo "build-servers: no HOME, XDG_CACHE_HOME or RESPIRE_SERVERS_DIR: not building; the tests of other server generations will skip" >&2
	exit 0
fi

mkdir -p "$cache"

# record writes why a generation is unavailable, for its tests' skip message.
record() { # dir-name package suite reason
	printf 'Debian source package %s from %s: %s\n' "$2" "$3" "$4" >"$cache/$1.unavailable"
	echo "build-servers: $1 unavailable: $4" >&2
}

# missing lists the generations whose binary is not in the cache yet, leaving out
# those recorded as unavailable within the last day (RESPIRE_SERVERS_RETRY=1 tries
# them again at once), so that a machine where one cannot be fetched does not fetch
# and fail again on every run.
missing() {
	grep -v '^[[:space:]]*\(#\|$\)' "$list" | while read -r name pkg suite version bin; do
		[ -x "$cache/$pkg-$version/$bin" ] && continue
		if [ -z "${RESPIRE_SERVERS_RETRY:-}" ] &&
			[ -n "$(find "$cache/$pkg-$version.unavailable" -mmin -1440 2>/dev/null)" ]; then
			continue
		fi
		echo "$name $pkg $suite $version $bin"
	done
}

todo=$(missing)
if [ -z "$todo" ]; then
	exit 0
fi

# Two runs at once (two checkouts, say) build each generation once: the second waits.
if command -v flock >/dev/null 2>&1; then
	exec 9>"$cache/.lock"
	flock 9
	todo=$(missing)
	[ -n "$todo" ] || exit 0
fi

# Every suite of the list, not only the missing ones: the entry is written once for all.
suites=$(grep -v '^[[:space:]]*\(#\|$\)' "$list" | awk '{print $3}' | sort -u | tr '\n' ' ')
if ! command -v apt-get >/dev/null 2>&1; then
	echo "$todo" | while read -r name pkg suite version bin; do
		record "$pkg-$version" "$pkg" "$suite" "apt-get is not available on this machine"
	done
	exit 0
fi
if [ "$(id -u)" = 0 ]; then
	# The source entries use the Debian mirror apt is already configured with.
	mirror=$(sed -n 's|^URIs:[[:space:]]*\([^[:space:]]*/debian\)/*[[:space:]]*$|\1|p' \
		/etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
	if [ -z "$mirror" ] && [ -r /etc/apt/sources.list ]; then
		mirror=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\// && $i ~ /\/debian\/?$/) { sub(/\/$/, "", $i); print $i; exit } }' /etc/apt/sources.list)
	fi
	fresh=yes
	[ -e "$sources" ] && grep -qx "Suites: $suites" "$sources" && fresh=no
	if [ "$fresh" = yes ] && [ -z "$mirror" ]; then
		echo "$todo" | while read -r name pkg suite version bin; do
			record "$pkg-$version" "$pkg" "$suite" "apt has no Debian mirror configured to add its deb-src entry to"
		done
		exit 0
	fi
	if [ "$fresh" = yes ]; then
		keyring=/usr/share/keyrings/debian-archive-keyring.gpg
		cat >"$sources" <<SOURCES
# Written by Respire's test/testserver/build-servers.sh: the source packages of the
# server generations its tests run against.
Types: deb-src
URIs: $mirror
Suites: $suites
Components: main
Signed-By: $keyring
SOURCES
	fi
	echo "build-servers: apt-get update" >&2
	apt-get update -qq >/dev/null 2>&1 || echo "build-servers: apt-get update failed; trying the package lists as they are" >&2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/respire-servers.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

echo "$todo" | while read -r name pkg suite version bin; do
	dir="$pkg-$version"
	src="$work/$dir"
	mkdir -p "$src"
	echo "build-servers: $name: fetching $pkg/$suite" >&2
	# apt-get may fail to fetch the .dsc or the Debian diff while the upstream tarball
	# arrives; the tarball is all the build needs (it carries its own deps/).
	(cd "$src" && apt-get source --download-only -qq "$pkg/$suite" >fetch.log 2>&1) || true
	tarball=$(ls "$src/${pkg}_$version".orig.tar.* "$src/${pkg}_$version"+*.orig.tar.* 2>/dev/null | head -n 1 || true)
	if [ -z "$tarball" ]; then
		found=$(ls "$src" | grep '\.orig\.tar\.' || true)
		if [ -n "$found" ]; then
			record "$dir" "$pkg" "$suite" "it carries $found, not upstream $version (update servers.txt)"
		else
			record "$dir" "$pkg" "$suite" "apt-get source fetched no upstream tarball: $(tail -n 3 "$src/fetch.log" | tr '\n' ' ')"
		fi
		continue
	fi
	mkdir -p "$src/tree"
	if ! tar -xf "$tarball" -C "$src/tree" --strip-components=1; then
		record "$dir" "$pkg" "$suite" "cannot unpack $(basename "$tarball")"
		continue
	fi
	echo "build-servers: $name: building $bin $version (minutes, niced)" >&2
	start=$(date +%s)
	if ! nice -n 10 make -C "$src/tree/src" BUILD_TLS=no USE_SYSTEMD=no MALLOC=libc -j2 "$bin" >"$src/build.log" 2>&1; then
		record "$dir" "$pkg" "$suite" "make failed: $(tail -n 3 "$src/build.log" | tr '\n' ' ')"
		continue
	fi
	# Copied in under a temporary name and renamed, so a reader never sees half a binary.
	mkdir -p "$cache/$dir"
	cp "$src/tree/src/$bin" "$cache/$dir/.$bin.tmp"
	mv "$cache/$dir/.$bin.tmp" "$cache/$dir/$bin"
	rm -f "$cache/$dir.unavailable"
	echo "build-servers: $name: $cache/$dir/$bin built in $(($(date +%s) - start))s" >&2
	rm -rf "$src"
done
