#!/usr/bin/env bash
# Stop the cluster up.sh started: slurmd, slurmctld, munged (by their pid files). Jobs still
# queued or running are cancelled first. Leaves the packages, /etc/slurm/slurm.conf and the
# state directories in place (docs/cluster.md); `up.sh` starts it again. Idempotent.
set -euo pipefail
if [[ $(id -u) -ne 0 ]]; then
    echo "down.sh: needs root" >&2
    exit 2
fi
stop() {  # stop the daemon of a pid file and wait until it is gone
    local pidfile=$1
    [[ -s $pidfile ]] || return 0
    local pid
    pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -f "$pidfile"
}
if scontrol ping 2>/dev/null | grep -q UP; then
    scancel --user=root --full 2>/dev/null || true
fi
stop /run/slurmd.pid
stop /run/slurmctld.pid
stop /run/munge/munged.pid
echo "down.sh: SLURM and munge stopped"
