#!/usr/bin/env bash
# A real Slurm on this machine, for the test suite and for trying the job scripts on a laptop/VM:
# one controller and two node daemons on 127.0.0.1 (nodes simnode1 and simnode2, so multi-node jobs
# can be run), 4 emulated GPUs per node (GRES over stand-in device files: jobs see the CUDA_VISIBLE_DEVICES
# and SLURM_*GPUS* a GPU cluster sets, there is no GPU behind them), no systemd, no cgroups, no accounting.
# Needs root and Debian's apt.
#
#   bash scripts/slurm_local.sh start    # install if needed, (re)write the config, start; idempotent
#   bash scripts/slurm_local.sh status   # exit 0 when the controller answers and both nodes are up
#   bash scripts/slurm_local.sh stop     # stop the daemons by pid
#
# Facts this relies on (measured, see docs/how-to/slurm.md): PID 1 here reaps slowly, so a
# stopped daemon can linger as a zombie and `kill -0` would call it alive; we look at its state.
# Each emulated node needs its own port, spool directory and pid file (the %n patterns below).
set -euo pipefail

NODES=(simnode1 simnode2)
CPUS_PER_NODE=${SLURM_LOCAL_CPUS:-4}
CONF=/etc/slurm/slurm.conf
MARK="# simulator local slurm"

die() { echo "slurm_local: $*" >&2; exit 1; }

alive() {  # alive PID: the process exists and is not a zombie
    local state
    state=$(ps -o stat= -p "$1" 2>/dev/null | cut -c1) || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

pid_alive() {  # pid_alive PIDFILE
    [ -f "$1" ] && alive "$(cat "$1")"
}

install_packages() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
        && command -v munged >/dev/null; then
        return
    fi
    [ "$(id -u)" = 0 ] || die "Slurm is not installed and installing it needs root"
    command -v apt-get >/dev/null || die "Slurm is not installed and there is no apt-get to install it"
    echo "slurm_local: installing slurmctld slurmd slurm-client munge (apt)"
    export DEBIAN_FRONTEND=noninteractive
    flock /run/simulator-apt.lock apt-get -o DPkg::Lock::Timeout=900 update -qq >/dev/null
    # "invoke-rc.d: policy-rc.d denied execution" is expected: there is no init system to start them
    flock /run/simulator-apt.lock apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null 2>&1 \
        || die "apt-get install of slurmctld slurmd slurm-client munge failed"
}

write_config() {  # prints "changed" when the config differs from the one on disk
    local host new
    host=$(hostname -s)
    new=$(mktemp)
    {
        echo "$MARK: written by scripts/slurm_local.sh"
        echo "ClusterName=simulator"
        echo "SlurmctldHost=${host}(127.0.0.1)"
        echo "SlurmUser=slurm"
        echo "AuthType=auth/munge"
        # a requeued job may start again only when its old credential has expired (default 120 s): 5 s is
        # the least Slurm takes (below it, it logs "invalid" and keeps 120), and each requeue test waits it out
        echo "AuthInfo=cred_expire=5"
        echo "StateSaveLocation=/var/lib/slurm/slurmctld"
        echo "SlurmdSpoolDir=/var/lib/slurm/slurmd/%n"
        echo "SlurmctldPidFile=/run/slurmctld.pid"
        echo "SlurmdPidFile=/run/slurmd-%n.pid"
        echo "SlurmctldLogFile=/var/log/slurm/slurmctld.log"
        echo "SlurmdLogFile=/var/log/slurm/slurmd-%n.log"
        # no cgroups in containers: track processes by parent pid, no task binding
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "MpiDefault=none"
        echo "SwitchType=switch/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "JobCompType=jobcomp/none"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_Core"
        echo "SchedulerType=sched/backfill"
        # batch_sched_delay=0: otherwise every sbatch waits ~3 s; sched_interval=1: a requeued job, which
        # becomes eligible when its credential expires (no event wakes the scheduler), starts within a
        # second instead of at the next 60 s pass
        echo "SchedulerParameters=batch_sched_delay=0,sched_interval=1"
        echo "ReturnToService=2"
        echo "KillWait=5"
        echo "MinJobAge=600"
        # let the nodes advertise more CPUs than the machine has, so several tasks fit on 2 cores
        echo "SlurmdParameters=config_overrides"
        # 4 emulated GPUs per node (gres.conf over stand-in device files, see write_gres): jobs can ask
        # for --gpus-per-task / --gpus-per-node and see the CUDA_VISIBLE_DEVICES Slurm would set
        echo "GresTypes=gpu"
        local port=6821
        for node in "${NODES[@]}"; do
            echo "NodeName=$node NodeAddr=127.0.0.1 Port=$port CPUs=$CPUS_PER_NODE Gres=gpu:4 State=UNKNOWN"
            port=$((port + 1))
        done
        echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
    } >"$new"
    mkdir -p /etc/slurm
    if [ -f "$CONF" ] && cmp -s "$new" "$CONF"; then
        rm -f "$new"
        return
    fi
    if [ -f "$CONF" ] && ! grep -q "^$MARK" "$CONF"; then
        rm -f "$new"
        die "$CONF exists and was not written by this script; not replacing it"
    fi
    mv "$new" "$CONF"
    chmod 644 "$CONF"
    echo changed
}

