#!/usr/bin/env bash
# A throw-away Slurm cluster on 127.0.0.1 for tests: its own munged (own key and socket), one slurmctld and
# NODES slurmd daemons (nodes n1..nN, one CPU each, each on its own port), all state, spool, logs and pid
# files under DIR. Nothing outside DIR is touched: clients reach this cluster only through
# SLURM_CONF=DIR/slurm.conf, and `stop` ends exactly the daemons whose pid files are in DIR (and whose
# command line names DIR).
#   scripts/slurm-local.sh start DIR [NODES]   start (default 2 nodes), wait until every node is idle
#   scripts/slurm-local.sh stop DIR            cancel this cluster's jobs, stop its daemons by pid
# Exit status: 0 done; 1 a daemon did not come up (its log is printed); 77 Slurm or munge not installed.
# Root is the SlurmUser (CI runs as root); as another user the daemons run as that user.
set -u
cmd=${1:-}
dir=${2:-}
nodes=${3:-2}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
    echo "usage: $0 start|stop DIR [NODES]" >&2
    exit 2
fi
export PATH="$PATH:/usr/sbin:/sbin" # the daemons live in sbin
for t in munged mungekey slurmctld slurmd sinfo sbatch squeue scancel; do
    if ! command -v "$t" > /dev/null 2>&1; then
        echo "slurm-local: $t not installed (apt-get install -y slurm-wlm munge)" >&2
        exit 77
    fi
done
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
export SLURM_CONF="$dir/slurm.conf"

# pid from a pid file when that process is alive and was started for this DIR
our_pid() {
    local pid
    pid=$(cat "$1" 2> /dev/null) || return 1
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF "$dir" && echo "$pid"
}

stop_pid_file() { # TERM, up to 10 s, then KILL
    local pid
    pid=$(our_pid "$1") || return 0
    kill -TERM "$pid" 2> /dev/null
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2> /dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2> /dev/null
}

free_port() { # a port nothing listens on, from a range picked by this shell's pid (parallel clusters differ)
    local p=$1
    while (exec 3<> "/dev/tcp/127.0.0.1/$p") 2> /dev/null; do p=$((p + 1)); done
    echo "$p"
}

if [ "$cmd" = stop ]; then
    if our_pid "$dir/run/slurmctld.pid" > /dev/null; then
        scancel --full --quiet $(squeue -h -o %A 2> /dev/null) 2> /dev/null # this cluster's jobs only
        for _ in $(seq 1 100); do
            [ -z "$(squeue -h -o %A 2> /dev/null)" ] && break
            sleep 0.1
        done
    fi
    for f in "$dir"/run/slurmd.*.pid; do [ -e "$f" ] && stop_pid_file "$f"; done
    stop_pid_file "$dir/run/slurmctld.pid"
    stop_pid_file "$dir/run/munged.pid"
    exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR [NODES]" >&2; exit 2; }

mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log" "$dir/run"
chmod 700 "$dir/munge"
[ -s "$dir/munge/munge.key" ] || mungekey --create --keyfile="$dir/munge/munge.key" > /dev/null 2>&1 ||
    { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none; chmod 400 "$dir/munge/munge.key"; }
base=$(free_port $((20000 + ($$ % 2000) * 8)))
ctld_port=$base
host=$(hostname -s)
user=$(id -un)
{
    echo "ClusterName=ckeytest"
    echo "SlurmctldHost=$host(127.0.0.1)"
    echo "SlurmctldPort=$ctld_port"
    echo "SlurmUser=$user"
    echo "SlurmdUser=$user"
    echo "AuthType=auth/munge"
    echo "AuthInfo=socket=$dir/munge/munge.socket"
    echo "CredType=cred/munge"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/run/slurmctld.pid"
    echo "SlurmdPidFile=$dir/run/slurmd.%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd.%n.log"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "SchedulerType=sched/backfill"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "JobCompType=jobcomp/none"
    echo "SlurmctldTimeout=30"
    echo "SlurmdTimeout=30"
    echo "InactiveLimit=0"
    echo "KillWait=5"
    echo "MinJobAge=600"
    for i in $(seq 1 "$nodes"); do
        echo "NodeName=n$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$(free_port $((base + i))) CPUs=1 RealMemory=2000 State=UNKNOWN"
    done
    echo "PartitionName=local Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP"
} > "$SLURM_CONF"

fail() {
    echo "slurm-local: $1; log:" >&2
    tail -n 20 "$2" >&2 2> /dev/null
    "$0" stop "$dir"
    exit 1
}
munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" \
    > "$dir/log/munged.out" 2>&1 || fail "munged did not start" "$dir/log/munged.log"
slurmctld -f "$SLURM_CONF" > "$dir/log/slurmctld.out" 2>&1 || fail "slurmctld did not start" "$dir/log/slurmctld.log"
for i in $(seq 1 "$nodes"); do
    slurmd -f "$SLURM_CONF" -N "n$i" > "$dir/log/slurmd.n$i.out" 2>&1 || fail "slurmd n$i did not start" "$dir/log/slurmd.n$i.log"
done
for _ in $(seq 1 300); do # at most 30 s for every node to report idle
    idle=$(sinfo -h -N -o '%N %t' 2> /dev/null | awk '$2 == "idle" { n++ } END { print n + 0 }')
    [ "$idle" -ge "$nodes" ] && { echo "export SLURM_CONF=$SLURM_CONF"; exit 0; }
    sleep 0.1
done
sinfo -N >&2 2> /dev/null
fail "the nodes did not become idle within 30 s" "$dir/log/slurmctld.log"
