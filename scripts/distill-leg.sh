#!/usr/bin/env bash
# Issue 28 section 3 on a lent machine with 16 idle CPU cores (the toy model needs no GPU), one command from the
# repo root (ends within DISTILL_LEG_DEADLINE_S, 540 s, preparation included):
#   bash scripts/distill-leg.sh
# It installs the carried wheels (scripts/leg-common.sh), then with benchmarks/trainer_distillation.py
#  1. prepares the shared start (200 supervised warm-start steps) and the teacher (400 more), with
#     DISTILL_LEG_PREP_THREADS torch threads;
#  2. runs both arms side by side (`--only rl` and `--only distill`, same --work, DISTILL_LEG_THREADS torch threads
#     each: the engine's, the learner's and the in-process teacher's threads each use that many, so RL's 2 x 3 and
#     distillation's 3 x 3 fit the 16 cores), each stopped at held-out sampled accuracy 0.8 or when the time left
#     runs out;
#  3. writes $OUT/distillation.md (the benchmark's tables) and $OUT/distillation.json (both curves), with each
#     arm's metrics.jsonl and stdout.log under $OUT/rl/ and $OUT/distill/, and everything it printed in $OUT/log.txt.
#
# Environment: OUT (default /tmp/distill-leg-out), DISTILL_LEG_DEADLINE_S (540), DISTILL_LEG_THREADS (3),
# DISTILL_LEG_PREP_THREADS (4), DISTILL_LEG_WARM_STEPS (200), DISTILL_LEG_TEACHER_STEPS (400),
# DISTILL_LEG_EVAL_PROMPTS (400), DISTILL_LEG_ARGS (more benchmark flags, both arms). Shrink the steps and the
# deadline to try it anywhere: DISTILL_LEG_WARM_STEPS=20 DISTILL_LEG_TEACHER_STEPS=20 DISTILL_LEG_DEADLINE_S=150.
set -uo pipefail

# shellcheck source=scripts/leg-common.sh
source "$(dirname "$0")/leg-common.sh"
leg_log /tmp/distill-leg-out
deadline=${DISTILL_LEG_DEADLINE_S:-540}
install_carried_wheels || leg_finish 2

work=/tmp/distill-leg-work
rm -rf "$work"
# shellcheck disable=SC2206  # DISTILL_LEG_ARGS is a list of flags
common=(benchmarks/trainer_distillation.py --work "$work" --warm-steps "${DISTILL_LEG_WARM_STEPS:-200}"
        --teacher-steps "${DISTILL_LEG_TEACHER_STEPS:-400}" --eval-prompts "${DISTILL_LEG_EVAL_PROMPTS:-400}"
        ${DISTILL_LEG_ARGS:-})
reserve=40  # the arms' last evaluation and shutdown, then the report (7 s over with 25 at load 9 on 2 cores)

echo "== preparation: warm start and teacher ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
timeout -k 5 $((deadline - reserve - SECONDS - 60)) python3 "${common[@]}" --only prepare \
    --torch-threads "${DISTILL_LEG_PREP_THREADS:-4}"
rc=$?
if [ $rc -ne 0 ]; then
    echo "preparation failed or ran past its share of the ${deadline} s (exit status $rc)"
    leg_finish 1
fi

arm_limit=$((deadline - reserve - SECONDS))
echo "== both arms side by side, ${arm_limit} s each at most (${SECONDS} s spent)"
pids=()
for arm in rl distill; do
    # --budget-min is left far away: the wall-clock limit (start-up and evaluations included) ends a run that
    # has not reached the target
    python3 "${common[@]}" --only "$arm" --torch-threads "${DISTILL_LEG_THREADS:-3}" --budget-min 60 \
        --wall-limit-s "$arm_limit" > "$OUT/$arm.txt" 2>&1 &
    pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do
    wait "$pid" || rc=1
done
for arm in rl distill; do
    mkdir -p "$OUT/$arm"
    cp "$work/distillation_$arm/metrics.jsonl" "$work/distillation_$arm/stdout.log" "$OUT/$arm/" 2>/dev/null
    echo "-- $arm:"; tail -n 3 "$OUT/$arm.txt"
done

python3 "${common[@]}" --only report --curves-json "$OUT/distillation.json" | tee "$OUT/distillation.md"
[ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
echo "distill-leg: ${SECONDS} s in all, exit status $rc"
leg_finish $rc
