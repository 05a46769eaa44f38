#!/usr/bin/env bash
# Install and start a single-node SLURM cluster on this Debian machine (root),
# so the pipeline's SLURM profile can be exercised end to end:
#
#   sudo bash workflow/cluster/start.sh      # idempotent: a second run changes nothing
#   sinfo                                    # PARTITION local*, node <host> idle
#   bash workflow/cluster/stop.sh [--purge]  # stop it and remove what start.sh made
#
# What it sets up (docs/pipeline.md "A local SLURM cluster"):
#   * Debian packages slurm-wlm, slurmctld, slurmd, slurm-client, munge and,
#     for accounting, slurmdbd + mariadb-server (only those missing, recorded
#     so that `stop.sh --purge` removes exactly those);
#   * a munge key (the package's, else a new one);
#   * accounting: a MariaDB database slurm_acct_db and slurmdbd. The SLURM
#     executor plugin asks `sacct` for job states by default (and falls back
#     to it whenever MinJobAge is short); without a database `sacct` fails, so
#     accounting is set up rather than the plugin reconfigured;
#   * /etc/slurm/slurm.conf for this host: its real CPUs and memory (from
#     `slurmd -C`), one partition (default "local", BFIO_SLURM_PARTITION)
#     with no time limit, cons_tres scheduling of cores and memory;
#   * slurmctld and slurmd, then waits until `sinfo` shows the node idle.
#
# Without systemd (containers) the daemons are started directly; with systemd
# through systemctl. State (what was installed/created) is kept in
# /var/lib/bfio-slurm/. Settings (environment): BFIO_SLURM_PARTITION (local),
# BFIO_SLURM_CLUSTER (bfio), BFIO_SLURM_WAIT (seconds to wait for idle, 120).
set -euo pipefail

PARTITION="${BFIO_SLURM_PARTITION:-local}"
CLUSTER="${BFIO_SLURM_CLUSTER:-bfio}"
WAIT="${BFIO_SLURM_WAIT:-120}"
STATE=/var/lib/bfio-slurm
CONF=/etc/slurm
PACKAGES=(munge slurm-client slurmctld slurmd slurm-wlm slurmdbd mariadb-server)
DB_PASS_FILE="$STATE/db_password"

