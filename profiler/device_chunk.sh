#!/usr/bin/env bash
# One chunk of a lucid-profile campaign on a lent GPU machine; its tables and summary go to $OUT.
#
#   bash profiler/device_chunk.sh PLAN.toml MINUTES [more `lucid-profile campaign` options]
#
# The rows are measured into a folder outside the checkout ($CAMPAIGN_WORK/<gpu>, default /root/campaign),
# seeded from the plan's folder in the checkout when it holds no tables yet. Why: every call on a warm
# machine gets a fresh copy of the checkout, which lacks what the last chunk measured until it is committed
# here; the folder outside the checkout stays while the machine does. See docs/profile-campaign.md.
set -uo pipefail
plan=${1:?usage: device_chunk.sh PLAN.toml MINUTES [options]}
minutes=${2:?usage: device_chunk.sh PLAN.toml MINUTES [options]}
shift 2
out=${OUT:?OUT must name the folder whose files come back}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1

folder=$(python3 - "$plan" <<'EOF'
import sys
from pathlib import Path
import torch
from profiler.campaign import gpu_type_name
from profiler.campaign_plan import read_plan
from workloads import get_workload
name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
print(read_plan(Path(sys.argv[1]), get_workload).out.format(gpu=gpu_type_name(name)))
EOF
) || exit 2
work=${CAMPAIGN_WORK:-/root/campaign}/$(basename "$folder")
if [ ! -e "$work/metadata.json" ]; then
    mkdir -p "$work"
    for f in "$folder"/*.csv "$folder"/metadata.json; do [ -e "$f" ] && cp "$f" "$work"/; done
fi
echo "$folder" >"$out/folder.txt"

# Killed a minute past its budget at the latest, so that the copy below always runs: every row is a rename.
limit=$(python3 -c "import sys; print(int(float(sys.argv[1]) * 60 + 60))" "$minutes")
timeout -s KILL "$limit" python3 -m profiler.cli campaign "$plan" --out "$work" --minutes "$minutes" --json "$@" \
    >"$out/chunk.json" 2>"$out/chunk.log"
status=$?
for f in "$work"/*.csv "$work"/metadata.json; do [ -e "$f" ] && cp "$f" "$out"/; done
tail -n 5 "$out/chunk.log"
echo "chunk exit $status; tables of $folder (measured in $work) in \$OUT"
exit "$status"
