# Sourced by the multi-host tests: test hosts as Linux network namespaces on one machine, each
# with one interface (eth0, a veth pair) plugged into a bridge that lives in a namespace of its
# own, so that nothing is added to the machine's own network namespace. Names carry a per-run
# prefix (concurrent runs cannot clash) and the subnet is a random /24 in 10.0.0.0/8.
#
#   mh_hosts_up learner-0 learner-1 ...   makes the hosts; mh_ip HOST is its address
#   mh_on HOST CMD...                      runs CMD on HOST (ip netns exec)
#   mh_hosts_down                          kills what still runs on the hosts and removes every
#                                          namespace made (call it from the trap)
# Needs root and iproute2. mh_hosts_up returns 1 (with the reason on stderr) when namespaces
# cannot be made here.
declare -gA mh_addr
mh_namespaces=()
mh_prefix="allot-mh-$$-$RANDOM"
mh_subnet="10.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1))"

mh_ns() { echo "$mh_prefix-$1"; }  # HOST: its namespace's name
mh_ip() { echo "${mh_addr[$1]}"; }

mh_hosts_up() {
  local hub host n=10 port=0
  hub=$(mh_ns switch)
  ip netns add "$hub" || return 1
  mh_namespaces+=("$hub")
  ip -n "$hub" link add br0 type bridge &&
    ip -n "$hub" link set br0 up &&
    ip -n "$hub" link set lo up || return 1
  for host in "$@"; do
    local ns
    ns=$(mh_ns "$host")
    ip netns add "$ns" || return 1
    mh_namespaces+=("$ns")
    # One veth pair: eth0 on the host, p<N> on the switch's bridge.
    ip link add eth0 netns "$ns" type veth peer name "p$port" netns "$hub" &&
      ip -n "$hub" link set "p$port" master br0 &&
      ip -n "$hub" link set "p$port" up &&
      ip -n "$ns" addr add "$mh_subnet.$n/24" dev eth0 &&
      ip -n "$ns" link set eth0 up &&
      ip -n "$ns" link set lo up || return 1
    mh_addr[$host]=$mh_subnet.$n
    mh_port[$host]=p$port
    n=$((n + 1))
    port=$((port + 1))
  done
}
declare -gA mh_port  # HOST: its port on the switch (ip -n "$(mh_ns switch)" -s link show PORT)

mh_on() {  # HOST CMD...: CMD in HOST's namespace (exec: the PID is CMD's own)
  local host=$1
  shift
  ip netns exec "$(mh_ns "$host")" "$@"
}

# Bytes HOST has sent to the switch so far (its port's receive counter).
mh_bytes_sent() {
  ip netns exec "$(mh_ns switch)" cat "/sys/class/net/${mh_port[$1]}/statistics/rx_bytes"
}

mh_hosts_down() {  # also kills whatever still runs in them
  local ns left
  for ns in "${mh_namespaces[@]}"; do
    left=$(ip netns pids "$ns" 2> /dev/null)
    # shellcheck disable=SC2086  # one PID a word
    [[ -n $left ]] && kill -KILL $left 2> /dev/null
    ip netns del "$ns" 2> /dev/null
  done
  mh_namespaces=()
}
