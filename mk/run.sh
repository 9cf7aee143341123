#!/usr/bin/env bash
# `make run`: a local, highly available control plane on the embedded test
# API server.
#
#   1. starts kubesim (our Kubernetes API server for tests) on 127.0.0.1,
#      its state, kubeconfig and logs under build/run/;
#   2. applies the CRDs and examples/ with the real kubectl;
#   3. starts three replicas of `coxswain run` (xDS on 18000-18002, admin on
#      18080-18082; XDS_PORT / ADMIN_PORT move them) and, in front of their
#      xDS ports, a forwarder standing for a Kubernetes Service (18010,
#      XDS_SERVICE_PORT): each connection goes to a replica that is alive;
#   4. prints who leads, the snapshot version, where xDS is served and a
#      gRPC bootstrap file (naming the Service), then follows leadership
#      changes until Ctrl-C, which stops everything cleanly (the leader
#      releases its lease).
#
# Another terminal can kill the leader (the commands are printed) and watch
# the handover here; the printed RPC command goes on working through the
# Service. RUN_DIR (default $BUILD/run) moves the state, logs and pid files.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
RUN=${RUN_DIR:-$BUILD/run}
XDS_PORT=${XDS_PORT:-18000}
ADMIN_PORT=${ADMIN_PORT:-18080}
XDS_SERVICE_PORT=${XDS_SERVICE_PORT:-$((XDS_PORT + 10))}
# Short enough to watch a crash failover, long enough to be realistic.
LEASE=${LEASE:-6s}
RENEW=${RENEW:-4s}
RETRY=${RETRY:-1s}
NS=coxswain-system
COX=$BUILD/bin/coxswain
KS=$BUILD/bin/kubesim

say() { printf '\033[1m%s\033[0m\n' "$*"; }
die() {
    echo "make run: $*" >&2
    exit 1
}

command -v kubectl >/dev/null || die "kubectl is not installed (mk/deps.sh lists it)"
command -v curl >/dev/null || die "curl is not installed"
[ -x "$COX" ] && [ -x "$KS" ] || die "build first: make"
mkdir -p "$RUN"

pids=()
cleanup() {
    trap - EXIT
    echo
    say "stopping: replicas first (the leader releases its lease), then kubesim"
    for i in 2 1 0; do
        [ -f "$RUN/r$i.pid" ] && kill -TERM "$(cat "$RUN/r$i.pid")" 2>/dev/null || true
    done
    for i in 0 1 2; do
        if [ -f "$RUN/r$i.pid" ]; then
            p=$(cat "$RUN/r$i.pid")
            for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
            rm -f "$RUN/r$i.pid"
        fi
    done
    for b in greeter-a greeter-b xds-service; do
        [ -f "$RUN/$b.pid" ] && kill -TERM "$(cat "$RUN/$b.pid")" 2>/dev/null || true
        rm -f "$RUN/$b.pid"
    done
    if [ -f "$RUN/kubesim.pid" ]; then
        kill -TERM "$(cat "$RUN/kubesim.pid")" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$(cat "$RUN/kubesim.pid")" 2>/dev/null || break; sleep 0.1; done
        rm -f "$RUN/kubesim.pid"
    fi
    say "stopped; state kept in $RUN/kubesim-state.json (rm -rf $RUN to start afresh)"
}
# Ctrl-C or SIGTERM ends the script (the EXIT trap cleans up); without the
# exit, bash would go on with whatever step the signal interrupted.
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Leftovers of a run that was killed without Ctrl-C.
for f in "$RUN"/r?.pid "$RUN/greeter-a.pid" "$RUN/greeter-b.pid" "$RUN/xds-service.pid" \
    "$RUN/kubesim.pid"; do
    [ -f "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null && sleep 0.5
    rm -f "$f"
done
for p in $XDS_PORT $((XDS_PORT + 1)) $((XDS_PORT + 2)) $ADMIN_PORT $((ADMIN_PORT + 1)) \
    $((ADMIN_PORT + 2)) $XDS_SERVICE_PORT; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        die "port $p is in use; set XDS_PORT=... ADMIN_PORT=... (each uses 3 ports) or XDS_SERVICE_PORT=..."
    fi
done
# Proxies here are on loopback, with no credentials: when the daemon
# authenticates xDS streams by default, this demo says it does not.
xds_auth=()
if "$COX" run --help 2>/dev/null | grep -q -- '--xds-auth '; then
    xds_auth=(--xds-auth none)
fi

say "1/4 kubesim (the test API server) on 127.0.0.1"
rm -f "$RUN/kubesim.port"
"$KS" --listen 127.0.0.1:0 --port-file "$RUN/kubesim.port" --kubeconfig "$RUN/kubeconfig" \
    --allow-all --state "$RUN/kubesim-state.json" --audit-file "$RUN/audit.jsonl" \
    >"$RUN/kubesim.log" 2>&1 &
echo $! >"$RUN/kubesim.pid"
for _ in $(seq 100); do [ -s "$RUN/kubesim.port" ] && break; sleep 0.05; done
[ -s "$RUN/kubesim.port" ] || die "kubesim did not start: $(tail -5 "$RUN/kubesim.log")"
export KUBECONFIG=$RUN/kubeconfig
echo "    API http://127.0.0.1:$(cat "$RUN/kubesim.port")  (KUBECONFIG=$KUBECONFIG)"

say "2/4 CRDs and examples/ (kubectl apply)"
kubectl apply -f api/crds/ | sed 's/^/    /'
kubectl wait --for condition=established --timeout=20s crd --all >/dev/null
kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $NS}
EOF
kubectl apply -f examples/ | sed 's/^/    /'

