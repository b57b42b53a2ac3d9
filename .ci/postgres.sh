#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on 127.0.0.1:5432 and prints a URL for the
# store suite. This project's machines run one (user postgres, trust auth, database
# test); where none answers, PostgreSQL is installed from Debian's packages, started,
# and given a password and the database `test`. The URL is the same either way, so a
# server an earlier run installed (password auth) is reached as well as a trust one.
set -euo pipefail

answers() { (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; }

if ! answers; then
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  version=$(ls /etc/postgresql | sort -V | tail -1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
  for _ in $(seq 1 60); do answers && break; sleep 0.5; done
fi
# The same URL whichever server answers: trust auth ignores the password, and a server
# this script installed (on this run or an earlier one) was given it. Where the local
# superuser can be reached (a server on this machine), the password and the database
# are made sure of; elsewhere the server is taken as this project's machines set it up.
if id postgres >/dev/null 2>&1 && su postgres -c "psql -q -tc 'SELECT 1'" >/dev/null 2>&1; then
  su postgres -c "psql -q -c \"ALTER USER postgres PASSWORD 'postgres'\"" >&2
  su postgres -c "psql -q -tc \"SELECT 1 FROM pg_database WHERE datname = 'test'\" | grep -q 1 || createdb test" >&2
fi
echo "postgres://postgres:postgres@127.0.0.1:5432/test"
