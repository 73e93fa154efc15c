"""The run commands (gw submit, runs, show, cancel, rerun, logs, wait), gw sbatch, batches of runs, a
sweep's tasks and waiting for a run to end."""
