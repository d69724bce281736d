# A lab host's lock file, `current`, its release.json and the release its container runs, read
# inside the host container (tritonops/lab/faults.py, sh -c SOURCE current ROOT DEPLOYMENT CONTAINER).
folder="$1/$2"
echo "lock=$(test -e "$folder/lock" && cat "$folder/lock")"
cur=$(readlink "$folder/current" 2>/dev/null); echo "current=$cur"
printf 'record=%s\n' "$(cat "$folder/$cur/release.json" 2>/dev/null | tr -d '\n')"  # printf: dash's echo reads escapes
echo "running=$(docker inspect --format '{{.State.Running}} {{index .Config.Labels "tritonops.release"}}' "$3" 2>/dev/null)"
