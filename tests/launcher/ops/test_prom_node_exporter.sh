#!/usr/bin/env bash
# The monitor's Prometheus textfile read by a real node_exporter (Debian's
# prometheus-node-exporter), as on a GPU host: node_exporter runs as its own user on its textfile
# folder (owned by that user, group-writable and setgid for its group), the job runs as another
# user who is in that group, and a scrape of node_exporter's /metrics over HTTP finds gpulaunch's
# DCGM-named series with their labels, from a replayed recording. A link that the folder's owner
# planted under the file's name is replaced, never written through; a textfile of mode 0600
# ([monitor] prom_mode) is one node_exporter cannot read, which it reports.
#   test_prom_node_exporter.sh   (GPULAUNCH from CTest)
source "$(dirname "$0")/../../lib.sh"
NE=$(command -v prometheus-node-exporter || command -v node_exporter || true)
if [[ $(id -u) -ne 0 || -z $NE ]] || ! command -v curl >/dev/null || ! command -v useradd >/dev/null ||
   ! command -v runuser >/dev/null || ! command -v setpriv >/dev/null; then
  echo "SKIP: needs root, node_exporter (prometheus-node-exporter), curl, useradd, runuser and setpriv"
  exit 77
fi

# node_exporter's user: the package's (prometheus) where it exists, else one made here.
made=()
cleanup() {
  set +e # everything is undone, whatever fails on the way
  if [[ -n ${NE_PID:-} ]]; then
    kill "$NE_PID" 2>/dev/null
    wait "$NE_PID" 2>/dev/null
  fi
  local u
  for u in "${made[@]}"; do userdel "$u" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
exp_user=prometheus
if ! id "$exp_user" >/dev/null 2>&1; then
  exp_user="gplnex$$"
  useradd --system --no-create-home --user-group --shell /usr/sbin/nologin "$exp_user" || fail "useradd $exp_user"
  made+=("$exp_user")
fi
exp_group=$(id -gn "$exp_user")
job_user="gpljob$$"
useradd --system --no-create-home --shell /usr/sbin/nologin -G "$exp_group" "$job_user" || fail "useradd $job_user"
made+=("$job_user")

chmod 0711 "$T" # both users pass through to the folders, neither lists ours
dir="$T/textfile"
mkdir "$dir"
chown "$exp_user:$exp_group" "$dir"
chmod 2775 "$dir" # node_exporter's, group-writable, new files in its group
mkdir -m 0700 "$T/home" && chown "$job_user" "$T/home"
printf 'victim\n' >"$T/victim" && chmod 0644 "$T/victim"
victim_sum=$(sha256sum <"$T/victim")
cat >"$T/r.jsonl" <<'REC'
{"t": 0, "busy": 40, "sm_active": 25, "sm_occupancy": 10, "mem_used": 2147483648, "mem_total": 8589934592, "power_w": 301.5, "temp_c": 55}
{"t": 1, "busy": 50, "sm_active": 30, "sm_occupancy": 12, "mem_used": 3221225472, "mem_total": 8589934592, "power_w": 310.25, "temp_c": 56}
REC
conf() { # conf NAME PROM_MODE
  cat >"$T/$1.conf" <<CONF
[job]
command = /bin/sleep 0.5
[monitor]
replay = $T/r.jsonl
interval = 100ms
prom = $dir/$1.prom
prom_mode = $2
CONF
}
conf gpu 0644
conf private 0600
chmod 0644 "$T"/*.conf "$T/r.jsonl"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# setpriv execs node_exporter itself: NE_PID is its pid, stopped at the end
setpriv --reuid="$exp_user" --regid="$exp_group" --init-groups "$NE" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
  --collector.textfile --collector.textfile.directory="$dir" >"$T/ne.log" 2>&1 &
NE_PID=$!
url="http://127.0.0.1:$port/metrics"
for _ in $(seq 100); do curl -sf -o /dev/null "$url" && break; sleep 0.1; done
curl -sf -o /dev/null "$url" || { cat "$T/ne.log" >&2; fail "node_exporter did not answer on $url"; }

# The folder's owner plants a link to a file of root's under the name the job writes.
runuser -u "$exp_user" -- ln -s "$T/victim" "$dir/gpu-rank0.prom"
as_job() { runuser -u "$job_user" -- env HOME="$T/home" "$@"; }
run_one as_job "$GPULAUNCH" "$T/gpu.conf"
assert_eq "$RC" 0 "the job as $job_user, in group $exp_group"
[[ $(sha256sum <"$T/victim") == "$victim_sum" ]] || fail "the victim was written through the planted link"
f="$dir/gpu-rank0.prom"
[[ -f $f && ! -L $f ]] || fail "the link was replaced by the textfile"
assert_eq "$(stat -c '%a %U' "$f")" "644 $job_user" "the textfile's mode and owner"
[[ -z $(find "$dir" -name 'gpu-rank0.prom.*') ]] || fail "a temporary file was left"
pass "the job's user writes into node_exporter's group-writable folder, mode 0644, through no planted link"

# A user who is not in the folder's group: refused before the job starts, the setting named.
out_user="gplout$$"
useradd --system --no-create-home --shell /usr/sbin/nologin "$out_user" || fail "useradd $out_user"
made+=("$out_user")
run_one runuser -u "$out_user" -- env HOME="$T/home" "$GPULAUNCH" "$T/gpu.conf"
assert_eq "$RC" 64 "a user outside the folder's group"
assert_grep "$T/err" "$T/gpu.conf:[0-9]+ .*\(prom\): cannot write there: the folder $dir belongs to another user \(uid [0-9]+\) and is not writable through a group of yours \(group $exp_group" \
  "the refusal names the setting and the group"
pass "a user outside node_exporter's group is refused at start, naming [monitor] prom"

# A sticky folder (3775): the owner's link under the name stays where it is, and the job says so.
chmod 3775 "$dir"
runuser -u "$exp_user" -- ln -s "$T/victim" "$dir/sticky-rank0.prom"
conf sticky 0644
chmod 0644 "$T/sticky.conf"
run_one as_job "$GPULAUNCH" "$T/sticky.conf"
assert_eq "$RC" 0 "the job runs on without its textfile"
[[ $(sha256sum <"$T/victim") == "$victim_sum" ]] || fail "sticky folder: the victim was written through the link"
[[ -L $dir/sticky-rank0.prom ]] || fail "sticky folder: the other user's link was replaced"
assert_grep "$T/err" "monitor: writing the Prometheus textfile failed: $dir/sticky-rank0.prom: a symbolic link of another user \(uid [0-9]+\) is there, in a folder whose sticky bit keeps it" \
  "sticky folder: why the textfile is not written"
[[ -z $(find "$dir" -name 'sticky-rank0.prom.*') ]] || fail "sticky folder: a temporary file was left"
rm -f "$dir/sticky-rank0.prom"
chmod 2775 "$dir"
pass "a sticky folder keeps the owner's planted link: not followed, not replaced, said once"

run_one as_job "$GPULAUNCH" "$T/private.conf"
assert_eq "$RC" 0 "the 0600 job"
assert_eq "$(stat -c '%a' "$dir/private-rank0.prom")" 600 "prom_mode = 0600"

curl -sf "$url" >"$T/scrape" || fail "scrape $url"
host=$(hostname)
# node_exporter prints the labels sorted by name: dcgm-exporter's, then rank and job
L="Hostname=\"[^\"]+\",UUID=\"\",device=\"nvidia0\",gpu=\"0\",job=\"[^\"]*\",modelName=\"\",pci_bus_id=\"\",rank=\"0\""
assert_grep "$T/scrape" "^DCGM_FI_DEV_GPU_UTIL\{$L\} 50$" "GPU busy of the last sample"
assert_grep "$T/scrape" "^DCGM_FI_PROF_GR_ENGINE_ACTIVE\{$L\} 0.5$" "graphics engine activity"
assert_grep "$T/scrape" "^DCGM_FI_PROF_SM_ACTIVE\{$L\} 0.3$" "SM activity"
assert_grep "$T/scrape" "^DCGM_FI_DEV_FB_USED\{$L\} 3072$" "memory used, MiB"
assert_grep "$T/scrape" "^DCGM_FI_DEV_FB_FREE\{$L\} 5120$" "memory free, MiB"
assert_grep "$T/scrape" "^DCGM_FI_DEV_POWER_USAGE\{$L\} 310.25$" "power"
assert_grep "$T/scrape" "^# TYPE DCGM_FI_DEV_FB_USED gauge$" "the type"
assert_grep "$T/scrape" "^gpulaunch_gpu_sm_active_mean_percent\{$L\} 27.5$" "gpulaunch's own series"
grep -E "^DCGM_FI_DEV_GPU_UTIL\{" "$T/scrape" | grep -qF "Hostname=\"$host\"" || fail "Hostname is this host ($host)"
assert_grep "$T/scrape" "^node_textfile_mtime_seconds\{file=\"($dir/)?gpu-rank0.prom\"\} " "node_exporter read the file"
# the 0600 file is one node_exporter cannot open: it says so, and none of its series is served
assert_grep "$T/scrape" "^node_textfile_scrape_error 1$" "the 0600 textfile is unreadable to node_exporter"
assert_grep "$T/ne.log" "private-rank0.prom.*permission denied" "node_exporter names the 0600 file"
rm -f "$dir/private-rank0.prom"
curl -sf "$url" >"$T/scrape2" || fail "scrape again"
assert_grep "$T/scrape2" "^node_textfile_scrape_error 0$" "the 0644 textfile alone: no scrape error"
pass "node_exporter scraped over HTTP serves gpulaunch's DCGM series with their labels; a 0600 file it cannot read"

kill "$NE_PID"
wait "$NE_PID" 2>/dev/null || true
NE_PID=""
echo "# $TESTS_RUN passed"
