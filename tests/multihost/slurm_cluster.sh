# Sourced by the SLURM test after hosts.sh: a SLURM cluster on this machine whose controller
# and nodes are test hosts (network namespaces), all of it under one folder: its own munge key
# and munged socket, slurm.conf (state and spool folders, logs), slurmctld on host slurm-ctl,
# one slurmd per node host node-0, node-1, ... (slurmd -N), each host resolving the others by
# name through its own /etc/hosts (a bind mount in a mount namespace of its own; the hosts are
# entered with nsenter --net, which keeps the machine's /sys and cgroups). A heterogeneous job needs a node per component (the backfill
# scheduler, which alone starts them, reserves whole nodes for a planned component), hence
# nodes in namespaces rather than one slurmd. No system service is used or left running.
#
#   slurm_up DIR NODES CPUS MEMORY_MB GPUS [HOST...]
#                  makes hosts slurm-ctl, node-0 .. node-(NODES-1) and the extra HOSTs (all
#                  resolvable by name from each other), starts munged, slurmctld and the slurmds,
#                  returns 1 (reason on stderr) unless every node comes up idle
#   slurm_on CMD...  runs a SLURM client command (sbatch, squeue, ...) on slurm-ctl
#   slurm_exec HOST CMD...  runs CMD on HOST with the cluster's names resolvable (exec)
#   slurm_down     cancels the jobs, stops the daemons, kills what is left on the hosts and
#                  removes them (call it from the trap)
# Each node declares CPUS cores, MEMORY_MB and GPUS count-only GPUs (gres/gpu backed by files
# under DIR: the jobs here run on CPUs, but a script that asks for GPUs is scheduled as written),
# whatever the machine has (SlurmdParameters=config_overrides).
slurm_dir=""
slurm_pids=()

slurm_exec() {
  local host=$1
  shift
  exec nsenter --net="/run/netns/$(mh_ns "$host")" unshare -m \
    sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$slurm_dir/etc/hosts" "$@"
}
slurm_on() { (slurm_exec slurm-ctl "$@"); }

slurm_up() {
  local dir=$1 nodes=$2 cpus=$3 mem=$4 gpus=$5 i h hosts=(slurm-ctl)
  shift 5
  slurm_dir=$dir
  for ((i = 0; i < nodes; ++i)); do hosts+=("node-$i"); done
  hosts+=("$@")
  mh_hosts_up "${hosts[@]}" || return 1
  mkdir -p "$dir"/{etc,state,log,munge,gpu}
  {
    echo "127.0.0.1 localhost"
    for h in "${hosts[@]}"; do echo "$(mh_ip "$h") $h"; done
  } > "$dir/etc/hosts"
  chmod 700 "$dir/munge"
  mungekey -c -k "$dir/munge/munge.key" > "$dir/log/mungekey.log" 2>&1 || {
    echo "mungekey: $(cat "$dir/log/mungekey.log")" >&2
    return 1
  }
  # munged in the foreground (its PID is ours); clients reach it by its socket, from any host.
  munged -F -f --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" > "$dir/log/munged.err" 2>&1 &
  slurm_pids+=($!)
  for _ in $(seq 100); do [[ -S $dir/munge/munge.sock ]] && break; sleep 0.1; done
  [[ -S $dir/munge/munge.sock ]] || {
    echo "munged: $(cat "$dir/log/munged.err" "$dir/log/munged.log" 2> /dev/null)" >&2
    return 1
  }

  local gres=""
  if [[ $gpus -gt 0 ]]; then
    gres="Gres=gpu:$gpus"
    for ((i = 0; i < gpus; ++i)); do : > "$dir/gpu/gpu$i"; done
    echo "Name=gpu File=$dir/gpu/gpu[0-$((gpus - 1))]" > "$dir/etc/gres.conf"
  fi
  cat > "$dir/etc/slurm.conf" << EOF
ClusterName=allot-test
SlurmctldHost=$(hostname -s)($(mh_ip slurm-ctl))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# Heterogeneous jobs are started by the backfill scheduler only: every second here.
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_interval=1,bf_hetjob_immediate
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdParameters=config_overrides
GresTypes=gpu
EOF
  for ((i = 0; i < nodes; ++i)); do
    echo "NodeName=node-$i NodeAddr=$(mh_ip "node-$i") CPUs=$cpus Boards=1 SocketsPerBoard=1" \
      "CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=$mem $gres State=UNKNOWN" \
      >> "$dir/etc/slurm.conf"
  done
  echo "PartitionName=allot Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >> "$dir/etc/slurm.conf"
  export SLURM_CONF=$dir/etc/slurm.conf

  (slurm_exec slurm-ctl slurmctld -D -i -f "$SLURM_CONF") > "$dir/log/slurmctld.err" 2>&1 &
  slurm_pids+=($!)
  for ((i = 0; i < nodes; ++i)); do
    mkdir -p "$dir/spool-node-$i"
    (slurm_exec "node-$i" slurmd -D -N "node-$i" -f "$SLURM_CONF") \
      > "$dir/log/slurmd-node-$i.err" 2>&1 &
    slurm_pids+=($!)
  done
  local idle=""
  for _ in $(seq 300); do
    idle=$(slurm_on sinfo -h -N -t idle -o %N 2> /dev/null | sort -u | wc -l)
    [[ $idle == "$nodes" ]] && return 0
    sleep 0.1
  done
  echo "$idle of $nodes nodes idle after 30 s: $(slurm_on sinfo -N -o '%N %T %E' 2>&1)" \
    "$(tail -n 5 "$dir"/log/*.err "$dir"/log/slurm*.log 2> /dev/null)" >&2
  return 1
}

slurm_down() {
  local pid
  # The jobs end first, while slurmctld and the slurmds run (bounded: a dead controller hangs
  # the clients).
  if [[ -n $slurm_dir ]] && kill -0 "${slurm_pids[1]:-0}" 2> /dev/null; then
    slurm_on timeout 5 scancel --quiet --full --user=root 2> /dev/null
    slurm_on timeout 5 sh -c 'while [ -n "$(squeue -h)" ]; do sleep 0.1; done' 2> /dev/null
  fi
  for pid in "${slurm_pids[@]}"; do kill -TERM "$pid" 2> /dev/null; done
  for pid in "${slurm_pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2> /dev/null
  done
  slurm_pids=()
  mh_hosts_down  # kills what the jobs left (slurmstepd, tasks) on the node hosts
  slurm_dir=""
}
