#!/usr/bin/env bash
# A throwaway PostgreSQL server for the store's tests: a fresh cluster in a folder of its own, reachable only
# through a unix socket inside that folder (no TCP port, so it never collides with another server or another run).
#
#   .ci/postgres.sh start DIR   installs Debian's postgresql package if no server binaries are found (as root),
#                               creates and starts a cluster in DIR (which must be empty or absent), creates the
#                               database windowfit_test and prints its URL on stdout, e.g.
#                               export WINDOWFIT_TEST_POSTGRES="$(.ci/postgres.sh start /tmp/wf-pg)"
#   .ci/postgres.sh stop DIR    stops that cluster and removes DIR (safe to call twice, or after a failed start)
#
# Durability is switched off (fsync, synchronous_commit, full_page_writes): the cluster lives for one test run.
set -euo pipefail

log() { printf 'postgres.sh: %s\n' "$*" >&2; }

# The newest installed server's bin folder (Debian keeps each major version in /usr/lib/postgresql/N/bin).
server_bin() {
    local dir
    dir=$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin 2>/dev/null | sort -V | tail -n 1)
    if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then
        printf '%s\n' "$dir"
    elif command -v initdb >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
    fi
}

install_server() {
    if [ "$(id -u)" -ne 0 ]; then
        log "no PostgreSQL server found; install it (Debian: sudo apt-get install postgresql) and run again"
        exit 1
    fi
    log "installing Debian's postgresql package"
    # The package's post-install script would start the default cluster it creates; a policy-rc.d that denies
    # every start keeps the machine free of a server nobody asked for (the standard way in containers).
    local policy=/usr/sbin/policy-rc.d added_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && added_policy=1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
    if [ "$added_policy" -eq 1 ]; then rm -f "$policy"; fi
}

# Runs a server binary as the cluster's owner: PostgreSQL refuses to run as root, so root uses the postgres user
# that the Debian package creates, from / (the caller's folder, say a clone under /root, may be closed to it).
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        (cd / && runuser -u postgres -- "$@")
    else
        "$@"
    fi
}

start() {
    local dir=$1 bin port=5432
    bin=$(server_bin)
    if [ -z "$bin" ]; then
        install_server
        bin=$(server_bin)
    fi
    [ -n "$bin" ] || { log "the postgresql package installed no initdb"; exit 1; }
    if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
        log "$dir is not empty; give an empty or new folder"
        exit 1
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; fi
    chmod 700 "$dir"
    as_owner "$bin/initdb" --pgdata="$dir/data" --username=postgres --auth=trust --encoding=UTF8 --no-locale \
        --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    as_owner "$bin/pg_ctl" --pgdata="$dir/data" --log="$dir/server.log" --wait --silent \
        --options="-c listen_addresses='' -k $dir -p $port -c fsync=off -c synchronous_commit=off \
-c full_page_writes=off -c max_connections=60" start >&2 || { cat "$dir/server.log" >&2; exit 1; }
    as_owner "$bin/createdb" --host="$dir" --port="$port" --username=postgres windowfit_test
    printf 'postgresql://postgres@/windowfit_test?host=%s&port=%s\n' "$dir" "$port"
}

stop() {
    local dir=$1 bin
    [ -d "$dir" ] || return 0
    bin=$(server_bin)
    if [ -n "$bin" ] && [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$bin/pg_ctl" --pgdata="$dir/data" --mode=immediate --wait --silent stop >&2 || true
    fi
    rm -rf "$dir"
}

case "${1:-}" in
    start) [ $# -eq 2 ] || { log "usage: $0 start DIR"; exit 2; }; start "$2" ;;
    stop) [ $# -eq 2 ] || { log "usage: $0 stop DIR"; exit 2; }; stop "$2" ;;
    *) log "usage: $0 start DIR | stop DIR"; exit 2 ;;
esac
