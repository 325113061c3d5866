#!/usr/bin/env bash
# The real Slurm path of scripts/cluster: starts a one-node Slurm (munged, slurmctld, slurmd from
# Debian, configured in a temporary folder, no systemd, no cgroups), submits a 3-shard needle grid
# on stories260K with submit.sh, waits for the merge job and checks that the merged rows equal an
# unsharded run (timings aside) and that the logs landed in the results folder. Every daemon it
# started is stopped on exit, failure included; every wait has a deadline. It does not install
# Slurm (scripts/test.sh does) and fails, never passes, when Slurm is missing.
#   tests/cluster/slurm_test.sh --snapkv build/app/cli/snapkv [--keep DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
snapkv="$here/build/app/cli/snapkv"
keep=""
deadline_s=300
while [ $# -gt 0 ]; do
  case "$1" in
    --snapkv) snapkv="$2"; shift ;;
    --keep) keep="$2"; shift ;;          # copy the folder (config, logs, results) here at the end
    --timeout) deadline_s="$2"; shift ;;
    *) echo "slurm_test: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
snapkv="$(cd "$(dirname "$snapkv")" && pwd)/$(basename "$snapkv")"
[ -x "$snapkv" ] || { echo "slurm_test: no snapkv binary at $snapkv" >&2; exit 1; }
for tool in munged slurmctld slurmd sbatch scontrol sinfo python3; do
  command -v "$tool" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin"
  command -v "$tool" >/dev/null 2>&1 || {
    echo "slurm_test: '$tool' is missing (apt-get install slurmctld slurmd slurm-client munge; scripts/test.sh does)" >&2
    exit 1
  }
done

grep -qs " /sys/fs/cgroup" /proc/mounts || {
  echo "slurm_test: no cgroup file system under /sys/fs/cgroup; Slurm 22.05's slurmd cannot start without one" >&2
  exit 1
}