write_gres() {  # stand-in GPU device files (copies of /dev/null) and the gres.conf that names them
    local i
    install -d /run/simulator-fake-gpu
    for i in 0 1 2 3; do
        [ -e /run/simulator-fake-gpu/gpu$i ] || mknod /run/simulator-fake-gpu/gpu$i c 1 3
    done
    echo "$MARK
Name=gpu File=/run/simulator-fake-gpu/gpu[0-3]" >/etc/slurm/gres.conf
}

hosts_entries() {
    # multi-node jobs find their JAX coordinator by node name, so the names must resolve
    if ! grep -q "$MARK" /etc/hosts; then
        echo "127.0.0.1 ${NODES[*]} $MARK" >>/etc/hosts
    fi
}

stop() {
    local f pids=()
    for f in /run/slurmd-*.pid /run/slurmctld.pid; do
        [ -f "$f" ] || continue
        if pid_alive "$f"; then
            pids+=("$(cat "$f")")
            kill "$(cat "$f")" 2>/dev/null || true
        fi
        rm -f "$f"
    done
    local p i
    for p in "${pids[@]}"; do
        for i in $(seq 100); do alive "$p" || break; sleep 0.1; done
        if alive "$p"; then kill -9 "$p" 2>/dev/null || true; fi
    done
}

nodes_up() {
    local n
    n=$(sinfo -h -N -o "%N %t" 2>/dev/null | grep -cE " (idle|mix|alloc)\*?$" || true)
    [ "$n" -ge "${#NODES[@]}" ] && ! sinfo -h -N -o "%t" 2>/dev/null | grep -q '\*'
}

start() {
    [ "$(id -u)" = 0 ] || die "starting Slurm daemons needs root"
    install_packages
    local changed
    changed=$(write_config)
    write_gres
    hosts_entries
    if [ -n "$changed" ]; then stop; fi
    install -d -o munge -g munge -m 0755 /run/munge
    if ! pgrep -u munge -x munged >/dev/null || ! munge -n </dev/null >/dev/null 2>&1; then
        runuser -u munge -- munged --force
    fi
    install -d -o slurm -g slurm /var/lib/slurm /var/lib/slurm/slurmctld /var/log/slurm
    if ! pid_alive /run/slurmctld.pid; then
        slurmctld
    fi
    local node
    for node in "${NODES[@]}"; do
        install -d "/var/lib/slurm/slurmd/$node"
        if ! pid_alive "/run/slurmd-$node.pid"; then
            slurmd -N "$node"
        fi
    done
    local i
    for i in $(seq 150); do
        if nodes_up; then
            echo "slurm_local: up: $(sinfo -h -N -o '%N:%t' | tr '\n' ' ')"
            return
        fi
        # a node left DOWN by an earlier unclean stop comes back with an explicit resume
        if [ "$i" = 20 ]; then
            scontrol update nodename="$(IFS=,; echo "${NODES[*]}")" state=resume 2>/dev/null || true
        fi
        sleep 0.2
    done
    die "daemons started but the nodes are not idle after 30 s: $(sinfo -h -N -o '%N:%t' 2>&1 | tr '\n' ' ') (logs in /var/log/slurm)"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) nodes_up ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
