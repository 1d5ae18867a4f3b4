# shellcheck shell=bash
# Sourced by the one-command legs run on a lent machine (scripts/gpu-leg.sh, scripts/distill-leg.sh), from the
# repo root. That machine (Python 3.12, torch, transformers, peft; no network) lacks pydantic, FastAPI, uvicorn,
# datasets and the verifiers' packages: their wheels travel in .whl/ (carry [".whl"]; not committed), exact pins
# and how to fetch them in scripts/gpu-leg-wheels.txt.

# leg_log: everything from here on also goes to $OUT/log.txt (OUT defaults to $1); leg_finish STATUS ends the leg.
leg_log() {
    OUT="${OUT:-$1}"
    export OUT
    mkdir -p "$OUT"
    exec 3>&1 > >(tee -a "$OUT/log.txt") 2>&1
    leg_tee_pid=$!
}

leg_finish() {  # the log is complete before the command returns (what is under $OUT is collected then)
    exec 1>&3 2>&3
    wait "$leg_tee_pid"
    exit "$1"
}

# install_carried_wheels: .whl/*.whl into LEG_SITE (default /tmp/site), put first on PYTHONPATH with the repo;
# status 2 on failure.
install_carried_wheels() {
    local wheels
    shopt -s nullglob
    wheels=(.whl/*.whl)
    shopt -u nullglob
    if [ ${#wheels[@]} -eq 0 ]; then
        echo "no wheels in .whl/: fetch them as scripts/gpu-leg-wheels.txt says and carry .whl" >&2
        return 2
    fi
    local site="${LEG_SITE:-/tmp/site}"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
        "${wheels[@]}" || { echo "installing the carried wheels failed" >&2; return 2; }
    export PYTHONPATH="$site:$PWD" PYTHONUNBUFFERED=1
}
