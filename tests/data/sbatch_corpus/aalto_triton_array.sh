#!/bin/bash
# source: https://scicomp.aalto.fi/triton/tut/array/
# adapted: -A added
#SBATCH --array=0-4
#SBATCH -A @ACCOUNT@
echo "task $SLURM_ARRAY_TASK_ID"
