#!/bin/sh
# Install the client lenses with COMMAND..., its output and how it ended in LOG: `make run`
# starts this in the background, and the clients page reads LOG
# (webapp/web/backend/jobs/lensinstall.py reads the first and last lines written here).
# Usage: scripts/install-lenses.sh LOG COMMAND...
log="$1"
shift
mkdir -p "$(dirname "$log")"
{
  echo "streamviz: installing the client lenses (pid $$) at $(date -u +%Y-%m-%dT%H:%M:%SZ): $*"
  started=$(date +%s)
  if "$@"; then
    echo "streamviz: the client lenses are installed ($(( $(date +%s) - started )) s)"
  else
    status=$?
    echo "streamviz: installing the client lenses failed (exit $status): run \`make clients\` to see why"
  fi
} > "$log" 2>&1
