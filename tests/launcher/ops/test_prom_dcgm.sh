#!/usr/bin/env bash
# The monitor's Prometheus textfile read as dcgm-exporter's: two ranks under gpulaunch sample the
# stand-in NVML (tests/fake_nvml, two GPUs with GPM), and a real exposition parser
# (prometheus_client) finds dcgm-exporter's metric names, types, units and labels (gpu, UUID,
# pci_bus_id, device, modelName, Hostname) plus rank and job, every series the queries of
# dcgm-exporter's Grafana dashboard select, and none of the old gpulaunch_gpu_* names.
#   test_prom_dcgm.sh FAKE_NVML_LIB
source "$(dirname "$0")/../../lib.sh"
FAKE="${1:?usage: test_prom_dcgm.sh FAKE_NVML_LIB}"

PY=""
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import prometheus_client.parser' 2>/dev/null; then
    PY=$(command -v "$p")
    break
  fi
done
if [[ -z $PY ]]; then
  echo "SKIP: no Python with prometheus_client (scripts/install-deps.sh installs python3-prometheus-client)"
  exit 77
fi

export GPULAUNCH_NVML_LIB="$FAKE" FAKE_NVML_GPM=1
export FAKE_NVML_GPUS="00000000:3B:00.0|NVIDIA H100 80GB HBM3|GPU-aaaa-0000;00000000:BC:00.0|NVIDIA H100 80GB HBM3|GPU-bbbb-0001"
cat >"$T/p.conf" <<CONF
[job]
command = sleep 1.5
[monitor]
interval = 100ms
prom = $T/gpu-%r.prom
CONF
run_mpi 2 "$GPULAUNCH" "$T/p.conf"
assert_eq "$RC" 0 "exit status"
[[ -s $T/gpu-0.prom && -s $T/gpu-1.prom ]] || fail "a textfile per rank"

"$PY" - "$T/gpu-0.prom" "$T/gpu-1.prom" <<'PY' || fail "the textfiles as dcgm-exporter's"
import re, sys
from prometheus_client.parser import text_string_to_metric_families

# dcgm-exporter's names and types (etc/default-counters.csv, dcp-metrics-included.csv) that the
# monitor can fill from NVML; the DCP measures are ratios.
DCGM = {
    "DCGM_FI_DEV_SM_CLOCK": "gauge", "DCGM_FI_DEV_MEM_CLOCK": "gauge",
    "DCGM_FI_DEV_GPU_TEMP": "gauge", "DCGM_FI_DEV_POWER_USAGE": "gauge",
    "DCGM_FI_DEV_GPU_UTIL": "gauge", "DCGM_FI_DEV_MEM_COPY_UTIL": "gauge",
    "DCGM_FI_DEV_XID_ERRORS": "gauge", "DCGM_FI_DEV_FB_FREE": "gauge",
    "DCGM_FI_DEV_FB_USED": "gauge", "DCGM_FI_DEV_FB_TOTAL": "gauge",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "counter", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "counter",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": "gauge", "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gauge",
    "DCGM_FI_PROF_SM_ACTIVE": "gauge", "DCGM_FI_PROF_SM_OCCUPANCY": "gauge",
}
OWN = {"gpulaunch_gpu_clock_slowdown", "gpulaunch_gpu_xid_events",
       "gpulaunch_gpu_busy_mean_percent", "gpulaunch_gpu_sm_active_mean_percent",
       "gpulaunch_gpu_under_threshold_seconds", "gpulaunch_gpu_under_threshold_alarm",
       "gpulaunch_gpu_memory_headroom_alarm",
       "gpulaunch_gpu_threshold_percent", "gpulaunch_gpu_last_sample_timestamp_seconds"}
LABELS = ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "rank", "job"]
GPUS = {"GPU-aaaa-0000": ("0", "00000000:3B:00.0"), "GPU-bbbb-0001": ("1", "00000000:BC:00.0")}

