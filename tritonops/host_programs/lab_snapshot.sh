# What soak counts on a lab host, read inside its container in one command (tritonops/lab/faults.py,
# sh -c SOURCE snapshot ROOT DEPLOYMENT). Fixed text: the folder and deployment are positional arguments.
root="$1"; dep="$2"; folder="$root/$dep"
# the engine must answer: a docker that does not would read as 0 containers and images left behind
docker info >/dev/null 2>&1 || { echo "the host's Docker engine does not answer" >&2; exit 3; }
echo "containers=$(docker ps -aq --filter label=tritonops.deployment=$dep 2>/dev/null | wc -l)"
echo "container_names=$(docker ps -a --filter label=tritonops.deployment=$dep --format '{{.Names}}' 2>/dev/null | sort | tr '\n' ' ')"
echo "images=$(docker images -q 2>/dev/null | sort -u | wc -l)"
echo "dangling_images=$(docker images -qf dangling=true 2>/dev/null | wc -l)"
echo "releases=$(ls -1 "$folder/releases" 2>/dev/null | wc -l)"
echo "release_names=$(ls -1 "$folder/releases" 2>/dev/null | tr '\n' ' ')"
echo "partial=$(ls -1A "$folder/releases" 2>/dev/null | grep -c '^\.')"
echo "current=$(readlink "$folder/current" 2>/dev/null)"
echo "lock=$(ls -1A "$folder" 2>/dev/null | grep -c -e '^lock$' -e '^\.tritonops-lock-')"
echo "ssh_sessions=$(ps -eo args= | grep '^sshd: ' | grep -vc listener)"
echo "processes=$(ps -e --no-headers | wc -l)"
echo "python=$(ps -eo args= | grep -c '^python3 -c')"
echo "root_kib=$(du -sk "$root" 2>/dev/null | cut -f1)"
echo "docker_kib=$(du -skx /var/lib/docker 2>/dev/null | cut -f1)"
