#!/usr/bin/env bash
# Stop the single-node SLURM cluster that workflow/cluster/start.sh started and
# remove what it made: cancels jobs, stops slurmd, slurmctld, slurmdbd (and
# munged / mariadb when start.sh started them), drops the accounting database
# and its user, removes slurm.conf, slurmdbd.conf and SLURM's state and logs.
#
#   bash workflow/cluster/stop.sh           # stop and clean up; packages stay
#   bash workflow/cluster/stop.sh --purge   # also purge the packages start.sh installed
#
# Idempotent: running it when nothing is running is fine.
set -uo pipefail

STATE=/var/lib/bfio-slurm
CONF=/etc/slurm
PURGE=0
[ "${1:-}" = "--purge" ] && PURGE=1

log() { echo "[bfio-slurm] $*"; }
[ "$(id -u)" = 0 ] || { echo "[bfio-slurm] error: run as root" >&2; exit 1; }
have_systemd() { [ -d /run/systemd/system ]; }

if [ ! -d "$STATE" ]; then
    log "nothing to stop (no $STATE: start.sh has not run here)"
    exit 0
fi

stop_pidfile() {  # stop_pidfile NAME PIDFILE
    local pid
    [ -f "$2" ] || return 0
    pid=$(cat "$2" 2>/dev/null)
    if [ -n "$pid" ] && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$1" ]; then
        log "stopping $1 ($pid)"
        kill "$pid" 2>/dev/null
        for _ in $(seq 30); do [ -d /proc/"$pid" ] || break; sleep 0.5; done
        [ -d /proc/"$pid" ] && kill -9 "$pid" 2>/dev/null
    fi
    rm -f "$2"
}

# jobs first, so that no slurmstepd outlives its daemon
if command -v scancel >/dev/null && [ -f "$CONF/slurm.conf" ]; then
    scancel --full --quiet --user=root 2>/dev/null || true
fi

if have_systemd; then
    systemctl stop slurmd slurmctld slurmdbd 2>/dev/null
else
    stop_pidfile slurmd /run/slurm/slurmd.pid
    stop_pidfile slurmctld /run/slurm/slurmctld.pid
    stop_pidfile slurmdbd /run/slurm/slurmdbd.pid
fi

# the accounting database and its user
if command -v mysql >/dev/null && mysqladmin ping >/dev/null 2>&1; then
    log "dropping database slurm_acct_db"
    mysql -u root -e "DROP DATABASE IF EXISTS slurm_acct_db; DROP USER IF EXISTS 'slurm'@'localhost';"
fi
if [ -f "$STATE/started_mariadb" ]; then
    log "stopping mariadb"
    if have_systemd; then systemctl stop mariadb; else /etc/init.d/mariadb stop >/dev/null; fi
    rm -f "$STATE/started_mariadb"
fi
if [ -f "$STATE/started_munge" ]; then
    if have_systemd; then systemctl stop munge; else stop_pidfile munged /run/munge/munged.pid; fi
    rm -f "$STATE/started_munge"
fi
if [ -f "$STATE/created_munge_key" ]; then
    rm -f /etc/munge/munge.key "$STATE/created_munge_key"
fi

log "removing configuration, state and logs"
rm -f "$CONF/slurm.conf" "$CONF/slurmdbd.conf"
rm -rf /var/lib/slurm/slurmctld /var/lib/slurm/slurmd
rm -f /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log /var/log/slurm/slurmdbd.log
rm -f "$STATE/started" "$STATE/db_password"

if [ $PURGE = 1 ] && [ -s "$STATE/installed_packages" ]; then
    mapfile -t pkgs < <(sort -u "$STATE/installed_packages")
    log "purging packages: ${pkgs[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${pkgs[@]}" && rm -f "$STATE/installed_packages"
fi
[ -s "$STATE/installed_packages" ] || rm -rf "$STATE"
log "stopped"
