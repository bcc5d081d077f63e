# shellcheck shell=bash
# Sourced by scripts/postgres.sh and scripts/pgbouncer.sh: Debian packages, the
# unprivileged user that runs the project's PostgreSQL and PgBouncer, both of which refuse
# to run as root, and the ports they listen on.
service_user=diary-postgres

# Installs Debian packages "$@", through sudo when not root.
apt_install() {
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >&2
}

# Runs "$@" as the service user under root, else as the caller.
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$service_user" -- "$@"
    else
        "$@"
    fi
}

# Under root, creates the service user if missing; a no-op otherwise.
ensure_service_user() {
    [ "$(id -u)" -eq 0 ] || return 0
    id "$service_user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$service_user"
}

# Prints the first port from $1 to $2 that is free on 127.0.0.1 and not among "${@:3}".
free_port_between() {
    python3 - "$@" <<'PY'
import socket, sys
first, last, taken = int(sys.argv[1]), int(sys.argv[2]), set(sys.argv[3:])
for port in range(first, last + 1):
    if str(port) in taken:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    sys.exit(0)
sys.exit(f"no free port between {first} and {last}")
PY
}
