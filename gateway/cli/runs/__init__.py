"""gw sbatch, batches of runs, a sweep's tasks and waiting for a run to end."""
