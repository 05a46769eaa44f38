"""Table 1 / Table 2 against the paper's printed values (rule paper_table)."""
import pandas as pd

from bfio.runs.paper_tables import is_paper_setting, paper_comparison, paper_markdown
from bfio.ground.progress import script_log
from bfio.runs.tables import check_runs_complete, effective_window_note, write_table

with script_log(snakemake.log[0]) as log:  # noqa: F821
    sm = snakemake  # noqa: F821
    runs = pd.read_csv(sm.input[0])
    table = sm.wildcards.table
    check_runs_complete(runs, sm.input[0], table=table, **sm.params.expected)
    comp = paper_comparison(runs, table, sm.params.ref_seed)
    first = runs.iloc[0]
    note = (f"{first['trace']}, G={first['workers']}, B={first['slots']}, N={first['requests']:,}, "
            f"seeds {sorted(runs['seed'].unique().tolist())}")
    md = paper_markdown(comp, table, is_paper_setting(runs, table), sm.params.ref_seed, note,
                        effective_window_note(runs))
    write_table(comp, sm.output.csv, sm.output.md, markdown=md)
    log.info("%s: %d printed cells run, verdicts %s", table, int(comp["verdict"].notna().sum()),
             comp["verdict"].value_counts().to_dict())
