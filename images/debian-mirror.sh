# Sourced by the image scripts: prints the Debian mirror debootstrap uses: DEBIAN_MIRROR, else
# the first non-security Debian mirror in this machine's apt sources, else deb.debian.org.
debian_mirror() {
  local mirror=${DEBIAN_MIRROR:-}
  if [ -z "$mirror" ]; then
    mirror=$(grep -rhoE '^(URIs:|deb) +https?://[^ ]+/debian/?' /etc/apt/sources.list \
               /etc/apt/sources.list.d/ 2>/dev/null | grep -v security | head -n1 | awk '{print $2}' || true)
  fi
  echo "${mirror:-http://deb.debian.org/debian}"
}