log() { echo "[bfio-slurm] $*"; }
die() { echo "[bfio-slurm] error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (it installs packages and starts daemons)"
command -v apt-get >/dev/null || die "needs a Debian/Ubuntu machine (apt-get)"
mkdir -p "$STATE"

# Package scripts in some containers leave /dev/null a plain root-only file;
# munged and slurmd (not root) then cannot start. Restore the device.
restore_dev_null() {
    if [ ! -c /dev/null ]; then
        log "restoring /dev/null (was not a character device)"
        rm -f /dev/null && mknod -m 666 /dev/null c 1 3
    fi
}
restore_dev_null

have_systemd() { [ -d /run/systemd/system ]; }

# ---------------------------------------------------------------- packages
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing: ${missing[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    # remember what this script installed (stop.sh --purge removes only these)
    printf '%s\n' "${missing[@]}" >> "$STATE/installed_packages"
    restore_dev_null
else
    log "packages present"
fi

# A daemon is running if its pid file names a live process of that name.
running() {  # running NAME PIDFILE
    local pid
    [ -f "$2" ] && pid=$(cat "$2" 2>/dev/null) && [ -n "$pid" ] &&
        [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$1" ]
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local secs=$1 what=$2; shift 2
    for _ in $(seq "$secs"); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 1
    done
    die "timed out after ${secs}s waiting for $what"
}

# ---------------------------------------------------------------- munge
if [ ! -s /etc/munge/munge.key ]; then
    log "creating munge key"
    mkdir -p /etc/munge
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
    touch "$STATE/created_munge_key"
fi
chown munge:munge /etc/munge/munge.key
chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
if have_systemd; then
    systemctl start munge
elif ! running munged /run/munge/munged.pid; then
    log "starting munged"
    runuser -u munge -- /usr/sbin/munged
    touch "$STATE/started_munge"
fi
wait_for 20 "munge" sh -c 'munge -n | unmunge'

# ---------------------------------------------------------------- accounting
if have_systemd; then
    systemctl start mariadb
elif ! mysqladmin ping >/dev/null 2>&1; then
    log "starting mariadb"
    /etc/init.d/mariadb start >/dev/null
    touch "$STATE/started_mariadb"
fi
wait_for 60 "mariadb" mysqladmin ping
[ -s "$DB_PASS_FILE" ] || (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$DB_PASS_FILE")
DB_PASS=$(cat "$DB_PASS_FILE")
mysql -u root <<SQL
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
SQL

HOST=$(hostname -s)
mkdir -p "$CONF" /var/log/slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /run/slurm
chown slurm:slurm /var/log/slurm /var/lib/slurm /var/lib/slurm/slurmctld /run/slurm

write_if_changed() {  # write_if_changed FILE MODE OWNER  (content on stdin); returns 0 if changed
    local tmp; tmp=$(mktemp)
    cat > "$tmp"
    if [ -f "$1" ] && cmp -s "$tmp" "$1"; then rm -f "$tmp"; return 1; fi
    install -m "$2" -o "$3" -g "$3" "$tmp" "$1"; rm -f "$tmp"
    return 0
}

dbd_changed=0
write_if_changed "$CONF/slurmdbd.conf" 600 slurm <<EOF && dbd_changed=1
# Written by bfio workflow/cluster/start.sh (removed by stop.sh).
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=slurm
PidFile=/run/slurm/slurmdbd.pid
LogFile=/var/log/slurm/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF

if have_systemd; then
    [ $dbd_changed = 1 ] && systemctl restart slurmdbd || systemctl start slurmdbd
else
    if [ $dbd_changed = 1 ] && running slurmdbd /run/slurm/slurmdbd.pid; then
        kill "$(cat /run/slurm/slurmdbd.pid)"; sleep 2
    fi
    if ! running slurmdbd /run/slurm/slurmdbd.pid; then
        log "starting slurmdbd"
        /usr/sbin/slurmdbd
    fi
fi
wait_for 60 "slurmdbd" bash -c '</dev/tcp/127.0.0.1/6819'

# ---------------------------------------------------------------- slurm.conf
# This host's real CPUs/sockets/cores/threads and memory, as slurmd sees them.
NODE_LINE=$(slurmd -C | head -n 1 | sed -E "s/^NodeName=[^ ]+/NodeName=$HOST/")
echo "$NODE_LINE" | grep -q "RealMemory=" || die "slurmd -C gave no node line: $NODE_LINE"

conf_changed=0
write_if_changed "$CONF/slurm.conf" 644 root <<EOF && conf_changed=1
# Written by bfio workflow/cluster/start.sh (removed by stop.sh):
# a single-node cluster on $HOST.
ClusterName=$CLUSTER
SlurmctldHost=$HOST
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
# no cgroups (containers often have none): plain process tracking
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# schedule cores and memory (the profile's threads and mem_mb)
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
# accounting (sacct) through slurmdbd
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none
# sacct shows the comment (the executor plugin puts the rule or group there)
AccountingStoreFlags=job_comment
# keep finished jobs visible to squeue for 10 minutes too
MinJobAge=600
$NODE_LINE State=UNKNOWN
PartitionName=$PARTITION Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF

# the cluster known to accounting (before slurmctld registers with slurmdbd)
if ! sacctmgr -n -P list cluster format=cluster 2>/dev/null | grep -qx "$CLUSTER"; then
    log "registering cluster $CLUSTER with slurmdbd"
    sacctmgr -i add cluster "$CLUSTER" >/dev/null
fi

if have_systemd; then
    if [ $conf_changed = 1 ]; then systemctl restart slurmctld slurmd; else systemctl start slurmctld slurmd; fi
else
    if [ $conf_changed = 1 ]; then
        for d in slurmd slurmctld; do
            running $d /run/slurm/$d.pid && kill "$(cat /run/slurm/$d.pid)" || true
        done
        sleep 2
    fi
    if ! running slurmctld /run/slurm/slurmctld.pid; then
        log "starting slurmctld"
        /usr/sbin/slurmctld
    fi
    if ! running slurmd /run/slurm/slurmd.pid; then
        log "starting slurmd"
        /usr/sbin/slurmd
    fi
fi

# ---------------------------------------------------------------- wait for idle
node_state() { sinfo -h -n "$HOST" -o %T 2>/dev/null | head -n 1; }
for i in $(seq "$WAIT"); do
    state=$(node_state || true)
    case "$state" in
        idle|mixed|allocated) break ;;
        down*|drain*|drained*)
            scontrol update NodeName="$HOST" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    [ "$i" = "$WAIT" ] && die "node $HOST not idle after ${WAIT}s (state: ${state:-none}); see /var/log/slurm/"
    sleep 1
done
touch "$STATE/started"
log "cluster $CLUSTER up: partition $PARTITION"
sinfo