# Two tiny gRPC servers answering every method with their name, as the two
# endpoints of the example Service "greeter", so a gRPC client has real
# backends behind xds:///greeter (round robin).
backends=0
if /usr/bin/python3 -c 'import grpc' 2>/dev/null; then
    for b in greeter-a greeter-b; do
        /usr/bin/python3 -c '
import signal, sys
from concurrent import futures
import grpc
name = sys.argv[1]
class H(grpc.GenericRpcHandler):
    def service(self, details):
        return grpc.unary_unary_rpc_method_handler(lambda req, ctx: name.encode())
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
s = grpc.server(futures.ThreadPoolExecutor(4))
s.add_generic_rpc_handlers((H(),))
print(s.add_insecure_port("127.0.0.1:0"), flush=True)
s.start()
signal.sigwait({signal.SIGTERM, signal.SIGINT})
s.stop(0)' "$b" >"$RUN/$b.port" 2>"$RUN/$b.log" &
        echo $! >"$RUN/$b.pid"
    done
    for _ in $(seq 100); do [ -s "$RUN/greeter-a.port" ] && [ -s "$RUN/greeter-b.port" ] && break; sleep 0.05; done
    pa=$(cat "$RUN/greeter-a.port") pb=$(cat "$RUN/greeter-b.port")
    kubectl patch endpointslice -n default greeter-1 --type merge \
        -p "{\"ports\":[{\"name\":\"grpc\",\"port\":$pa,\"protocol\":\"TCP\"}]}" | sed 's/^/    /'
    kubectl apply -f - <<EOF | sed 's/^/    /'
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: greeter-2
  namespace: default
  labels: {kubernetes.io/service-name: greeter}
addressType: IPv4
ports: [{name: grpc, port: $pb, protocol: TCP}]
endpoints: [{addresses: [127.0.0.1], conditions: {ready: true}}]
EOF
    echo "    gRPC backends of Service default/greeter: greeter-a on 127.0.0.1:$pa, greeter-b on 127.0.0.1:$pb"
    backends=1
fi

say "3/4 three replicas of coxswain run (lease $LEASE, renew deadline $RENEW, retry $RETRY)"
for i in 0 1 2; do
    "$COX" run --kubeconfig "$KUBECONFIG" --namespace "$NS" --identity "replica-$i" \
        --xds-listen "127.0.0.1:$((XDS_PORT + i))" --admin-listen "127.0.0.1:$((ADMIN_PORT + i))" \
        --ports-file "$RUN/r$i.ports" --xds-auth none \
        --leader-elect-lease-duration "$LEASE" --leader-elect-renew-deadline "$RENEW" \
        --leader-elect-retry-period "$RETRY" "${xds_auth[@]}" >"$RUN/replica-$i.log" 2>&1 &
    echo $! >"$RUN/r$i.pid"
    disown $! # killing one from another terminal is part of the demo: no "Killed" noise
    echo "    replica-$i  pid $!  xDS 127.0.0.1:$((XDS_PORT + i))  admin http://127.0.0.1:$((ADMIN_PORT + i))  log $RUN/replica-$i.log"
done

json_field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p"; }
# /debug/leader of replica $1, or nothing (and no failure) when it does not
# answer: it may have been killed a moment ago.
debug_leader() { curl -sf --max-time 2 "http://127.0.0.1:$((ADMIN_PORT + $1))/debug/leader" 2>/dev/null || true; }
leader_of() { debug_leader "$1" | json_field leader; } # the leader as replica $1 sees it

# The Service in front of the three xDS ports.
rm -f "$RUN/xds-service.port"
/usr/bin/python3 mk/xds_service.py "$XDS_SERVICE_PORT" "$XDS_PORT" $((XDS_PORT + 1)) $((XDS_PORT + 2)) \
    >"$RUN/xds-service.port" 2>"$RUN/xds-service.log" &
echo $! >"$RUN/xds-service.pid"
for _ in $(seq 100); do [ -s "$RUN/xds-service.port" ] && break; sleep 0.05; done
[ -s "$RUN/xds-service.port" ] || die "the xDS Service did not start: $(tail -5 "$RUN/xds-service.log")"
echo "    xDS Service 127.0.0.1:$XDS_SERVICE_PORT -> whichever of :$XDS_PORT, :$((XDS_PORT + 1)), :$((XDS_PORT + 2)) is alive"

for _ in $(seq 200); do
    ready=0
    for i in 0 1 2; do
        curl -sf --max-time 2 "http://127.0.0.1:$((ADMIN_PORT + i))/readyz" >/dev/null 2>&1 &&
            ready=$((ready + 1))
    done
    l=$(leader_of 0)
    [ $ready -eq 3 ] && [ -n "$l" ] && break
    sleep 0.1
