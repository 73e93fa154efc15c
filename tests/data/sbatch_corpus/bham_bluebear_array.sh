#!/bin/bash
# source: https://docs.bear.bham.ac.uk/bluebear/array_jobs/
# adapted: qos bbshort -> normal, -A added
#SBATCH --time=5:0
#SBATCH --qos=normal
#SBATCH --array=2-5
#SBATCH -A @ACCOUNT@

set -e

module purge; module load bluebear

echo "${SLURM_JOB_ID}: Job ${SLURM_ARRAY_TASK_ID} of ${SLURM_ARRAY_TASK_MAX} in the array"