start_s=$SECONDS
# Short path: munge's socket path must stay under the 108-byte limit of a Unix socket.
T="$(mktemp -d /tmp/snapkv-slurm.XXXXXX)"
chmod 755 "$T"
pids=()
cleanup() {
  local rc=$?
  set +e
  unset SLURM_CONF   # below, only the processes of this cluster carry it
  if [ "$rc" != 0 ] && [ -f "$T/slurm.conf" ]; then
    echo "---- queue at failure:" >&2
    SLURM_CONF="$T/slurm.conf" timeout 5 squeue -a -o '%i %j %T %r' >&2
  fi
  # Jobs first (slurmd then ends their steps), then the daemons in reverse order.
  if [ -f "$T/slurm.conf" ]; then
    SLURM_CONF="$T/slurm.conf" timeout 10 scancel --quiet --user "$(id -un)" 2>/dev/null
    for _ in $(seq 20); do
      [ -z "$(SLURM_CONF="$T/slurm.conf" timeout 5 squeue -h -a 2>/dev/null)" ] && break
      sleep 0.5
    done
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null; done
  for _ in $(seq 50); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.2
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  # Step daemons and job processes of this cluster outlive slurmd: they carry its SLURM_CONF.
  for e in /proc/[0-9]*/environ; do
    if { tr '\0' '\n' <"$e"; } 2>/dev/null | grep -qxF "SLURM_CONF=$T/slurm.conf"; then
      p="${e#/proc/}"; p="${p%/environ}"
      [ "$p" != "$$" ] && kill -KILL "$p" 2>/dev/null
    fi
  done
  if [ "$rc" != 0 ]; then
    echo "---- slurm_test failed (rc $rc); logs from $T:" >&2
    for f in "$T"/log/*.log "$T"/out/logs/*.log; do
      [ -f "$f" ] && { echo "== $f" >&2; tail -n 25 "$f" >&2; }
    done
  fi
  if [ -n "$keep" ]; then mkdir -p "$keep" && cp -r "$T"/. "$keep"/ 2>/dev/null; fi
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "slurm_test: $*" >&2; exit 1; }
# wait_for SECONDS WHAT COMMAND...: polls COMMAND every half second until it succeeds.
wait_for() {
  local limit="$1" what="$2"
  shift 2
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || fail "timed out after ${limit}s waiting for $what"
    sleep 0.5
  done
}

user="$(id -un)"
host="$(hostname -s)"
mkdir -p "$T/munge" "$T/log" "$T/state" "$T/spool" "$T/out"
chmod 755 "$T/munge"   # clients (sbatch, jobs of any user) reach the socket; the key stays 0400

# 1. munge, with its own key and socket.
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge/munge.key"
munged --foreground --force --key-file="$T/munge/munge.key" --socket="$T/munge/socket" \
  --pid-file="$T/munge/munged.pid" --seed-file="$T/munge/seed" --log-file="$T/log/munged.log" \
  >"$T/log/munged.out" 2>&1 &
pids+=($!)
wait_for 15 "munged's socket" test -S "$T/munge/socket"

# 2. slurm.conf: one node with what slurmd detects, free ports, plugins that need no cgroups.
read -r ctld_port slurmd_port < <(python3 - <<'PY'
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])
PY
)
node_hw="$(slurmd -C | head -n 1 | sed -e 's/^NodeName=[^ ]* //')"
cat > "$T/slurm.conf" <<EOF
ClusterName=snapkvtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/socket
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
ReturnToService=2
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 $node_hw State=UNKNOWN
PartitionName=snapkv Nodes=$host Default=YES MaxTime=60 State=UP
EOF
# slurmd 22.05 loads a cgroup plugin whatever ProctrackType and TaskPlugin say (CgroupPlugin=disabled
# came with 23.02), so it needs /sys/fs/cgroup mounted; on cgroup v2 without systemd it must not
# ask systemd for a scope.
cat > "$T/cgroup.conf" <<EOF
CgroupPlugin=autodetect
IgnoreSystemd=yes
IgnoreSystemdOnFailure=yes
EOF
export SLURM_CONF="$T/slurm.conf"

# 3. The daemons, in the foreground of their own background processes.
slurmctld -D -i -f "$SLURM_CONF" >"$T/log/slurmctld.out" 2>&1 &
pids+=($!)
wait_for 30 "slurmctld to answer" scontrol ping
slurmd -D -f "$SLURM_CONF" -N "$host" >"$T/log/slurmd.out" 2>&1 &
pids+=($!)
node_idle() { [ "$(sinfo -h -N -n "$host" -o %t)" = idle ]; }
wait_for 60 "node $host to be idle" node_idle
echo "slurm_test: one-node Slurm up in $((SECONDS - start_s)) s ($node_hw)"

# 4. The unsharded run, then the same grid as 3 array tasks + the merge job through submit.sh.
grid=(--model "$here/tests/data/stories260K.gguf" --haystack "$here/tests/data/reference/ppl-text.txt"
      --lengths 96,128 --depths 0,50,100 --policies snapkv,streaming --budgets 48 --window 16 --kernel 5
      --max-tokens 5 --quiet)
SNAPKV_THREADS=1 "$snapkv" needle "${grid[@]}" --out "$T/whole.jsonl" >/dev/null
sub_out="$(cd "$T" && SNAPKV="$snapkv" bash "$here/scripts/cluster/submit.sh" --cpus 1 --mem 500M --time 10 \
             3 "$T/out" needle "${grid[@]}")"
echo "slurm_test: $sub_out"
merge_id="$(sed -n 's/.*merge job \([0-9]*\).*/\1/p' <<<"$sub_out")"
array_id="$(sed -n 's/^array job \([0-9]*\).*/\1/p' <<<"$sub_out")"
[ -n "$merge_id" ] || fail "submit.sh did not print the merge job's id: $sub_out"
merge_state() { scontrol show job "$merge_id" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
# Done when the merge ended, or when it never will: a failed array task leaves it pending on a
# dependency that cannot be satisfied (Slurm 22.05 does not cancel it by itself).
merge_done() {
  local info
  info="$(scontrol show job "$merge_id" 2>/dev/null)"
  case "$info" in *Reason=DependencyNeverSatisfied*) return 0 ;; esac
  case "$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$info")" in
    COMPLETED|FAILED|CANCELLED|TIMEOUT|OUT_OF_MEMORY|NODE_FAIL) return 0 ;;
  esac
  return 1
}
wait_for "$deadline_s" "the merge job $merge_id" merge_done
if [ "$(merge_state)" != COMPLETED ]; then
  reason="$(scontrol show job "$merge_id" | sed -n 's/.*Reason=\([A-Za-z_]*\).*/\1/p')"
  tasks="$(squeue -h -a -t all -j "$array_id" -o '%i=%T' 2>/dev/null | tr '\n' ' ')"
  fail "merge job $merge_id is $(merge_state) ($reason); array tasks: ${tasks:-gone}; their logs are below"
fi
echo "slurm_test: array and merge finished $((SECONDS - start_s)) s after start"

# 5. Merged rows equal the unsharded run; logs are in the results folder, none in the submit folder.
python3 "$here/tests/cluster/same_rows.py" "$T/whole.jsonl" "$T/out/all.jsonl" 18 slurm_test
for i in 0 1 2; do
  ls "$T"/out/logs/eval-*_"$i".log >/dev/null 2>&1 || fail "no log of array task $i in $T/out/logs"
done
ls "$T"/out/logs/merge-"$merge_id".log >/dev/null 2>&1 || fail "no merge log in $T/out/logs"
! ls "$T"/*.log >/dev/null 2>&1 || fail "logs landed in the submit folder: $(ls "$T"/*.log)"
echo "slurm_test: passed in $((SECONDS - start_s)) s"
