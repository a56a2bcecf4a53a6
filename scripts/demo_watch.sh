#!/usr/bin/env bash
# make demo-watch: the drift watch with the real parts, on the `watch` Molecule scenario's node
# (make demo-watch converges it first): node_exporter's textfile collector and a Prometheus
# server on the node, the watch's timer every 20 s. Shows the firing alerts after tuning (none),
# after a limits.d edit behind the tool's back (GpufleetLimitsBelowProfile naming host, context
# and item), and after re-tuning (none). Reads Prometheus' HTTP API on the node's loopback.
set -euo pipefail
node=gpufleet-watch${GPUFLEET_NODE_SUFFIX:-}
root=$(cd "$(dirname "$0")/.." && pwd)

firing() {
  docker exec "$node" python3 -c '
import json, urllib.request
data = json.loads(urllib.request.urlopen("http://127.0.0.1:9090/api/v1/alerts", timeout=5).read())
for a in data["data"]["alerts"]:
    if a["state"] == "firing":
        l = a["labels"]
        print("  FIRING %s instance=%s context=%s item=%s" % (
            l["alertname"], l["instance"], l.get("context", "-"), l.get("item", "-")))'
}

wait_until() {   # wait_until fired|clear SECONDS
  local want=$1 limit=$2 start=$SECONDS out
  while (( SECONDS - start < limit )); do
    out=$(firing)
    if [[ $want == fired && -n $out ]] || [[ $want == clear && -z $out ]]; then
      echo "${out:-  (no alert)}"; echo "  after $(( SECONDS - start )) s"; return 0
    fi
    sleep 2
  done
  echo "  not $want within $limit s:"; echo "${out:-  (no alert)}"; return 1
}

echo "=== after tuning: firing alerts"
out=$(firing); echo "${out:-  (no alert)}"
echo "=== drift: nofile lowered in /etc/security/limits.d/90-gpufleet-tuning.conf behind the tool's back"
docker exec "$node" sed -i 's/16384/4096/g' /etc/security/limits.d/90-gpufleet-tuning.conf
wait_until fired 90
echo "=== the node's journal"
docker exec "$node" journalctl -q -t gpufleet-limits-watch -n 2 -o cat
echo "=== re-tune (the scenario's converge.yml)"
(cd "$root" && molecule converge -s watch >/dev/null)
wait_until clear 90
