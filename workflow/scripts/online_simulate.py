"""One online setting (rule online_simulate): the saturation throughput from
backlog runs, then every load (or time scale) x row x seed."""
from bfio.experiments import read_trace_table
from bfio.progress import script_log
from bfio.results_io import write_json
from bfio.studies.online import measure_saturation, run_online
from bfio.studies.report import setting_slots

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    setting, study = dict(sm.params.setting), dict(sm.params.study)
    slots = setting_slots(setting, {"slots": sm.params.slots})
    frame = read_trace_table(sm.input.trace)
    sat = measure_saturation(frame, dict(sm.params.saturation_setting), list(sm.params.seeds), slots,
                             sm.params.saturation_row, variants=study["variants"], bfio_defaults=dict(sm.params.bfio),
                             log=log)
    write_json({"setting": sm.wildcards.setting, **sat}, sm.output.saturation)
    log.info("saturation %.4g requests/s (%.4g tokens/s)", sat["saturation_rps"], sat["saturation_tokens_per_s"])
    runs = run_online(sm.wildcards.setting, setting, sm.params.kind, sat["saturation_rps"], study,
                      list(sm.params.seeds), slots, frame, bfio_defaults=dict(sm.params.bfio), log=log)
    runs.to_csv(sm.output.runs, index=False)
    log.info("%d runs, %.1f s of simulation", len(runs), runs["sim_wall_s"].sum())