done
[ $ready -eq 3 ] || die "replicas not ready; see $RUN/replica-*.log"

cat >"$RUN/bootstrap.json" <<EOF
{
  "xds_servers": [{"server_uri": "127.0.0.1:$XDS_SERVICE_PORT", "channel_creds": [{"type": "insecure"}],
                   "server_features": ["xds_v3"]}],
  "node": {"id": "make-run-client", "cluster": "default/mesh",
           "locality": {"zone": "zone-a"},
           "metadata": {"coxswain.dev/gateway": "default/mesh"}}
}
EOF

cat >"$RUN/call.py" <<'EOF'
# 100 unary RPCs through gRPC's xDS client: which backend answered each.
import collections
import grpc
ch = grpc.insecure_channel("xds:///greeter")
call = ch.unary_unary("/helloworld.Greeter/SayHello")
print(dict(collections.Counter(call(b"hi", timeout=10).decode() for _ in range(100))))
EOF

# The pid of whichever replica leads now (the demo's kill commands use it).
cat >"$RUN/leader-pid" <<EOF
#!/usr/bin/env bash
# Prints the pid of the replica that leads now, as the first replica that
# answers sees it.
for i in 0 1 2; do
    n=\$(curl -sf --max-time 2 "http://127.0.0.1:\$(($ADMIN_PORT + i))/debug/leader" 2>/dev/null |
        sed -n 's/.*"leader":"replica-\\([0-9]\\)".*/\\1/p')
    if [ -n "\$n" ] && [ -f "$RUN/r\$n.pid" ]; then
        cat "$RUN/r\$n.pid"
        exit 0
    fi
done
echo "no replica answers, or none leads" >&2
exit 1
EOF
chmod +x "$RUN/leader-pid"

say "4/4 running"
l=$(leader_of 0)
snap=$(debug_leader 0 | json_field snapshot)
cat <<EOF
    leader:            $l
    snapshot version:  $snap (the same on every replica: curl -s localhost:$((ADMIN_PORT + 1))/metrics | grep snapshot_info)
    xDS (gRPC ADS):    127.0.0.1:$XDS_PORT, :$((XDS_PORT + 1)), :$((XDS_PORT + 2)) (every replica serves),
                       behind the Service 127.0.0.1:$XDS_SERVICE_PORT (whichever replica is alive)
    gRPC bootstrap:    $RUN/bootstrap.json  (the Service; Gateway default/mesh; dial xds:///greeter)

Try, in another terminal:
    export KUBECONFIG=$KUBECONFIG
    kubectl get coxswain -A; kubectl get cxvs greeter -o jsonpath='{.status}'; kubectl get cxsnap -n $NS
    kubectl get lease -n $NS coxswain -o yaml          # who holds the lock
    curl -s localhost:$ADMIN_PORT/debug/leader; curl -s localhost:$ADMIN_PORT/debug/snapshot | head -40
    curl -s -XPOST localhost:$ADMIN_PORT/v3/discovery:listeners -d '{"node":{"cluster":"default/mesh"}}'
    kill -9 \$($RUN/leader-pid)    # crash the leader: a standby takes over after the lease ($LEASE)
    kill \$($RUN/leader-pid)       # or SIGTERM it: a leader releases the lease at once
    GRPC_XDS_BOOTSTRAP=$RUN/bootstrap.json /usr/bin/python3 $RUN/call.py   # 100 RPCs through xds:///greeter
Following leadership here; Ctrl-C stops everything.
EOF
if [ $backends = 1 ]; then
    printf '    100 RPCs via xds:///greeter now: '
    GRPC_XDS_BOOTSTRAP=$RUN/bootstrap.json timeout 30 /usr/bin/python3 "$RUN/call.py" 2>/dev/null ||
        echo "(failed; see $RUN/replica-0.log)"
fi

last=$l
while true; do
    sleep 0.5
    alive=()
    for i in 0 1 2; do
        if [ -f "$RUN/r$i.pid" ] && kill -0 "$(cat "$RUN/r$i.pid")" 2>/dev/null; then
            alive+=("$i")
        elif [ -f "$RUN/r$i.pid" ]; then
            echo "$(date +%T) replica-$i exited ($(tail -1 "$RUN/replica-$i.log" | cut -c1-120))"
            rm -f "$RUN/r$i.pid"
        fi
    done
    [ ${#alive[@]} -gt 0 ] || {
        say "every replica has exited"
        exit 0
    }
    # Ask the live replicas in turn: one may die between the check above
    # and the question.
    info=""
    for i in "${alive[@]}"; do
        info=$(debug_leader "$i")
        [ -n "$info" ] && break
    done
    [ -n "$info" ] || continue
    now=$(printf '%s' "$info" | json_field leader)
    if [ "$now" != "$last" ]; then
        v=$(printf '%s' "$info" | json_field snapshot)
        echo "$(date +%T) leader: ${last:-(none)} -> ${now:-(none)}  (snapshot $v)"
        last=$now
    fi
done
