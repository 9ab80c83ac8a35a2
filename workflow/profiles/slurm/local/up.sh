#!/usr/bin/env bash
# Install (if missing) and start a single-node SLURM cluster on this machine: munged, slurmctld
# and slurmd on localhost, one partition "local" holding the one node with the CPUs and memory
# `slurmd -C` finds. Idempotent: a second call finds the daemons answering and changes nothing.
# Needs root (apt-get, daemons, /etc/slurm). What it changes on the machine: docs/cluster.md.
#
#   workflow/profiles/slurm/local/up.sh     # then: sinfo; workflow/profiles/slurm/local/down.sh
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CONF=/etc/slurm/slurm.conf

if [[ $(id -u) -ne 0 ]]; then
    echo "up.sh: needs root (installs packages, starts daemons, writes $CONF)" >&2
    exit 2
fi

# 1. packages (Debian: slurm-wlm pulls slurmctld, slurmd, slurm-client; munge authenticates)
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq slurm-wlm munge >/dev/null
fi

# 2. munge: the key the package made (created here if absent), the daemon as user munge
if [[ ! -s /etc/munge/munge.key ]]; then
    mungekey --create --keyfile /etc/munge/munge.key
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge /var/log/munge /var/lib/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged
    for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
    munge -n | unmunge >/dev/null || { echo "up.sh: munged does not answer" >&2; exit 1; }
fi

# 3. slurm.conf from the template, with this machine's name, CPUs and memory
node_line="$(slurmd -C | head -n 1)"              # NodeName=... CPUs=... RealMemory=...
node_name="$(hostname -s)"
wanted="$(sed -e "s|@NODE_NAME@|${node_name}|g" -e "s|@NODE_LINE@|${node_line}|" "$HERE/slurm.conf.in")"
changed=0
if [[ ! -f $CONF ]] || [[ "$(cat "$CONF")" != "$wanted" ]]; then
    install -d -m 0755 /etc/slurm
    printf '%s\n' "$wanted" >"$CONF"
    changed=1
fi
install -d -o slurm -g slurm -m 0755 /var/lib/slurm/slurmctld /var/log/slurm
install -d -m 0755 /var/lib/slurm/slurmd

running() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
if [[ $changed -eq 1 ]]; then  # a daemon running on an older slurm.conf: restart it
    for pidfile in /run/slurmd.pid /run/slurmctld.pid; do
        if running "$pidfile"; then
            kill "$(cat "$pidfile")"
            for _ in $(seq 100); do running "$pidfile" || break; sleep 0.1; done
        fi
    done
fi

# 4. the daemons (they fork into the background and write their pid files)
running /run/slurmctld.pid || slurmctld
for _ in $(seq 100); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
scontrol ping | grep -q UP || { echo "up.sh: slurmctld does not answer; see /var/log/slurm/slurmctld.log" >&2; exit 1; }
running /run/slurmd.pid || slurmd
for _ in $(seq 150); do
    state="$(sinfo -h -n "$node_name" -o %T 2>/dev/null || true)"
    [[ $state == idle* || $state == mixed* || $state == allocated* ]] && break
    sleep 0.2
done
# a node left drained by a fault exercise or a past run comes back to service
scontrol update nodename="$node_name" state=resume 2>/dev/null || true
sinfo -h -n "$node_name" -o %T | grep -Eq '^(idle|mixed|allocated)' || {
    echo "up.sh: node $node_name is not up: $(sinfo -h -n "$node_name" -o '%T %E')" >&2
    exit 1
}
echo "up.sh: SLURM $(sinfo --version | awk '{print $2}') up: node $node_name ($node_line), partition local"
