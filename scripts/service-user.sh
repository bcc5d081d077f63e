# shellcheck shell=bash
# Sourced by scripts/postgres.sh and scripts/pgbouncer.sh: Debian packages and the
# unprivileged user that runs the project's PostgreSQL and PgBouncer, both of which refuse
# to run as root.
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
