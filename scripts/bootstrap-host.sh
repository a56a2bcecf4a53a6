#!/usr/bin/env bash
# Make a fresh Debian/Ubuntu machine ready for `make test` and `make demo`. What it changes on
# the host (README.md, "Try it", says the same): the apt packages the tests need that are
# missing (the Docker engine, iptables, debootstrap, make, git, python3-venv, a Java runtime,
# qemu-system-x86 and qemu-utils for the VM lane),
# promtool in /usr/local/bin, the inotify sysctls raised until the next boot (each change
# printed with the old value), and dockerd started when none runs.
# Run as root. Python tools are installed by `make` itself, into .venv.
set -euo pipefail

need=()
for pair in dockerd:docker.io debootstrap:debootstrap iptables:iptables make:make git:git qemu-system-x86_64:qemu-system-x86 qemu-img:qemu-utils; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${pair%%:*}" ] || need+=("${pair#*:}")
done
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends $(printf '%s\n' "${need[@]}" | sort -u)
fi

# promtool (make rules: the drift watch's alert rules) from Debian's prometheus package, without
# installing the package itself (that would start a Prometheus server on this machine).
if ! command -v promtool >/dev/null 2>&1; then
  echo "installing promtool from the prometheus package"
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download prometheus >/dev/null 2>&1) \
    || { apt-get update -q && (cd "$tmp" && apt-get download prometheus); }
  dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/root"
  install -m 0755 "$tmp/root/usr/bin/promtool" /usr/local/bin/promtool
  rm -rf "$tmp"
fi

# A Java 17+ runtime for ansible-rulebook (Drools; the watch scenario's alert -> re-tune test,
# build/eda-venv from `make eda`): openjdk-17 (Debian 12, Ubuntu), else openjdk-21 (Debian 13).
if ! java -version 2>&1 | grep -qE 'version "(1[7-9]|[2-9][0-9])'; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  jre=openjdk-17-jre-headless
  apt-cache show "$jre" >/dev/null 2>&1 || jre=openjdk-21-jre-headless
  echo "installing $jre"
  apt-get install -y -q --no-install-recommends "$jre"
fi

# Every node container runs systemd, journald, logind and a dockerd, each with inotify
# instances of its own: the kernel's default of 128 per user stops the 18th or so node at boot
# (systemd exits 255). The benchmark runs 32.
for pair in fs.inotify.max_user_instances:8192 fs.inotify.max_user_watches:524288; do
  key=${pair%%:*} want=${pair#*:}
  have=$(sysctl -n "$key" 2>/dev/null || echo 0)
  if [ "$have" -lt "$want" ]; then
    if sysctl -qw "$key=$want"; then
      echo "raised $key from $have to $want (until the next boot; sysctl -w $key=$have restores it)"
    else
      echo "warning: cannot raise $key ($have); labs above ~16 nodes may not boot" >&2
    fi
  fi
done

if ! docker info >/dev/null 2>&1; then
  if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
    systemctl start docker || true
  fi
fi
if ! docker info >/dev/null 2>&1; then
  echo "starting dockerd"
  # its own session: a job control kill of the caller's process group must not take it along
  setsid nohup dockerd >/var/log/gpufleet-dockerd.log 2>&1 </dev/null &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
fi
docker info >/dev/null 2>&1 || { tail -n 50 /var/log/gpufleet-dockerd.log >&2; exit 1; }
echo "host ready: $(docker version --format 'docker {{.Server.Version}}')"
