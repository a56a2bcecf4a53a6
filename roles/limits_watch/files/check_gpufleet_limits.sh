#!/bin/sh
# gpufleet.tuning drift watch (role limits_watch): node-problem-detector custom plugin.
# NPD runs it every invoke_interval (gpufleet-limits-plugin-monitor.json) and reads the exit
# status (0 OK, 1 NonOK, anything else Unknown) and the first max_output_length bytes of its
# stdout as the condition's message (kubernetes/node-problem-detector
# docs/custom_plugin_monitor.md). It judges nothing itself: it prints what the last audit of
# gpufleet-limits-watch.service wrote to the answer file, after checking that it is fresh
# (an answer older than two watch periods, or none, is Unknown). POSIX sh, date and read
# only, so it runs inside the NPD image as on the host. docs/node-state.md.
#   check_gpufleet_limits.sh [ANSWER_FILE]
ANSWER=${1:-/var/lib/gpufleet-tuning/watch/npd-status}
OK=0
UNKNOWN=2

if [ ! -r "$ANSWER" ]; then
  echo "no gpufleet limits audit result: $ANSWER missing (is gpufleet-limits-watch.timer running on the host?)"
  exit $UNKNOWN
fi
status='' written='' expires='' message=''
while IFS='=' read -r key value; do
  case $key in
    exit) status=$value ;;
    written) written=$value ;;
    expires) expires=$value ;;
    message) message=$value ;;
  esac
done < "$ANSWER"
unreadable() {
  echo "unreadable gpufleet limits audit result in $ANSWER"
  exit $UNKNOWN
}
case $status in 0|1|2) ;; *) unreadable ;; esac
case $written in ''|*[!0-9]*) unreadable ;; esac
case $expires in ''|*[!0-9]*) unreadable ;; esac
now=$(date +%s)
if [ "$now" -gt "$expires" ]; then
  echo "gpufleet limits audit result is stale: written $((now - written)) s ago, no newer audit"
  exit $UNKNOWN
fi
echo "$message"
[ "$status" = 0 ] && exit $OK
exit "$status"
