#!/bin/bash
# source: https://hpc.hku.hk/guide/slurm-guide/slurm-job-array/ (throttled array)
# adapted: -A added
#SBATCH -a 1-50%10
#SBATCH -A @ACCOUNT@
echo $SLURM_ARRAY_TASK_ID