series = []  # (name, labels, value) over both files
jobs, ranks, uuids = set(), set(), set()
for path in sys.argv[1:]:
    text = open(path).read()
    # dcgm-exporter's label order, first on every sample line
    for line in text.splitlines():
        if not line.startswith("#"):
            keys = re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', line.split("}")[0])
            assert keys == LABELS, (path, keys)
    v = {}
    for fam in text_string_to_metric_families(text):
        if fam.name in DCGM:
            assert fam.type == DCGM[fam.name], (fam.name, fam.type)
        else:
            assert fam.name in OWN, "not dcgm-exporter's nor gpulaunch's own: " + fam.name
        for s in fam.samples:
            l = s.labels
            assert sorted(l) == sorted(LABELS), (s.name, l)
            assert l["UUID"] in GPUS, l
            assert (l["gpu"], l["pci_bus_id"]) == GPUS[l["UUID"]], l
            assert l["device"] == "nvidia" + l["gpu"], l
            assert l["modelName"] == "NVIDIA H100 80GB HBM3", l
            assert l["Hostname"], l
            jobs.add(l["job"]); ranks.add(l["rank"]); uuids.add(l["UUID"])
            # by family: the client names a counter's sample NAME_total (Prometheus does not)
            v[fam.name] = s.value
            series.append((fam.name, l, s.value))
    # values in dcgm-exporter's units, from the fake's readings (tests/fake_nvml/fake_nvml.c)
    assert v["DCGM_FI_DEV_FB_USED"] == 12 * 1024 and v["DCGM_FI_DEV_FB_FREE"] == 68 * 1024, v
    assert v["DCGM_FI_DEV_FB_TOTAL"] == 80 * 1024
    assert abs(v["DCGM_FI_DEV_POWER_USAGE"] - 345.678) < 1e-6
    assert v["DCGM_FI_DEV_SM_CLOCK"] == 1755 and v["DCGM_FI_DEV_MEM_CLOCK"] == 2619
    assert v["DCGM_FI_DEV_GPU_TEMP"] == 61 and v["DCGM_FI_DEV_MEM_COPY_UTIL"] == 33
    assert v["DCGM_FI_DEV_GPU_UTIL"] in (91, 12, 77)
    assert abs(v["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] - v["DCGM_FI_DEV_GPU_UTIL"] / 100) < 1e-9
    assert v["DCGM_FI_PROF_SM_ACTIVE"] in (0.35, 0.20, 0.45), v["DCGM_FI_PROF_SM_ACTIVE"]
    assert abs(v["DCGM_FI_PROF_SM_OCCUPANCY"] - (v["DCGM_FI_PROF_SM_ACTIVE"] - 0.1)) < 1e-9
    assert v["DCGM_FI_DEV_XID_ERRORS"] == 79
    assert v["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"] == 5
    assert v["DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"] == 3 and v["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"] == 0
    assert not any(n.startswith("gpulaunch_gpu_busy_percent") for n in v)

assert ranks == {"0", "1"} and uuids == set(GPUS), (ranks, uuids)
assert len(jobs) == 1 and "" not in jobs, jobs  # one job id, the same on every rank

# The dashboard (grafana/dcgm-exporter-dashboard.json): its variables are
# label_values(DCGM_FI_DEV_FB_FREE, Hostname) and label_values(DCGM_FI_DEV_FB_FREE{Hostname=~..}, gpu);
# its panels select these names by Hostname and gpu and group by Hostname, gpu, UUID.
hosts = {l["Hostname"] for n, l, _ in series if n == "DCGM_FI_DEV_FB_FREE"}
assert hosts, "label_values(DCGM_FI_DEV_FB_FREE, Hostname) is empty"
for h in hosts:
    gpus = {l["gpu"] for n, l, _ in series if n == "DCGM_FI_DEV_FB_FREE" and l["Hostname"] == h}
    assert gpus == {"0", "1"}, gpus
    for panel in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK",
                  "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_FB_USED"):
        got = {l["gpu"] for n, l, _ in series if n == panel and l["Hostname"] == h}
        assert got == gpus, (panel, got)
print("parsed", len(series), "samples")
PY
pass "two ranks' textfiles parse as dcgm-exporter's: names, types, units, labels, one job id; the dashboard's queries find every GPU"

# A replayed recording names no GPU: the same names, with the monitor's index as gpu and the
# GPU's identity left empty; the parser still reads it.
cat >"$T/r.jsonl" <<'REC'
{"t": 0, "busy": 40, "sm_active": 25, "sm_occupancy": 10, "mem_used": 2147483648, "mem_total": 8589934592}
{"t": 1, "busy": 50}
REC
cat >"$T/r.conf" <<CONF
[job]
command = sleep 0.5
[monitor]
replay = $T/r.jsonl
interval = 100ms
prom = $T/rep.prom
CONF
run_one "$GPULAUNCH" "$T/r.conf"
assert_eq "$RC" 0 "replay: exit status"
"$PY" - "$T/rep-rank0.prom" <<'PY' || fail "the replay's textfile"
import sys
from prometheus_client.parser import text_string_to_metric_families
v = {}
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in fam.samples:
        assert s.labels["UUID"] == "" and s.labels["device"] == "nvidia" + s.labels["gpu"], s
        assert s.labels["rank"] == "0", s
        v[fam.name] = s.value
assert v["DCGM_FI_DEV_GPU_UTIL"] == 50 and v["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] == 0.5, v
assert "DCGM_FI_PROF_SM_ACTIVE" not in v  # the last sample has none
assert v["gpulaunch_gpu_sm_active_mean_percent"] == 25, v
PY
pass "a replayed recording: the same names, no GPU identity, parsed"
echo "# $TESTS_RUN passed"
